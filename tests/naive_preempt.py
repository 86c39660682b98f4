"""The twin of the node engine's preemption decision (fastsched.engine.preempt),
written plainly: which queued job preempts, and which running jobs it stops. The
event loop of tests/naive_nodes.py takes it after the passes of each instant."""


def naive_preempt(preempt, now, queue, nodes, running, parts_of, held, waits, last,
                  restarts, order, wakes, result, least=None, blocked=()):
    """THE DEFINITION of a preemption decision, taken after the passes of an instant.

    ``preempt``: functions of (job id, partition) for a job running in a partition:
    ``may(preemptor id, its partition, victim id, victim's partition)``, ``mode``
    ("OFF", "CANCEL", "REQUEUE"), ``grace`` and ``exempt`` (seconds), ``level`` (its
    class's priority tier). A victim stops ``grace`` seconds later (requeued in mode
    REQUEUE when its job allows, else it ends PREEMPTED); the loop also visits each
    time a running job stops being exempt for a job looked at here (``wakes``).

    ``held(job)``: a limit holds the job now (after the instant's passes and their
    starts). The first queued job (queue order) that may preempt now: not held by a limit,
    not waiting for victims of its own still running (``waits``), not preempted at
    this instant already (``last``). N is its node count, or for a node range its
    fewest nodes (``least(job)``: cons_tres' ``_run_now`` stops once ``min_nodes``
    fit); it takes at most its node count. For each of its partitions p in order: if N
    of p's available nodes fit its request with the resources free now, it does not
    preempt. Else the candidates are the jobs running on p's available nodes that
    are not stopping, that it may preempt, whose mode is not OFF and that ran at
    least their exempt time since their start (Slurm's: :func:`slurm_start`), sorted by
    (level * 65536 + min(their nodes, 65535), later start first, later in submit order first; "their nodes" are those they hold
    now: a --no-kill job a failure shrank counts its remaining ones). Adding each
    candidate's
    request back to the nodes of p it runs on, in that order, node x becomes
    usable at the first k after which it fits the request (-1 if it fit already);
    at the first k where N nodes are usable, the first (up to its node count) usable
    nodes by (k, index) are its nodes and its victims are the candidates up to k that
    run on one of them (each stopped whole, on all the nodes it holds). A node held by
    a ``blocked`` window (start, end, node) that meets [now, now + its limit) is not
    one of p's nodes for it.
    Returns (job id, victims as running entries in submit order) or None.
    """
    for j in list(waits):
        waits[j] = {(v, a) for v, a in waits[j] if restarts.get(v, 0) == a
                    and any(r[0].job_id == v and r[1] + r[0].duration() > now for r in running)}
        if not waits[j]:
            del waits[j]
    stopping = {v for vs in waits.values() for v, _ in vs}
    for job in queue:
        i = job.job_id
        if i in waits or last.get(i) == now or held(job):
            continue
        need = job.nodes if least is None else least(job)
        for p in parts_of(job):
            pn = [x for x, node in enumerate(nodes) if node.available and p in node.partitions
                  and not any(n == x and s < now + job.limit and e > now
                              for s, e, n in blocked)]
            free = {}
            for x in pn:
                g, c, m = nodes[x].gpus, nodes[x].cpus, nodes[x].mem
                for r in running:
                    if x in r[2]:
                        g, c, m = g - r[0].gpus, c - r[0].cpus, m - r[0].mem
                free[x] = [g, c, m]

            def fits(x):
                return free[x][0] >= job.gpus and free[x][1] >= job.cpus and \
                    free[x][2] >= job.mem
            usable = {x: -1 for x in pn if fits(x)}
            if len(usable) >= need:
                break                    # it fits without preempting: no preemption
            cand = []
            for r in running:
                v = r[0].job_id
                if not set(r[2]) & set(pn) or v in stopping:
                    continue
                vp = result[v][4]
                if not preempt["may"](i, p, v, vp) or preempt["mode"](v, vp) == "OFF":
                    continue
                until = slurm_start(r, now) + preempt["exempt"](v, vp)
                if until > now:
                    wakes.add(until)
                else:
                    cand.append(r)
            cand.sort(key=lambda r: (preempt["level"](r[0].job_id, result[r[0].job_id][4])
                                     * 65536 + min(r[0].nodes, 65535), -slurm_start(r, now),
                                     -order[r[0].job_id]))
            for k, r in enumerate(cand):
                for x in r[2]:
                    if x in free:
                        free[x] = [free[x][0] + r[0].gpus, free[x][1] + r[0].cpus,
                                   free[x][2] + r[0].mem]
                        if x not in usable and fits(x):
                            usable[x] = k
                if len(usable) >= need:
                    chosen = sorted(usable, key=lambda x: (usable[x], x))[:job.nodes]
                    victims = [r for r in cand[:k + 1] if set(r[2]) & set(chosen)]
                    last[i] = now
                    return i, sorted(victims, key=lambda r: order[r[0].job_id])
    return None


def slurm_start(r, now):
    """Slurm's start time of running entry ``r`` (job, allocation, nodes, GPUs) at
    ``now``: its allocation's while CONFIGURING (power saving: until its boot wait is
    over), then when its nodes were ready (the reset start)."""
    job, alloc = r[0], r[1]
    return alloc if now < alloc + job.boot else alloc + job.boot


def ready_first(now, r, grace):
    """THE RULE for a victim (running entry ``r``) preempted at ``now`` with ``grace``
    seconds of GraceTime while CONFIGURING (power saving: before its boot wait is over):
    when its nodes are ready before its grace ends, its ready time (else None). Then
    Slurm's job_config_fini resets its end time to ready + limit, undoing the grace
    end: it is held until its grace end before its ready time, until its own end from
    then on, and is never stopped (it ends on its own; its preemptor waits for it).
    Otherwise it stops at its grace end, while CONFIGURING (it never ran) or not."""
    ready = r[1] + r[0].boot
    return ready if now < ready < now + grace else None

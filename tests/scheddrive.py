"""One drive of the embeddable Scheduler at the simulator's instants, for the tests that
prove it schedules as ``simulate`` does with a lifecycle, node events, preemption or
``--time-min``: the drive plays the part of the jobs and of the site (what ends when,
which nodes fail), the Scheduler decides."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import event, reject

from fastsched.model.elastic import saved_work
from fastsched.model.lifecycle import saved_progress
from fastsched.sim.decisions import START


class Endless(AssertionError):
    """A drive past its bound of instants."""


@dataclass
class Driven:
    """What a drive saw: every attempt as (job id, start, end, nodes, stopped by a
    failure or a preemption), sorted; whether a pass held a job for down nodes
    (ReqNodeNotAvail); each job's last start as (start, nodes, time limit); with
    containers, each start's image pull as (job id, the job's starts before it, pull
    seconds), sorted."""
    attempts: list = field(default_factory=list)
    held: bool = False
    starts: dict = field(default_factory=dict)
    pulls: list = field(default_factory=list)


def drive(s, jobs, lc=None, rows=(), instants=(), bound=None) -> Driven:
    """Drive Scheduler ``s`` through ``jobs`` and the node events ``rows`` ((time, kind,
    nodes), kind down / up / drain / resume) as the simulator's loop runs an instant:
    complete what ends (TIMEOUT when cut at its limit); apply the node events (down:
    ``fail_nodes``; a drain kills too with power saving, the jobs whose nodes still
    boot; their attempts are checked against the lifecycle ``lc``; up / resume: with
    regrowth, shrunk or narrow jobs take nodes back); stop the victims whose GraceTime
    ends (those still running the attempt that was preempted; not one CONFIGURING whose
    nodes are ready before its grace end, whose end is reset then: it runs to its own
    end); submit what arrives;
    then pass and apply while a pass stops a victim at once, a job ends at once or a
    start releases a dependent (the simulator passes again then).
    A job runs min(work left, the limit its START gave) from its decision's
    ``configure_time`` on (power saving: its nodes boot first; killed before, it never
    ran and its attempt starts at the kill), its image pull first (containers:
    ``pull_time``, inside its limit; its checkpoints count from the pull's end); started
    narrow on a node range, its work is node-seconds at its width; a requeued one
    resumes with the work left after its last checkpoint; a ``--no-kill`` one shrinks. ``instants``: more times to pass at
    (advance reservations' window ends). Raises :class:`Endless` past ``bound``
    instants (default 100 per job and 100; preemption can ping-pong for ever)."""
    ids = [int(j) for j in jobs.job_id]
    row = {j: k for k, j in enumerate(ids)}
    left = {j: int(r) for j, r in zip(ids, jobs.runtime)}
    asked = {j: int(t) for j, t in zip(ids, jobs.time_limit)}
    width = {j: int(n) for j, n in zip(ids, jobs.num_nodes)}
    interval = {j: 0 if lc is None else int(lc.checkpoint_interval[row[j]]) for j in ids}
    submits = sorted(set(jobs.submit_time.tolist()))
    stream = sorted(rows, key=lambda e: e[0])
    visits = sorted(set(instants))
    out = Driven()
    ends, running, stops, began, over, limit, shrunk = {}, {}, {}, {}, {}, {}, set()
    pulled = {}         # each running attempt's image pull (seconds)
    shapes = {}         # a shrunk attempt's shape starts and widths

    def stop(j, t, requeue):
        start, nodes = running.pop(j)
        start = min(start, t)                # (stopped CONFIGURING: never ran)
        out.attempts.append((j, start, t, nodes, True))
        del ends[j]
        starts, widths = shapes.pop(j, ([start], [len(nodes)]))
        pull = pulled.pop(j, 0)
        if requeue and j in shrunk:      # preempted after a shrink: node-seconds kept
            left[j] -= saved_work(starts, widths, began[j] + pull, t, interval[j]) // width[j]
        elif requeue:
            left[j] -= int(saved_progress(max(t - start - pull, 0), interval[j]))
        shrunk.discard(j)

    def end(now):
        for j in [j for j, e in ends.items() if e == now]:
            s.complete(j, now, state="TIMEOUT" if over[j] else "COMPLETED")
            start, nodes = running.pop(j)
            out.attempts.append((j, start, now, nodes, False))
            del ends[j]
            pulled.pop(j, None)

    def fail(kill, nodes, now):
        before = 0 if s.attempts is None else len(s.attempts)
        killed = kill(nodes, now).tolist()
        if s.attempts is None:              # no lifecycle: they end for good
            for j in killed:
                running[j] = (min(running[j][0], now), running[j][1])
                stop(j, now, False)
            return
        new = s.attempts.iloc[before:]
        assert sorted(new.job_id.tolist()) == sorted(killed)
        for a in new.itertuples():
            j = a.job_id
            start, on = running[j]
            start = min(start, now)          # (killed CONFIGURING: never ran)
            running[j] = (start, on)
            if a.state == "RESIZING":        # a --no-kill job runs on, on fewer nodes
                assert (a.start_time, a.end_time) == (start, now)
                running.pop(j)
                if start < now:              # (a shape that ran)
                    out.attempts.append((j, start, now, on, False))
                running[j] = (now, sorted(set(on) - set(nodes)))
                shapes.setdefault(j, ([start], [len(on)]))
                shapes[j][0].append(now)
                shapes[j][1].append(len(running[j][1]))
                ends[j] = min(now + a.remaining, began[j] + limit[j])
                over[j] = now + a.remaining > began[j] + limit[j]
                shrunk.add(j)
                continue
            assert (a.end_time, a.state) == (now, "NODE_FAIL")
            if j not in shrunk:              # (else: node-seconds, model.elastic)
                ran = max(now - start - pulled.get(j, 0), 0)     # after its pull
                assert (a.start_time, a.saved) == (start, saved_progress(ran, interval[j]))
            assert a.remaining == left[j] - a.saved
            assert a.requeued == bool(lc.requeue[row[j]])
            assert a.begin_time == (now + lc.delay if a.requeued else -1)
            stop(j, now, False)
            left[j] -= a.saved

    def resume(nodes, now):
        """Nodes back: with regrowth, shrunk or narrow jobs take some (RESIZING)."""
        before = 0 if lc is None else len(s.attempts)
        s.resume_nodes(nodes, now=now)
        if lc is None or not lc.regrow:
            return
        r = s.running_jobs
        for a in s.attempts.iloc[before:].itertuples():
            j = a.job_id
            start, on = running.pop(j)
            assert (a.state, a.start_time, a.end_time) == ("RESIZING", start, now)
            if start < now:
                out.attempts.append((j, start, now, on, False))
            k = int(np.flatnonzero(r.job_id == j)[0])
            running[j] = (now, sorted(r.nodes[r.node_offsets[k]:r.node_offsets[k + 1]]
                                      .tolist()))
            assert set(on) < set(running[j][1])
            ends[j] = min(now + a.remaining, began[j] + limit[j])
            over[j] = now + a.remaining > began[j] + limit[j]

    def pass_once(now):
        """One pass applied; True if the simulator passes again at ``now``: it stopped
        a victim then, or a start released a dependent."""
        d = s.schedule(now)
        s.apply(d)
        out.held = out.held or "ReqNodeNotAvail" in d.reason
        for i in np.flatnonzero(d.outcome == START).tolist():
            j = int(d.job_id[i])
            limit[j] = asked[j] if d.time_limit is None else int(d.time_limit[i])
            t = now if d.configure_time is None else now + int(d.configure_time[i])
            running[j] = (t, sorted(d.nodes_of(i).tolist()))
            run = left[j]
            if len(running[j][1]) < width[j]:    # a node range started narrow: node-seconds
                run = -(-left[j] * width[j] // len(running[j][1]))
                shrunk.add(j)
            pulled[j] = 0 if d.pull_time is None else int(d.pull_time[i])
            if d.pull_time is not None:
                out.pulls.append((j, sum(1 for p in out.pulls if p[0] == j), pulled[j]))
            run += pulled[j]                  # the pull runs inside the job, first
            ends[j] = t + min(run, limit[j])
            if d.end_time is not None:      # (power, containers: the Scheduler's own end)
                assert int(d.end_time[i]) == ends[j], (j, int(d.end_time[i]), ends[j])
            began[j], over[j] = t, run > limit[j]
            out.starts[j] = (t, running[j][1], limit[j])
        at_once = False
        p = d.preempt
        for v, mode, t in ([] if p is None else zip(p.victims.tolist(), p.mode,
                                                    p.stop.tolist())):
            if t == now:
                stop(v, now, mode == "REQUEUE")
                at_once = True
            elif not now < began[v] < t:    # (CONFIGURING, ready before its grace end:
                stops[v] = (t, mode == "REQUEUE", began[v])     # it runs to its own end)
        released = set(s.pending.job_id.tolist()) - set(d.job_id.tolist())
        return at_once or bool(released)

    bound = 100 * len(ids) + 100 if bound is None else bound
    for _ in range(bound + len(stream)):    # each visit advances the state
        times = submits[:1] + list(ends.values()) + [t for t, _, _ in stream[:1]] + \
            [t for t, _, _ in stops.values()] + \
            [t for t in (s.preempt_time, s.requeue_time) if t >= 0] + \
            (visits[:1] if len(s.pending.job_id) else [])
        if not times:
            break
        now = min(times)
        while visits and visits[0] <= now:
            visits.pop(0)
        assert now >= s._clock, "a time in the past"
        end(now)
        while stream and stream[0][0] == now:
            _, kind, nodes = stream.pop(0)
            if kind in ("down", "drain"):
                fail(s.fail_nodes if kind == "down" else s.drain_nodes, nodes, now)
            else:
                resume(nodes, now)
        for j, (t, requeue, start) in list(stops.items()):
            if t == now:
                del stops[j]
                if j in running and began[j] == start:    # (that attempt runs on)
                    stop(j, now, requeue)
        if submits and submits[0] == now:
            submits.pop(0)
            s.submit(jobs.take(jobs.submit_time == now))
        while pass_once(now) or now in ends.values():
            end(now)
    else:
        raise Endless(f"the drive does not end: {len(out.attempts)} attempts")
    out.attempts.sort()
    out.pulls.sort()
    return out


def drive_or_discard(s, jobs, lc=None, rows=(), instants=(), bound=None) -> Driven:
    """:func:`drive`, the hypothesis case discarded when it never ends: requeued victims
    ranked above their preemptor can take back, at each one's begin time, what it
    preempted them for (Slurm's rules allow this ping-pong too: nothing makes the
    preemptor go first), and the simulation would run for ever; so the Scheduler is
    driven first, within its bound (``bound``: see :func:`drive`)."""
    try:
        return drive(s, jobs, lc, rows, instants, bound)
    except Endless:
        event("discarded: preemption ping-pong")
        reject()


def simulated(r):
    """``r``'s attempts that ran, as :func:`drive` lists them (stopped: killed by a
    failure or preempted)."""
    t, ids = r.attempts, r.workload.job_id
    return sorted((int(ids[t["row"][k]]), int(t["start"][k]), int(t["end"][k]),
                   sorted(t["alloc_nodes"][t["alloc_offsets"][k]:t["alloc_offsets"][k + 1]]
                          .tolist()), bool(t["killed"][k]))
                  for k in range(len(t["row"])) if t["start"][k] >= 0)

"""The twin's elastic jobs (tests/naive_nodes.py): the shapes of an attempt that
node failures shrank (and nodes coming back regrew), and its work counted second by
second (perfectly malleable: each second after the pull does as many node-seconds as
the job has nodes)."""
from __future__ import annotations

from dataclasses import replace


def first_shape(r, asked):
    """A running job's attempt before its first shrink: it started on its nodes once
    they were ready (its allocation plus its boot wait, power saving) on its nodes
    (maybe fewer than the job ``asked`` is queued with) and has the queued job's
    runtime x nodes node-seconds to do."""
    job, alloc, chosen, _ = r
    start = alloc + job.boot
    return {"starts": [start], "widths": [len(chosen)], "runtime": asked.runtime,
            "width": asked.nodes, "pull_end": start + job.pull}


def done(shape, t):
    """Node-seconds done by ``t``, second by second: each second after the pull does
    as many as the job has nodes then."""
    total = 0
    for u in range(shape["starts"][0], t):
        if u >= shape["pull_end"]:
            total += [w for s, w in zip(shape["starts"], shape["widths"]) if s <= u][-1]
    return total


def shrink(now, r, keep, shape, attempt, resized):
    """Running entry ``r`` loses the nodes not in ``keep`` at ``now``."""
    job, start, chosen, gpus = r
    return reshape(now, r, keep, [g for x, g in zip(chosen, gpus) if x in keep], shape,
                   attempt, resized)


def reshape(now, r, nodes, gpus, shape, attempt, resized):
    """Running entry ``r`` runs on ``nodes`` (GPU lists ``gpus``) from ``now`` (its
    ``shape`` grows by one; a second change at the same instant replaces the shape that
    never ran). Perfectly malleable: it needs its first runtime x width node-seconds,
    and ends at the first second by which they are done (never after start + limit)."""
    job, start, chosen, _ = r
    if now > shape["starts"][-1]:
        if resized is not None:
            resized.append((job.job_id, attempt, shape["starts"][-1], now, list(chosen)))
        shape["starts"].append(now)
        shape["widths"].append(len(nodes))
    else:
        shape["widths"][-1] = len(nodes)
    work = shape["runtime"] * shape["width"]
    end = max(now, shape["pull_end"])
    while done(shape, end) < work:
        end += 1
    job = replace(job, nodes=len(nodes), runtime=end - start - job.pull)
    return (job, start, nodes, gpus)


def take_back(now, r, part, back, want, nodes, running, blocked, res):
    """THE REGROWTH RULE: of the nodes ``back`` (they came back at ``now``), those
    running entry ``r`` (in partition ``part``) takes: not its own, eligible for its
    request in ``part``, free of every hold (running jobs to their start + limit on the
    grid of ``res``; advance reservations' ``blocked`` windows) from now to its own hold's
    end; lowest first, at most ``want``."""
    import naive_nodes as nn
    job, start, chosen, _ = r
    until = nn._on_grid(start + job.boot + job.limit, res)
    ask = nn._in_partition(job, part)
    out = []
    for x in sorted(back):
        holds = [(s, nn._on_grid(s + jb.boot + jb.limit, res), jb.gpus, jb.cpus, jb.mem)
                 for jb, s, ch, _ in running if x in ch]
        holds += [(s, e, nodes[x].gpus, nodes[x].cpus, nodes[x].mem)
                  for s, e, y in blocked if y == x and e > now]
        if x not in chosen and nn._eligible(nodes[x], ask) and \
                nn._free_over(nodes[x], holds, ask, now, until):
            out.append(x)
    return out[:want]


def regrow(now, back, running, ctx):
    """Nodes ``back`` came back at ``now``: each running ``--no-kill`` job on fewer
    nodes than it asks for, in submit order, takes some (:func:`take_back`) and its
    work goes on at the new width (:func:`reshape`). ``ctx``: the twin's state (its
    keys named below); ``running`` and ``ctx["result"]`` are updated in place."""
    result, shapes = ctx["result"], ctx["shapes"]
    for r in sorted(running, key=lambda r: ctx["order"][r[0].job_id]):
        i = r[0].job_id
        want = ctx["queued"](i).nodes - len(r[2])
        if not ctx["no_kill"].get(i, False) or want <= 0 or r[1] + r[0].duration() <= now:
            continue
        take = take_back(now, r, result[i][4], back, want, ctx["nodes"], running,
                         ctx["blocked"], ctx["res"])
        if not take:
            continue
        gpus = dict(zip(r[2], r[3]))
        gpus.update({x: ctx["gpus_of"](x, r[0].gpus) for x in take})
        keep = sorted(r[2] + take)
        shaped = reshape(now, r, keep, [gpus[x] for x in keep],
                         shapes.setdefault(i, first_shape(r, ctx["queued"](i))),
                         ctx["restarts"].get(i, 0), ctx["resized"])
        running[running.index(r)] = shaped
        result[i] = (r[1], r[1] + shaped[0].duration(), keep, shaped[3], result[i][4])

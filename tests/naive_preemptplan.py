"""THE DEFINITION of planning with preemptable capacity, written plainly (the twin of
fastsched.engine.preemptplan): a planner wrapper for naive_nodes._pass.

A job planned at any time (EASY within its reservation depth, conservative) that does
not start now on the free resources is planned again over its partitions in order
with, for each partition p, the jobs it could preempt there freed from now (a job that
may preempt nothing frees nothing, so its plan is the same): every job running on one of p's nodes that is not
stopping (a victim of an earlier preemption whose preempted attempt still runs), that
it may preempt (``may``), whose mode is not OFF and that has run at least its exempt
time since Slurm's start time (naive_preempt.slurm_start: the allocation's while
CONFIGURING). Freed means: on each of its nodes, a hold of minus its request from now to the
end of its own hold. The earliest start over the partitions (ties: the first listed)
and its nodes are chosen as for any job; the plan is a reservation, also when it is
now (the preemption after the pass stops the victims), and its hold goes on the plan
over the victims' holds (free capacity may go negative there: nothing else fits).
"""
from __future__ import annotations

import naive_nodes as nn
from naive_preempt import slurm_start

#: marks a plan made with preemptable capacity (its fifth item): never a start
BY_PREEMPTING = "by preempting"


class Planning:
    """The wrapper's view of the run: the rules (``preempt``, naive_preempt's
    functions), each running job's partition (``result``, where the pass's own starts
    are not yet), the preemptors' victims (``waits``) and the attempts' numbers
    (``restarts``)."""

    def __init__(self, preempt, result, waits, restarts):
        self.preempt, self.result, self.waits, self.restarts = preempt, result, waits, restarts

    def planner(self, inner, now, running, started, res):
        """``inner`` (a naive_nodes._plan) with preemptable capacity, in a pass at
        ``now`` that started ``started`` ((job, nodes, partition)) so far; holds end on
        the grid of multiples of ``res``."""
        part = {job.job_id: p for job, _, p in started}
        live = {r[0].job_id for r in running if r[1] + r[0].duration() > now}
        stopping = {v for vs in self.waits.values() for v, a in vs
                    if self.restarts.get(v, 0) == a and v in live}

        def plan(now_, nodes, plan_, job, parts, only_now, topo=None):
            best = inner(now_, nodes, plan_, job, parts, only_now, topo)
            if only_now or (best is not None and best[0] == now):
                return best
            out = None
            for p in parts:
                freed = [list(h) for h in plan_]
                for r in self.candidates(job, p, now, running, nodes, stopping, part):
                    until = nn._on_grid(r[1] + r[0].boot + r[0].limit, res)
                    for x in r[2]:
                        freed[x].append((now, until, -r[0].gpus, -r[0].cpus, -r[0].mem))
                got = nn._plan(now, nodes, freed, job, [p], False)
                if got is not None and (out is None or got[0] < out[0]):
                    out = got
            return None if out is None else (out[0], out[1], out[2], job, BY_PREEMPTING)
        return plan

    def candidates(self, job, p, now, running, nodes, stopping, part):
        """The running entries ``job`` (in partition ``p``) may preempt at ``now``."""
        pre, out = self.preempt, []
        for r in running:
            v = r[0].job_id
            if v in stopping or not any(nodes[x].available and p in nodes[x].partitions
                                        for x in r[2]):
                continue
            vp = part[v] if v in part else self.result[v][4]
            if pre["may"](job.job_id, p, v, vp) and pre["mode"](v, vp) != "OFF" \
                    and slurm_start(r, now) + pre["exempt"](v, vp) <= now:
                out.append(r)
        return out

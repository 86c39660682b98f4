"""Elastic jobs: a multi-node job that outlives the failure of some of its nodes.

Slurm: a running job submitted with ``--no-kill`` (``kill_on_node_fail=0``) on more
than one node is not killed when one of its nodes goes down; slurmctld removes the
node from the job (``excise_node_from_job`` in job_mgr.c), and the accounting closes
the job's record in state RESIZING and opens a new one for the smaller allocation
(``job_pre_resize_acctg`` / ``job_post_resize_acctg``): ``sacct --duplicates`` shows
one record per shape of the job. Its end time (start + time limit) is unchanged.

Modelled beyond Slurm: ``nodes_min`` (from ``--nodes=MIN-MAX``): a failure that would
leave the job fewer than its minimum nodes kills it as without ``--no-kill``
(requeued or NODE_FAIL; Slurm shrinks down to one node, the job script's own business
after that). The work model is perfectly malleable: a job asking for ``N`` nodes with
runtime ``R`` needs ``R * N`` node-seconds of work, and each second on ``n`` nodes
does ``n`` of them (its image pull, first, does none). After a shrink at ``t`` it
ends when the node-seconds left are done on its remaining nodes (rounded up to a
whole second), never after its start + time limit (then TIMEOUT). A shrunk attempt
that is killed later keeps the node-seconds done by its last checkpoint (every
``checkpoint_interval`` seconds of its run after the pull, as for a rigid job),
in whole seconds at its full width (rounded down).

Regrowth (``Lifecycle.regrow``, off by default): nodes that come back (an ``up`` or
``resume`` event, for nodes that were down or drained) are offered, before the pass of
that instant, to the running ``--no-kill`` jobs that hold fewer nodes than they ask for
(shrunk, or started narrow on a node range), in submit order. Each takes, lowest first
and up to the count it asks for, those in its partition where its whole request is free
from now to the end of its hold (start + time limit: a start there would hold as long),
and its remaining node-seconds go faster in proportion: the same work model, the new
shape doing as many node-seconds per second as it has nodes. Slurm itself has no
automatic regrowth: a running job grows only through a helper job submitted with
``--dependency=expand:<job_id>`` whose nodes ``scontrol update JobId=<helper>
NumNodes=0`` and ``scontrol update JobId=<job_id> NumNodes=ALL`` hand over
(``SchedulerParameters=permit_job_expansion``); regrowth models a job (or its
launcher) that does so as soon as nodes come back, ahead of the queue (its helper would
otherwise wait for the pass like any job): the upper bound of what growing can give.

A shape of an attempt is (start, nodes): the first starts with the attempt, each
later one at a failure or a regrowth; each runs until the next one's start.
"""
from __future__ import annotations


def work_done(starts, widths, pull_end: int, t: int) -> int:
    """Node-seconds of work an attempt of shapes (``starts``, ``widths``) has done by
    ``t``: nothing before ``pull_end`` (its image pull's end)."""
    done = 0
    for k, (s, n) in enumerate(zip(starts, widths)):
        e = t if k + 1 == len(starts) else min(t, starts[k + 1])
        done += n * max(0, e - max(s, pull_end))
    return done


def finish(starts, widths, pull_end: int, work: int) -> int:
    """When an attempt of shapes (``starts``, ``widths``) that needs ``work``
    node-seconds ends, its time limit aside: its last shape does what is left."""
    s, n = starts[-1], widths[-1]
    left = work - work_done(starts, widths, pull_end, s)
    return max(s, pull_end) + -(-left // n)


def saved_work(starts, widths, pull_end: int, t: int, interval: int) -> int:
    """Node-seconds an attempt killed at ``t`` keeps: those done by its last
    checkpoint (every ``interval`` seconds of its run after the pull; 0: none)."""
    if interval <= 0:
        return 0
    ran = max(t - pull_end, 0)
    return work_done(starts, widths, pull_end, pull_end + ran // interval * interval)


#: why regrowth and preemption are refused together: a growth comes before every queued
#: job, while preemption rests on Slurm's queue order (PriorityTier first) and its
#: candidates (running jobs only); a growing job would take returned nodes ahead of a
#: higher-tier job queued for them, and the expand helper job Slurm grows a job with is
#: itself a pending job, which may preempt or be preempted, that this model leaves out
REGROW_PREEMPT = ("regrowing --no-kill jobs (regrow) with preemption is not modelled: a "
                  "growth takes returned nodes ahead of every queued job, a higher-tier "
                  "preemptor too, where Slurm's expand helper job waits in the queue")

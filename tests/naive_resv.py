"""The twin of jobs running in an advance reservation (``--reservation``), for
tests/naive_nodes.py's ``simulate(members=...)``. The rule, written plainly:

* a job running in reservation R may use only R's nodes (within its partitions);
* it sees R's windows as free (the holds ``simulate`` tags "window" on R's nodes are
  not in its view), and R's nodes as held whole at every instant outside R's windows,
  up to ``TAIL`` (after R's last window): so it starts and ends (by its time limit)
  inside one window;
* every other job sees R's windows held, as without members;
* the loop visits each opening of a window while jobs wait (and ``TAIL``, where a job no
  window took would start: the simulator drops such starts);
* a job drawn to MAGNETIC reservations (naming none) is planned as a member of each in
  turn and as itself: the earliest start wins, the first of these on a tie;
* a job naming several reservations (``listed``) is planned as a member of each in
  turn, in the reservations' order (as a FLEX member, below, of one marked "FLEX"):
  the earliest start wins, the first on a tie;
* a job of a FLEX reservation R (``flex``) sees every node as any job does, and each of
  R's nodes a second time, after all of them (ascending): that side with R's
  windows free and held whole outside them, as a member sees it; its holds go onto the
  node itself. At every instant one side is held whole, so it never takes both.
"""
from dataclasses import replace

TAIL = (1 << 40) - 1


class Members:
    """``reservation``: job id -> (R's nodes, R's windows as (start, end) pairs);
    ``attracted``: job id -> such pairs of the MAGNETIC reservations it is drawn to."""

    def __init__(self, reservation, attracted=None, flex=(), listed=None):
        self.reservation = reservation
        self.attracted = attracted or {}
        self.flex = set(flex)
        # job id -> such pairs of each it names, in order ((nodes, windows, "FLEX") for a
        # FLEX one)
        self.listed = listed or {}

    def planner(self, plan_fn):
        """``plan_fn`` (naive_nodes._plan) as a job of a reservation, or drawn to some,
        plans: (t, nodes, partition) or None."""
        def plan(now, nodes, holds, job, parts, only_now, topo):
            def flex_plan(r):
                got = plan_fn(now, *_flex_view(r[:2], nodes, holds, now), job, parts,
                              only_now, topo)
                side = sorted(r[0])
                return got and (got[0], [x if x < len(nodes) else side[x - len(nodes)]
                                         for x in got[1]], got[2])     # (the engine's order)
            if job.job_id in self.listed:
                best = None
                for r in self.listed[job.job_id]:
                    if len(r) > 2 and r[2] == "FLEX":
                        got = flex_plan(r)
                    else:
                        got = plan_fn(now, *_view(r[:2], nodes, holds, now), job, parts,
                                      only_now, topo)
                    if got is not None and (best is None or got[0] < best[0]):
                        best = got
                return best
            if job.job_id in self.flex:
                return flex_plan(self.reservation[job.job_id])
            if job.job_id not in self.attracted:
                return plan_fn(now, *self.view(job, nodes, holds, now), job, parts,
                               only_now, topo)
            best = None
            for r in self.attracted[job.job_id]:
                seen = _view(r, nodes, holds, now)
                got = plan_fn(now, *seen, job, parts, only_now, topo)
                if got is not None and (best is None or got[0] < best[0]):
                    best = got
            got = plan_fn(now, nodes, holds, job, parts, only_now, topo)
            if got is not None and (best is None or got[0] < best[0]):
                best = got
            return best
        return plan

    def view(self, job, nodes, plan, now):
        """(nodes, plan) as the job sees them (unchanged for a job in no reservation)."""
        if job.job_id not in self.reservation:
            return nodes, plan
        if job.job_id in self.flex:
            return _flex_view(self.reservation[job.job_id], nodes, plan, now)
        return _view(self.reservation[job.job_id], nodes, plan, now)

    def views(self, job, nodes, plan, now):
        """Each (nodes, plan) a start now of the job is tried on, in the order a tie goes
        to: each reservation it names or is drawn to, then (drawn) the cluster as it is;
        else :meth:`view` (the simulator refuses time minimums with FLEX)."""
        jid = job.job_id
        if jid in self.listed:
            return [_view(r[:2], nodes, plan, now) for r in self.listed[jid]]
        if jid in self.attracted:
            return [_view(r, nodes, plan, now) for r in self.attracted[jid]] + [(nodes, plan)]
        return [self.view(job, nodes, plan, now)]

    def closings(self):
        """The instants the loop visits while jobs wait: the windows' openings, TAIL."""
        pairs = list(self.reservation.values()) + [
            r for rs in (*self.attracted.values(), *self.listed.values()) for r in rs]
        return {e for pair in pairs for _, e in _gaps(pair[1])}


def _view(reservation, nodes, plan, now):
    """(nodes, plan) as a job running in ``reservation`` (nodes, windows) sees them."""
    inside, windows = reservation
    seen = [node if x in inside else replace(node, available=False)
            for x, node in enumerate(nodes)]
    if plan is None:
        return seen, None
    outside = _gaps(windows)
    view = []
    for x, node in enumerate(nodes):
        holds = plan[x]
        if x in inside:
            holds = [h for h in holds if h[5:] != ("window",)] + [
                (s, e, node.gpus, node.cpus, node.mem) for s, e in outside if e > now]
        view.append(holds)
    return seen, view


def _flex_view(reservation, nodes, plan, now):
    """(nodes, plan) as a job of FLEX ``reservation`` sees them: every node as it is,
    then R's nodes again as a member sees them."""
    side = sorted(reservation[0])
    seen, view = _view(reservation, nodes, plan, now)
    nodes = list(nodes) + [seen[x] for x in side]
    return nodes, None if plan is None else list(plan) + [view[x] for x in side]


def _gaps(windows):
    """The (start, end) intervals of [0, TAIL) outside ``windows`` (not overlapping)."""
    out, t = [], 0
    for s, e in sorted(windows):
        if s > t:
            out.append((t, s))
        t = max(t, e)
    return out + [(t, TAIL)]

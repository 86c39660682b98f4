"""The later start of a multi-node job without holds (engine.earliest._earliest_monotone)
against the general sweep it short-cuts (_tail_bound, _feasible_runs, _first_covered,
_choose_covering), on drawn work profiles: the same start and nodes whenever it answers,
and it answers whenever every node's free resources only grow from where the job first
fits (the profile of running jobs alone)."""
import numpy as np
from hypothesis import assume, given, settings, strategies as st

from fastsched.engine.earliest import (_choose_covering, _earliest_monotone, _feasible_runs,
                                       _first_covered, _tail_bound)
from fastsched.engine.profile import new_profile
from fastsched.engine.state import Ask, Nodes

NOW = 100


@st.composite
def profiles(draw, monotone):
    """(caps, segments per node): segments (time, g, c, m) from NOW, increasing
    times, the last one wholly free (a profile's tail). ``monotone``: free only
    grows, as when only running jobs are in it."""
    n = draw(st.integers(2, 8))
    caps, nodes = [], []
    for _ in range(n):
        cap = (draw(st.integers(0, 4)), draw(st.integers(0, 3)), draw(st.integers(0, 3)))
        k = draw(st.integers(0, 4))
        times = sorted(draw(st.sets(st.integers(NOW + 1, NOW + 40), min_size=k, max_size=k)))
        segs = []
        for _ in range(k):
            segs.append(tuple(draw(st.integers(0, v)) for v in cap))
        segs.append(cap)
        if monotone:
            for i in range(len(segs) - 2, -1, -1):
                segs[i] = tuple(min(a, b) for a, b in zip(segs[i], segs[i + 1]))
        nodes.append(list(zip([NOW] + times, *zip(*segs))))
        caps.append(cap)
    return caps, nodes


def _engine_inputs(caps, nodes):
    p = new_profile(np.array([len(s) + 2 for s in nodes], dtype=np.int64))
    for x, segs in enumerate(nodes):
        o = p.wo[x]
        for k, (t, g, c, m) in enumerate(segs):
            p.WT[o + k], p.WG[o + k], p.WC[o + k], p.WM[o + k] = t, g, c, m
        p.wlen[x] = len(segs)
    cap = np.array(caps, dtype=np.int64).reshape(-1, 3)
    empty = np.zeros(0, dtype=np.int64)
    nodes_ = Nodes(cap[:, 0].copy(), cap[:, 1].copy(), cap[:, 2].copy(), empty, empty,
                   np.zeros(0, dtype=np.uint64))
    return p, nodes_, np.arange(len(caps), dtype=np.int64)


def _general(ask, plist, nodes, p):
    chosen = np.zeros(ask.need, dtype=np.int64)
    t_up = _tail_bound(ask, plist, nodes, p)
    ra, rb, rx, nr = _feasible_runs(ask, plist, nodes, p, t_up)
    t = _first_covered(ra, rb, nr, ask.need)
    _choose_covering(t, ra, rb, rx, nr, p, ask.need, chosen)
    return t, chosen.tolist()


def _case(data, monotone):
    caps, segs = data.draw(profiles(monotone))
    p, nodes, plist = _engine_inputs(caps, segs)
    ask = Ask(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)),
              data.draw(st.integers(0, 2)), data.draw(st.integers(1, 30)), 0)
    capable = [x for x, c in enumerate(caps) if c[0] >= ask.g and c[1] >= ask.c and c[2] >= ask.m]
    assume(len(capable) >= 2)
    return ask._replace(need=data.draw(st.integers(2, len(capable)))), p, nodes, plist


@settings(max_examples=150, deadline=None)
@given(st.data(), st.booleans())
def test_the_short_cut_gives_the_general_start_and_nodes(data, monotone):
    ask, p, nodes, plist = _case(data, monotone)
    chosen = np.zeros(ask.need, dtype=np.int64)
    t = _earliest_monotone(NOW, ask, plist, nodes, p, chosen)
    if monotone:
        assert t >= 0
    if t >= 0:
        assert (t, chosen.tolist()) == _general(ask, plist, nodes, p)


def test_a_hold_sends_the_job_to_the_general_sweep():
    # node 0 is free, then held over [110, 120), then free again: two runs
    caps = [(2, 1, 1), (2, 1, 1)]
    segs = [[(NOW, 2, 1, 1), (110, 0, 0, 0), (120, 2, 1, 1)], [(NOW, 0, 0, 0), (130, 2, 1, 1)]]
    p, nodes, plist = _engine_inputs(caps, segs)
    ask = Ask(2, 1, 1, 5, 2)
    assert _earliest_monotone(NOW, ask, plist, nodes, p, np.zeros(2, dtype=np.int64)) == -1
    assert _general(ask, plist, nodes, p) == (130, [0, 1])

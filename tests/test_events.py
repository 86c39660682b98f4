"""Node events (drain, resume) through the engine's one entry point, against the twin
(tests/naive_nodes.py), from the API, event files and the CLI."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive_nodes
from fastsched import (Cluster, JobTable, NodeEvents, bundled_trace, read_node_events,
                       read_swf, simulate)
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.model.errors import InputError, UnsupportedError
from test_constraints import SETTINGS, constrained_cases, engine_inputs


@st.composite
def event_rows(draw, num_nodes):
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        nodes = draw(st.lists(st.integers(0, num_nodes - 1), min_size=1, max_size=3, unique=True))
        rows.append((draw(st.integers(0, 30)), draw(st.sampled_from(["drain", "resume"])), nodes))
    return rows


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 3),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_node_events_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    rows = data.draw(event_rows(cluster.num_nodes))
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, events=NodeEvents.from_rows(rows, cluster.num_nodes))
    out, _ = naive_nodes.simulate(cluster, naive_nodes.jobs_from_table(jobs), policy, depth,
                                  available, partitions=parts, deps=deps, groups=groups,
                                  caps=caps, rank=rank, events=rows)
    naive_nodes.assert_same_records(run, ids, out)


def _jobs(n, nodes=1, limit=10, submit=0):
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit, time_limit=limit,
                                runtime=limit, num_nodes=nodes)


def test_drained_nodes_take_no_job_until_resumed():
    cluster = Cluster.homogeneous(4)
    jobs = _jobs(6)                          # six 1-node jobs of 10 s at time 0
    events = NodeEvents.from_rows([(0, "drain", [0, 1]), (25, "resume", [0])], 4)
    r = simulate(cluster, jobs, "easy", events=events)
    assert r.summary["reservations"] == "nodes" and r.summary["node_events"] == 2
    s = r.schedule
    nodes = [s.alloc_nodes[s.alloc_offsets[i]:s.alloc_offsets[i + 1]].tolist() for i in range(6)]
    assert s.start_time.tolist() == [0, 0, 10, 10, 20, 20]
    assert all(x in (2, 3) for row in nodes for x in row)        # 0 and 1 drained...
    late = simulate(cluster, _jobs(6, submit=0), "easy",
                    events=NodeEvents.from_rows([(0, "drain", [0, 1, 2, 3]),
                                                 (25, "resume", [0])], 4))
    assert late.schedule.start_time.tolist() == [25, 35, 45, 55, 65, 75]   # ... until resumed
    assert (late.schedule.alloc_nodes == 0).all()


def test_drain_lets_running_jobs_finish():
    cluster = Cluster.homogeneous(2)
    r = simulate(cluster, _jobs(3, limit=10), "fcfs",
                 events=NodeEvents.from_rows([(5, "drain", [0, 1]), (30, "resume", [0, 1])], 2))
    assert r.schedule.start_time.tolist() == [0, 0, 30]
    assert r.schedule.end_time.tolist() == [10, 10, 40]


def test_event_file_reader(tmp_path):
    cluster = Cluster.homogeneous(8, prefix="gpu")
    path = tmp_path / "events.csv"
    path.write_text("# maintenance\ntime,event,nodes,reason\n"
                    "3600,drain,\"gpu[001-003,008]\",firmware\n\n7200,RESUME,gpu001,\n")
    ev = read_node_events(path, cluster)
    assert ev.time.tolist() == [3600, 7200]
    assert ev.at(0)[1] == "drain" and ev.at(0)[2].tolist() == [0, 1, 2, 7]
    assert ev.at(1)[1:] == ("resume", ev.at(1)[2]) and ev.at(1)[2].tolist() == [0]
    assert ev.reason == ("firmware", "")
    for text, where in [("time,event,nodes\nx,drain,gpu001\n", ":2: field time"),
                        ("time,event,nodes\n5,reboot,gpu001\n", ":2: field event"),
                        ("time,event,nodes\n5,drain,gpu009\n", ":2: field nodes"),
                        ("time,event,nodes\n-1,drain,gpu001\n", ":2: field time"),
                        ("time,what,nodes\n", ":1"),
                        ("time,event,nodes\n5,drain\n", ":2")]:
        path.write_text(text)
        with pytest.raises(InputError) as e:
            read_node_events(path, cluster)
        assert where in str(e.value), (text, str(e.value))


def test_unmodelled_models_are_refused():
    cluster = Cluster.homogeneous(4)
    with pytest.raises(UnsupportedError, match="events"):
        simulate(cluster, _jobs(2), "easy", reservations="counts",
                 events=NodeEvents.from_rows([(1, "drain", [0])], 4))


def test_cli_events(tmp_path):
    ev = tmp_path / "ev.csv"
    ev.write_text("time,event,nodes\n0,drain,node[001-050]\n2000000,resume,node[001-050]\n")
    out = tmp_path / "s.json"
    trace = str(bundled_trace())
    assert main(["simulate", trace, "--policy", "easy", "--events", str(ev),
                 "--summary-json", str(out), "--no-progress"]) == 0
    summary = json.loads(out.read_text())
    assert summary["node_events"] == 2 and summary["reservations"] == "nodes"
    plain = simulate(Cluster.homogeneous(100), read_swf(trace).jobs, "easy")
    assert summary["avg_wait"] > plain.summary["avg_wait"]   # half the machine was gone


@settings(deadline=None)   # (the first examples compile the kernel)
@given(data=st.data())
def test_availability_kernel_equals_a_rebuild(data):
    """An event's nodes are taken out of (or put back in) every partition's list of
    available nodes, the types' capacities and their taken free-now counts, in place:
    all equal what is built afresh from the availability (the naive twin below)."""
    from fastsched.engine.availability import set_available
    from fastsched.engine.state import FreeNow, Nodes, RequestTypes
    n, parts = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 4))

    def ints(size, hi):
        return np.array(data.draw(st.lists(st.integers(0, hi), min_size=size,
                                           max_size=size)), dtype=np.int64)
    member = ints(n * parts, 1).reshape(n, parts).astype(bool)
    avail = ints(n, 1).astype(bool)
    cap, free = ints(n, 2), ints(n, 2)       # capacity and free-now, one resource
    ntypes = data.draw(st.integers(1, 5))
    tp, tg = ints(ntypes, parts - 1), ints(ntypes, 2)
    counted = ints(ntypes, 1).astype(bool)
    value = data.draw(st.booleans())
    nodes = ints(data.draw(st.integers(1, 4)), n - 1)

    def built(up):          # the naive twin: everything from the availability
        each = [np.flatnonzero(member[:, p] & up) for p in range(parts)]
        poff = np.cumsum([0] + [len(e) for e in each])
        bits = np.array([sum(1 << p for p in range(parts) if member[x, p] and up[x])
                         for x in range(n)], dtype=np.uint64)
        caps = [sum(member[x, tp[t]] and up[x] and cap[x] >= tg[t] for x in range(n))
                for t in range(ntypes)]
        counts = [sum(member[x, tp[t]] and up[x] and free[x] >= tg[t] for x in range(n))
                  if counted[t] else -1 for t in range(ntypes)]
        return poff, np.concatenate(each), bits, caps, counts

    poff, pflat, bits, caps, counts = built(avail)
    zeros = np.zeros(ntypes, dtype=np.int64)
    nd = Nodes(cap, cap, cap, poff.astype(np.int64), pflat.astype(np.int64), bits)
    ty = RequestTypes(tp, tg, zeros, zeros, np.array(caps, dtype=np.int64))
    fr = FreeNow(free, free, free, None, np.array(counts, dtype=np.int64),
                 *([None] * 5))
    changed = np.unique(nodes[avail[nodes] != value])
    every = built(np.ones(n, dtype=bool))[2]
    got_off, got_flat = set_available(changed, value, member, every, nd, ty, fr)
    after = avail.copy()
    after[changed] = value
    want = built(after)
    assert got_off.tolist() == want[0].tolist() and got_flat.tolist() == want[1].tolist()
    assert nd.pbits.tolist() == want[2].tolist()
    assert ty.cap.tolist() == want[3] and fr.tcount.tolist() == want[4]

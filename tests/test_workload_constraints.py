"""Workload CSV: QOS, job names, dependencies, arrays and partition lists."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched.model.constraints import (AFTERANY, DEPENDENCY_KINDS, ARRAY_TASK_LIMIT, Dependencies,
                                   LimitGroups, PartitionChoices, array_limit_groups,
                                   array_throttle, csr_take, dependencies_from_edges)
from fastsched.model.errors import InputError
from fastsched.tools.generate import ai_cluster, ai_mix
from fastsched.io.sbatch import normalise, parse_args
from fastsched.io.submission import singleton_edges
from fastsched.io.workload import Workload, read_workload, requests_to_workload, write_workload

import naive_workload as naive

HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
          "mem_per_node,partition,user,account")
PARTS = ["batch", "interactive"]
KIND_NAMES = {code: kind for kind, code in DEPENDENCY_KINDS.items()}


@pytest.fixture(scope="module")
def cluster():
    return ai_cluster("ai-8k")


CLUSTER = ai_cluster("ai-8k")


def _csv(tmp_path, text, name="w.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _read_rows(tmp_path, rows, name="w.csv"):
    """Write dict rows (naive_workload's form) as a CSV and read it back."""
    out = io.StringIO()
    cols = HEADER.split(",") + ["qos", "name", "dependency", "array"]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(cols)
    for r in rows:
        writer.writerow([r["job_id"], r["submit_time"], 100, 50, 1, 1, 1, 0,
                         ",".join(r["partition"]), r["user"], "acct", r["qos"], r["name"],
                         r["dependency"], r["array"]])
    return read_workload(_csv(tmp_path, out.getvalue(), name), CLUSTER)


def _edges(w: Workload, i: int) -> set:
    d = w.dependencies
    return {(int(d.parent[e]), KIND_NAMES[int(d.kind[e])])
            for e in range(d.offsets[i], d.offsets[i + 1])}


def _partitions(w: Workload, i: int) -> list:
    p = w.partitions
    return [PARTS[x] for x in p.partition[p.offsets[i]:p.offsets[i + 1]]]


# ----------------------------------------------------------------------------- examples

EXAMPLE = HEADER + """,qos,name,dependency,array
10,0,100,50,1,1,1,0,batch,alice,a,,train,,0-3%2
20,5,100,50,1,1,1,0,"interactive,batch",bob,a,high,eval,"afterok:10,afterany:11",
30,6,100,50,1,1,1,0,batch,alice,a,,train,singleton,
31,7,100,50,1,1,1,0,batch,alice,a,,train,afternotok:10_2,
32,8,100,50,1,1,1,0,batch,alice,a,,train,singleton,1-2
"""


def test_example(tmp_path, cluster):
    w = read_workload(_csv(tmp_path, EXAMPLE), cluster)
    # array tasks take job ids job_id + position, as Slurm numbers them
    assert w.jobs.job_id.tolist() == [10, 11, 12, 13, 20, 30, 31, 32, 33]
    assert w.array_job.tolist() == [10, 10, 10, 10, -1, -1, -1, 32, 32]
    assert w.array_task.tolist() == [0, 1, 2, 3, -1, -1, -1, 1, 2]
    assert [w.qos_names[q] for q in w.qos] == ["normal"] * 4 + ["high"] + ["normal"] * 4
    assert w.name.tolist() == ["train"] * 4 + ["eval"] + ["train"] * 4
    assert _partitions(w, 4) == ["interactive", "batch"] and w.jobs.partition[4] == 1
    assert all(_partitions(w, i) == ["batch"] for i in range(9) if i != 4)
    # afterok:10 = every task of array 10; afterany:11 = the task whose job id is 11
    assert _edges(w, 4) == {(i, "afterok") for i in range(4)} | {(1, "afterany")}
    assert _edges(w, 5) == {(i, "afterany") for i in range(4)}         # singleton
    assert _edges(w, 6) == {(2, "afternotok")}                          # 10_2
    assert _edges(w, 7) == {(5, "afterany"), (6, "afterany")}           # back to singleton 30
    assert _edges(w, 8) == {(7, "afterany")}
    assert not any(_edges(w, i) for i in range(4))
    # %2: one limit group over the four tasks of array 10
    assert w.limits.offsets.tolist() == [0, 1, 2, 3, 4, 4, 4, 4, 4, 4]
    assert w.limits.caps.tolist() == [[2, -1, -1, -1, -1]]
    assert w.limits.reasons[0][0] == ARRAY_TASK_LIMIT


def test_plain_workload_has_defaults_and_writes_no_new_columns(tmp_path, cluster):
    w = ai_mix(cluster, 300, seed=1)
    path = tmp_path / "plain.csv"
    write_workload(w, cluster, path)
    assert path.read_text().splitlines()[0] == HEADER + ",org"
    r = read_workload(path, cluster)
    n = len(r)
    assert r.qos_names == ["normal"] and not r.qos.any()
    assert (r.name == "").all() and (r.array_job == -1).all() and (r.array_task == -1).all()
    assert len(r.dependencies.parent) == 0 and len(r.limits.caps) == 0
    assert np.array_equal(r.partitions.offsets, np.arange(n + 1))
    assert np.array_equal(r.partitions.partition, r.jobs.partition)


def test_empty_qos_is_normal(tmp_path, cluster):
    text = HEADER + ",qos\n1,0,10,5,1,1,1,0,batch,u,a,\n2,0,10,5,1,1,1,0,batch,u,a,high\n"
    w = read_workload(_csv(tmp_path, text), cluster)
    assert [w.qos_names[q] for q in w.qos] == ["normal", "high"]


# ----------------------------------------------------------------------------- errors

BASE = "1,0,100,50,1,1,1,0,batch,u,a,,\n"
BAD = [
    ("unknown job", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterok:99,\n", 3, "dependency",
     "unknown job id '99'"),
    ("unknown task", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterok:1_0,\n", 3, "dependency",
     "unknown job id '1_0'"),
    ("later job", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterok:3,\n"
     "3,2,100,50,1,1,1,0,batch,u,a,,\n", 3, "dependency", "submitted after it"),
    ("itself", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterany:2,\n", 3, "dependency",
     "depends on itself"),
    ("own array", "1,0,100,50,1,1,1,0,batch,u,a,afterok:1,0-3\n", 2, "dependency",
     "depends on itself"),
    ("any", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterok:1?afterany:1,\n", 3, "dependency",
     "'?'"),
    ("delay", BASE + "2,1,100,50,1,1,1,0,batch,u,a,after:1+10,\n", 3, "dependency",
     "'+minutes' delay"),
    ("aftercorr", BASE + "2,1,100,50,1,1,1,0,batch,u,a,aftercorr:1,\n", 3, "dependency",
     "not modelled"),
    ("bad type", BASE + "2,1,100,50,1,1,1,0,batch,u,a,afterfoo:1,\n", 3, "dependency",
     "unknown dependency type"),
    ("bad array", BASE + "2,1,100,50,1,1,1,0,batch,u,a,,0-\n", 3, "array", "bad entry"),
    ("bad %", BASE + "2,1,100,50,1,1,1,0,batch,u,a,,0-3%0\n", 3, "array", "%-limit"),
    ("array ids", "1,0,100,50,1,1,1,0,batch,u,a,,0-3\n3,1,100,50,1,1,1,0,batch,u,a,,\n",
     3, "job_id", "array task ids"),
    ("partition", BASE + '2,1,100,50,1,1,1,0,"batch,gpu",u,a,,\n', 3, "partition", "'gpu'"),
    ("partition twice", BASE + '2,1,100,50,1,1,1,0,"batch, batch",u,a,,\n', 3, "partition",
     "twice"),
    ("empty partition", BASE + '2,1,100,50,1,1,1,0,"batch,",u,a,,\n', 3, "partition",
     "empty partition"),
]


@pytest.mark.parametrize("label, rows, line, field, words", BAD, ids=[b[0] for b in BAD])
def test_bad_rows_name_file_line_and_column(tmp_path, cluster, label, rows, line, field, words):
    path = _csv(tmp_path, HEADER + ",dependency,array\n" + rows)
    with pytest.raises(InputError) as e:
        read_workload(path, cluster)
    assert (e.value.file, e.value.line, e.value.field) == (str(path), line, field)
    assert words in str(e.value)


def test_task_columns_must_come_together(tmp_path, cluster):
    text = HEADER + ",array_job_id,array_task_id\n1,0,10,5,1,1,1,0,batch,u,a,1,\n"
    with pytest.raises(InputError) as e:
        read_workload(_csv(tmp_path, text), cluster)
    assert e.value.line == 2 and e.value.field == "array_task_id"
    text = HEADER + ",array_job_id,array_task_id\n1,0,10,5,1,1,1,0,batch,u,a,7,0\n" \
        "7,0,10,5,1,1,1,0,batch,u,a,,\n"
    with pytest.raises(InputError, match="also an array job id"):
        read_workload(_csv(tmp_path, text), cluster)
    head = HEADER + ",array_job_id,array_task_id,array_task_throttle\n"
    text = head + "1,0,10,5,1,1,1,0,batch,u,a,1,0,\n2,0,10,5,1,1,1,0,batch,u,a,1,0,\n"
    with pytest.raises(InputError, match="task 0 of array 1 appears more than once") as e:
        read_workload(_csv(tmp_path, text), cluster)
    assert (e.value.line, e.value.field) == (3, "array_task_id")
    text = head + "1,0,10,5,1,1,1,0,batch,u,a,1,0,2\n2,0,10,5,1,1,1,0,batch,u,a,1,1,3\n"
    with pytest.raises(InputError, match="different array_task_throttle"):
        read_workload(_csv(tmp_path, text), cluster)


def test_workload_checks_its_parts(cluster):
    w = ai_mix(cluster, 20, seed=2)
    parts = dict(jobs=w.jobs, account=w.account, user_names=w.user_names,
                 account_names=w.account_names, org_of_account=w.org_of_account,
                 org_names=w.org_names)
    wrong_first = PartitionChoices.single((w.jobs.partition + 1) % 2)
    with pytest.raises(InputError, match="first partition"):
        Workload(**parts, partitions=wrong_first)
    with pytest.raises(InputError, match="both"):
        Workload(**parts, array_job=np.zeros(20), array_task=np.full(20, -1))
    with pytest.raises(InputError, match="qos index"):
        Workload(**parts, qos=np.ones(20))
    with pytest.raises(InputError, match="dependencies has 3"):
        Workload(**parts, dependencies=Dependencies.none(3))


# ----------------------------------------------------------------------------- fast == naive

@st.composite
def submitted_rows(draw):
    """Rows with arrays, dependencies (mostly valid, sometimes not), partition lists."""
    m = draw(st.integers(1, 9))
    rows, submit = [], 0
    for r in range(m):
        submit += draw(st.integers(0, 2))
        rows.append(dict(
            job_id=100 * (r + 1) + draw(st.integers(0, 3)), submit_time=submit,
            user=draw(st.sampled_from(["u1", "u2"])), name=draw(st.sampled_from(["", "x", "y"])),
            qos=draw(st.sampled_from(["", "normal", "high"])),
            partition=draw(st.sampled_from([["batch"], ["interactive"], ["batch", "interactive"],
                                            ["interactive", "batch"]])),
            array=draw(st.sampled_from(["", "", "", "0-2", "1,3,5%2", "0-6:3%1", "7"])),
            dependency=""))
    for r, row in enumerate(rows):
        items = []
        for _ in range(draw(st.integers(0, 2 if r else 1))):
            if r == 0 or draw(st.integers(0, 5)) == 0:
                items.append("singleton")
                continue
            tokens = []
            for _ in range(draw(st.integers(1, 2))):
                late = draw(st.integers(0, 19)) == 0
                target = rows[draw(st.integers(0, m - 1 if late else r - 1))]
                how = draw(st.sampled_from(["id", "id", "task", "task id", "unknown"]))
                if how == "task" and target["array"]:
                    tokens.append(f"{target['job_id']}_{draw(st.sampled_from([0, 1, 3, 6]))}")
                elif how == "task id":
                    tokens.append(str(target["job_id"] + draw(st.integers(0, 1))))
                elif how == "unknown" and draw(st.integers(0, 3)) == 0:
                    tokens.append("99999")
                else:
                    tokens.append(str(target["job_id"]))
            kind = draw(st.sampled_from(naive.KINDS))
            items.append(kind + ":" + ":".join(tokens))
        row["dependency"] = ",".join(items)
    return draw(st.permutations(rows))


@settings(max_examples=90, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=submitted_rows())
def test_fast_reader_matches_naive(tmp_path, rows):
    try:
        want = naive.build(rows)
    except ValueError:
        with pytest.raises(InputError):
            _read_rows(tmp_path, rows)
        return
    w = _read_rows(tmp_path, rows)
    assert len(w) == len(want)
    for i, job in enumerate(want):
        assert w.jobs.job_id[i] == job["job_id"]
        assert (w.array_job[i], w.array_task[i]) == (job["array_job"], job["array_task"])
        assert w.qos_names[w.qos[i]] == (job["qos"] or "normal")
        assert w.name[i] == job["name"] and w.user_names[w.jobs.user[i]] == job["user"]
        assert _partitions(w, i) == job["partition"]
        assert _edges(w, i) == job["edges"]
    throttle = array_throttle(w.limits) if len(w.limits.caps) else np.zeros(len(w))
    assert throttle.tolist() == [j["throttle"] for j in want]
    # one group per throttled array: same group <=> same array
    g = {i: int(w.limits.group[w.limits.offsets[i]]) for i in range(len(w)) if throttle[i]}
    for i in g:
        for k in g:
            assert (g[i] == g[k]) == (want[i]["array_job"] == want[k]["array_job"])


@settings(max_examples=48, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=submitted_rows())
def test_write_read_round_trip(tmp_path, rows):
    try:
        w = _read_rows(tmp_path, rows)
    except InputError:
        return
    write_workload(w, CLUSTER, tmp_path / "out.csv")
    r = read_workload(tmp_path / "out.csv", CLUSTER)
    for f in ("job_id", "submit_time", "time_limit", "runtime", "partition", "user"):
        assert np.array_equal(getattr(w.jobs, f), getattr(r.jobs, f))
    for f in ("account", "name", "array_job", "array_task"):
        assert np.array_equal(getattr(w, f), getattr(r, f))
    assert [w.qos_names[q] for q in w.qos] == [r.qos_names[q] for q in r.qos]
    for a, b in ((w.dependencies, r.dependencies), (w.partitions, r.partitions),
                 (w.limits, r.limits)):
        assert type(a) is type(b)
        for f in a.__dataclass_fields__:
            x, y = getattr(a, f), getattr(b, f)
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
    write_workload(r, CLUSTER, tmp_path / "again.csv")
    assert (tmp_path / "again.csv").read_text() == (tmp_path / "out.csv").read_text()


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=40))
def test_singleton_edges_mean_an_edge_to_every_earlier_job(jobs):
    key = np.array([k for k, _ in jobs], dtype=np.int64)
    single = np.array([s for _, s in jobs], dtype=bool)
    child, parent = singleton_edges(key, single)
    reduced = {}
    for c, p in zip(child.tolist(), parent.tolist()):
        reduced.setdefault(c, set()).add(p)
    rows = [dict(user=k, name="", singleton=s) for k, s in jobs]
    for j in range(len(jobs)):
        full = set(naive.singleton_parents(rows, j, full=True)) if single[j] else set()
        assert reduced.get(j, set()) == (set(naive.singleton_parents(rows, j))
                                         if single[j] else set())
        assert reduced.get(j, set()) <= full
        # every job a full edge names is ended before j can start, via the reduced edges
        seen, todo = set(), [j]
        while todo:
            for p in reduced.get(todo.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        assert full <= seen


def test_singleton_edges_are_linear():
    n = 20_000
    child, parent = singleton_edges(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
    assert len(child) == n - 1 and (parent == child - 1).all()


# ----------------------------------------------------------------------------- helpers

def test_constraint_helpers():
    d = dependencies_from_edges(4, [3, 1, 3, 3], [0, 0, 1, 0], [AFTERANY, 2, 2, AFTERANY])
    assert d.offsets.tolist() == [0, 0, 1, 1, 3] and d.parent.tolist() == [0, 0, 1]
    assert d.kind.tolist() == [2, AFTERANY, 2]
    offsets, index = csr_take(np.array([0, 2, 3, 6]), np.array([2, 0, 2]))
    assert offsets.tolist() == [0, 3, 5, 8] and index.tolist() == [3, 4, 5, 0, 1, 3, 4, 5]
    g = array_limit_groups([-1, 7, 7, 3, 3], [0, 2, 2, 0, 0])
    assert g.offsets.tolist() == [0, 0, 1, 2, 2, 2] and g.caps[:, 0].tolist() == [2]
    assert array_throttle(g).tolist() == [0, 2, 2, 0, 0]
    with pytest.raises(InputError, match="different %max"):
        array_limit_groups([7, 7], [2, 3])
    qos = LimitGroups(np.array([0, 1]), np.array([0]), np.full((1, 5), 4),
                      [("QOSMaxJobsPerUserLimit",) * 5])
    with pytest.raises(InputError, match="not an array task limit"):
        array_throttle(qos)


# ----------------------------------------------------------------------------- sbatch

def test_requests_to_workload_matches_the_csv(tmp_path, cluster):
    argvs = [["-t", "10", "--array=0-3%2", "-J", "train", "-p", "batch"],
             ["-t", "10", "-p", "interactive,batch", "--qos=high", "-J", "eval",
              "--dependency=afterok:1,afterany:2"],
             ["-t", "10", "-J", "train", "--dependency=singleton", "-A", "proj"],
             ["-t", "10", "-J", "train", "--dependency=afternotok:1_2"]]
    items = [(normalise(parse_args(a), cluster), 5 * i, 60) for i, a in enumerate(argvs)]
    w = requests_to_workload(items, cluster)
    assert w.jobs.job_id.tolist() == [1, 2, 3, 4, 5, 6, 7]        # Slurm: one id per task
    text = HEADER + """,qos,name,dependency,array
1,0,600,60,1,0,1,0,batch,user,root,,train,,0-3%2
5,5,600,60,1,0,1,0,"interactive,batch",user,root,high,eval,"afterok:1,afterany:2",
6,10,600,60,1,0,1,0,batch,user,proj,,train,singleton,
7,15,600,60,1,0,1,0,batch,user,root,,train,afternotok:1_2,
"""
    r = read_workload(_csv(tmp_path, text), cluster)
    for f in ("job_id", "submit_time", "time_limit", "runtime", "partition"):
        assert np.array_equal(getattr(w.jobs, f), getattr(r.jobs, f)), f
    assert [w.account_names[a] for a in w.account] == [r.account_names[a] for a in r.account]
    assert [w.qos_names[q] for q in w.qos] == [r.qos_names[q] for q in r.qos]
    assert w.name.tolist() == r.name.tolist()
    assert all(_edges(w, i) == _edges(r, i) for i in range(len(w)))
    assert w.limits.offsets.tolist() == r.limits.offsets.tolist()
    assert np.array_equal(w.partitions.partition, r.partitions.partition)


def test_requests_to_workload_rejects_what_it_cannot_model(cluster):
    ok = (normalise(parse_args(["-t", "10"]), cluster), 0, 5)
    anyof = (normalise(parse_args(["-t", "10", "--dependency=afterok:1?afterany:1"]),
                       cluster), 1, 5)
    with pytest.raises(InputError) as e:
        requests_to_workload([ok, anyof], cluster)
    assert e.value.file == "request 1" and e.value.field == "dependency"
    unknown = (normalise(parse_args(["-t", "10", "--dependency=afterok:9"]), cluster), 1, 5)
    with pytest.raises(InputError, match="unknown job id '9'"):
        requests_to_workload([ok, unknown], cluster)


# ----------------------------------------------------------------------------- simulator

def test_example_in_the_simulator(tmp_path, cluster):
    """The engine honours what the reader built: %2, afterok on a whole array,
    singleton, and afternotok on a task that COMPLETED (never satisfied)."""
    from fastsched.sim.simulator import simulate
    w = read_workload(_csv(tmp_path, EXAMPLE), cluster)
    r = simulate(cluster, w.jobs, "easy", dependencies=w.dependencies,
                 partitions=w.partitions, limits=w.limits)
    s = r.schedule
    assert s.job_id.tolist() == w.jobs.job_id.tolist()
    assert s.start_time.tolist() == [0, 0, 50, 50, 100, 100, -1, -1, -1]


def test_oversized_rows_are_skipped_and_later_errors_keep_their_lines(tmp_path):
    cluster = ai_cluster("ai-8k")
    head = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
            "mem_per_node,partition,user,account,dependency,array\n")
    rows = ["1,0,100,50,1,8,1,10,batch,u,a,,0-1",
            "5,1,100,50,99999,8,1,10,\"batch,interactive\",u,a,,",   # more nodes than any
            "6,2,100,50,1,8,1,10,batch,u,a,afterok:1,"]
    p = tmp_path / "w.csv"
    p.write_text(head + "\n".join(rows) + "\n")
    w = read_workload(p, cluster)
    assert [(s.job_id, s.line) for s in w.skipped] == [(5, 3)]
    assert w.jobs.job_id.tolist() == [1, 2, 6]
    assert w.dependencies.parent[w.dependencies.offsets[2]:].tolist() == [0, 1]
    with pytest.raises(InputError, match="can never run") as e:
        read_workload(p, cluster, strict=True)
    assert e.value.line == 3
    p.write_text(head + "\n".join(rows) + "\n7,3,100,50,1,8,1,10,batch,u,a,afterok:99,\n")
    with pytest.raises(InputError) as e:
        read_workload(p, cluster)
    assert e.value.line == 5 and e.value.field == "dependency"

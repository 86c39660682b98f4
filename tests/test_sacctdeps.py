"""A sacct dump's Dependency column (io.sacctdeps): Slurm's printed form (states,
arrays, ``?``, ``+minutes``, singleton), edges into the workload, jobs outside the
dump counted in a warning, malformed values naming file:line:field. No engine run."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.io.sacct import read_sacct
from fastsched.io.sacctdeps import ALL_TASKS, parse_recorded_dependency
from fastsched.model.constraints import AFTERANY, AFTEROK
from fastsched.model.errors import ConfigWarning, InputError

CONF = """\
NodeName=c[01-04] CPUs=8 RealMemory=64000
PartitionName=cpu Nodes=c[01-04] Default=YES MaxTime=2-0
"""
HEADER = "JobID|JobIDRaw|User|Submit|Eligible|Start|End|Timelimit|AllocTRES|NNodes|NodeList|" \
         "State|Dependency"


def row(jobid, raw, submit, eligible, start, end, dep=""):
    t = lambda m: f"2024-03-01T10:{m:02d}:00"
    return (f"{jobid}|{raw}|u|{t(submit)}|{t(eligible)}|{t(start)}|{t(end)}|01:00:00|"
            f"cpu=1,node=1|1|c01|COMPLETED|{dep}")


def read(tmp_path, rows, **kw):
    (tmp_path / "slurm.conf").write_text(CONF)
    cluster = fs.read_cluster(tmp_path / "slurm.conf")
    path = tmp_path / "sacct.txt"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = read_sacct(path, cluster, **kw)
    return log, [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]


def edges(w):
    d, ids = w.dependencies, w.jobs.job_id
    child = np.repeat(np.arange(len(ids)), np.diff(d.offsets))
    return sorted((int(ids[c]), int(ids[p]), int(k)) for c, p, k in
                  zip(child, d.parent, d.kind))


def test_parse_slurms_printed_form():
    d = parse_recorded_dependency("afterok:123(unfulfilled),afterany:124_*(failed),"
                                  "afterok:125_7(unfulfilled)")
    assert d.exact and d.refs == [("afterok", 123, -1), ("afterany", 124, ALL_TASKS),
                                  ("afterok", 125, 7)]
    assert parse_recorded_dependency("afterok:12:13").refs == [("afterok", 12, -1),
                                                                ("afterok", 13, -1)]
    for inexact in ("afterok:1(unfulfilled)?afterany:2(unfulfilled)", "after:5+10(unfulfilled)",
                    "singleton(unfulfilled)", "aftercorr:9(unfulfilled)"):
        assert not parse_recorded_dependency(inexact).exact
    for none in ("", "None", "(null)"):
        assert parse_recorded_dependency(none) is None
    for bad in ("afterok", "afterwards:1", "afterok:x1", "singleton:3", "afterok:1(un"):
        with pytest.raises(InputError):
            parse_recorded_dependency(bad)


def test_edges_arrays_and_submit_times(tmp_path):
    log, said = read(tmp_path, [
        row(10, 10, 0, 0, 0, 5),
        row("20_0", 21, 1, 1, 1, 6), row("20_1", 20, 1, 1, 2, 7),
        row(30, 30, 2, 6, 6, 9, "afterok:10(unfulfilled),afterany:20_*(unfulfilled)"),
        row(31, 31, 3, 7, 7, 9, "afterok:20_1(unfulfilled)"),
        row(32, 32, 3, 7, 7, 9, "afterany:20(unfulfilled)"),          # array id: all tasks
        row(33, 33, 4, 8, 8, 9, "afterok:999(unfulfilled)"),          # outside the dump
        row(34, 34, 4, 8, 8, 9, "afterok:10(unfulfilled)?afterok:30(unfulfilled)"),
    ])
    w = log.workload
    assert edges(w) == [(30, 10, AFTEROK), (30, 20, AFTERANY), (30, 21, AFTERANY),
                        (31, 20, AFTEROK), (32, 20, AFTERANY), (32, 21, AFTERANY)]
    submit = dict(zip(w.jobs.job_id.tolist(), w.jobs.submit_time.tolist()))
    t0 = submit[10]
    assert submit[30] - t0 == 120 and submit[31] - t0 == 180     # Submit: the wait is replayed
    assert submit[33] - t0 == 480 and submit[34] - t0 == 480     # Eligible: kept
    assert log.dependency.tolist().count("afterok:999(unfulfilled)") == 1
    assert said == ["%s: 2 job(s) keep their recorded Eligible time instead of replaying their "
                    "dependencies: 1 with a dependency the engine cannot express (?, +minutes, "
                    "singleton, aftercorr, ...); 1 reference(s) to jobs outside the dump (or "
                    "left out)" % (tmp_path / "sacct.txt")]


def test_no_dependency_column_or_values(tmp_path):
    log, said = read(tmp_path, [row(1, 1, 0, 0, 0, 1), row(2, 2, 0, 0, 1, 2, "None")])
    assert len(log.workload.dependencies.parent) == 0 and not said


def test_malformed_dependency_names_file_line_field(tmp_path):
    rows = [row(1, 1, 0, 0, 0, 1), row(2, 2, 0, 0, 1, 2, "afterok:one")]
    with pytest.raises(InputError) as e:
        read(tmp_path, rows)
    assert (e.value.line, e.value.field) == (3, "Dependency")
    log, _ = read(tmp_path, rows, skip_bad=True)
    assert log.workload.jobs.job_id.tolist() == [1]
    assert log.skipped[0].line == 3 and "Dependency" in log.skipped[0].reason


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["after", "afterany", "afterok", "afternotok"]),
                          st.integers(1, 10**9), st.sampled_from([None, "*", 0, 17]),
                          st.sampled_from(["unfulfilled", "failed", "fulfilled", None])),
                min_size=1, max_size=6), st.sampled_from([",", "?"]))
def test_parse_any_printed_list(items, sep):
    text = sep.join(f"{k}:{j}" + ("" if t is None else f"_{t}") + ("" if s is None else f"({s})")
                    for k, j, t, s in items)
    d = parse_recorded_dependency(text)
    assert d.refs == [(k, j, -1 if t is None else ALL_TASKS if t == "*" else t)
                      for k, j, t, _ in items]
    assert d.exact == (sep == "," or len(items) == 1)


def naive_resolve(parsed, job_id, array_job, array_task, key):
    """The obvious loop: (sorted edges, replayed per job, counts)."""
    edges, replayed = set(), []
    inexact = outside = later = 0
    for k, dep in enumerate(parsed):
        ok = True
        if dep is not None:
            ok = dep.exact
            inexact += not dep.exact
            for name, job, task in ([] if dep.any else dep.refs):
                if task == ALL_TASKS or (task < 0 and job in set(array_job[array_job >= 0])):
                    rows = [p for p in range(len(job_id)) if array_job[p] == job]
                elif task < 0:
                    rows = [p for p in range(len(job_id)) if job_id[p] == job]
                else:
                    rows = [p for p in range(len(job_id))
                            if array_job[p] == job and array_task[p] == task]
                if not rows:
                    outside += 1
                    ok = False
                for p in rows:
                    if key[p] >= key[k]:
                        later += 1
                        ok = False
                    elif name in ("after", "afterany", "afterok", "afternotok"):
                        edges.add((k, p, name))
        replayed.append(ok)
    return sorted(edges), replayed


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_resolution_matches_the_naive_loop(data):
    """Vectorised resolve_dependencies == the obvious loop, on random jobs, arrays and
    references (in the dump or not, earlier or later, exact or not)."""
    from fastsched.io.sacctdeps import resolve_dependencies
    from fastsched.model.constraints import DEPENDENCY_KINDS
    n = data.draw(st.integers(1, 12))
    job_id = np.array(data.draw(st.lists(st.integers(1, 40), min_size=n, max_size=n,
                                         unique=True)), np.int64)
    is_task = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    array_job = np.where(is_task, np.array(data.draw(st.lists(st.sampled_from([3, 7]),
                                                              min_size=n, max_size=n))), -1)
    array_task = np.where(is_task, np.arange(n), -1)
    key = np.array(data.draw(st.permutations(range(n))), np.int64)
    ref = st.tuples(st.sampled_from(["afterok", "afterany", "after", "aftercorr"]),
                    st.integers(1, 42), st.sampled_from([-1, ALL_TASKS, 0, 1, 2, 5]))
    texts = data.draw(st.lists(st.one_of(st.none(), st.tuples(
        st.lists(ref, min_size=1, max_size=3), st.sampled_from([",", "?"]))),
        min_size=n, max_size=n))
    parsed = [None if t is None else parse_recorded_dependency(t[1].join(
        f"{kind}:{job}" + ("" if task == -1 else "_*" if task == ALL_TASKS else f"_{task}")
        for kind, job, task in t[0])) for t in texts]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        deps, replayed = resolve_dependencies(parsed, job_id, array_job, array_task, key, "x")
    names = {code: name for name, code in DEPENDENCY_KINDS.items()}
    child = np.repeat(np.arange(n), np.diff(deps.offsets))
    got = sorted((int(c), int(p), names[int(k)]) for c, p, k in zip(child, deps.parent,
                                                                       deps.kind))
    edges, expect = naive_resolve(parsed, job_id, array_job, array_task, key)
    assert got == edges and replayed.tolist() == expect

"""QOS / association limits: fixed examples with Slurm's reason names, twins on random input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.policy.config import AccountEntry, Limits, QOS, SchedulerConfig, UserEntry, parse_config
from fastsched.model.constraints import CAPS
from fastsched.model.errors import InputError
from fastsched.model.jobs import JobTable
from fastsched.policy.limits import blocked_reasons, compile_limits
from fastsched.io.workload import Workload

import naive_limits as naive


def make_workload(rows, users, accounts, qos_names=None):
    """rows: (user, account, qos, nodes, gpus/node, cpus/node, mem/node, time_limit)."""
    n = len(rows)
    col = lambda k: [r[k] for r in rows]  # noqa: E731
    jobs = JobTable.from_arrays(job_id=np.arange(n) + 1, submit_time=np.arange(n),
                                time_limit=col(7), runtime=10, num_nodes=col(3),
                                gpus_per_node=col(4), cpus_per_node=col(5),
                                mem_per_node=col(6), user=col(0))
    w = Workload(jobs, np.array(col(1), dtype=np.int32), list(users), list(accounts),
                 np.zeros(len(accounts), dtype=np.int32), ["org"])
    if qos_names is not None:
        w.qos = np.array(col(2), dtype=np.int32)
        w.qos_names = list(qos_names)
    return w


EXAMPLE = """
[[account]]
name = "phys"
GrpTRES = "gres/gpu=8"
MaxJobs = 3
users = ["ann"]

[[account]]
name = "bio"
MaxWallDurationPerJob = "1:00:00"
MaxTRESPerJob = "cpu=64"

[[user]]
name = "bob"
account = "phys"
MaxJobs = 1

[qos.normal]

[qos.high]
Priority = 10
MaxJobsPerUser = 2
MaxTRESPerUser = "gres/gpu=4"
MaxWallDurationPerJob = "2:00:00"
"""


def example():
    cfg = parse_config(EXAMPLE, source="ex.toml")
    rows = [  # user, account, qos, nodes, gpn, cpn, mem, limit
        (0, 0, 0, 1, 4, 8, 0, 3600),      # ann/phys normal
        (0, 0, 0, 1, 4, 8, 0, 3600),
        (1, 0, 0, 1, 2, 8, 0, 3600),      # bob/phys normal: MaxJobs 1 (own)
        (1, 0, 1, 1, 2, 8, 0, 3600),      # bob/phys high: QOS MaxJobsPerUser overrides
        (0, 1, 0, 1, 0, 8, 0, 7200),      # ann/bio: 2 h > assoc MaxWall 1 h
        (0, 1, 1, 1, 0, 8, 0, 7200),      # ann/bio high: QOS MaxWall 2 h wins -> fine
        (0, 1, 1, 1, 0, 8, 0, 9000),      # over the QOS MaxWall
        (0, 1, 0, 2, 0, 64, 0, 60),       # 128 CPUs > bio MaxTRESPerJob cpu=64
        (0, 0, 1, 1, 8, 8, 0, 60),        # 8 GPUs > QOS high MaxTRESPerUser gpu=4 alone
    ]
    w = make_workload(rows, ["ann", "bob"], ["phys", "bio"], ["normal", "high"])
    return cfg, w


def test_rejected_reasons_follow_precedence():
    cfg, w = example()
    groups, rej = compile_limits(cfg, w, None)
    got = dict(zip(rej.rows.tolist(), rej.reasons.tolist()))
    assert got == {4: "AssocMaxWallDurationPerJobLimit", 6: "QOSMaxWallDurationPerJobLimit",
                   7: "AssocMaxCpuPerJobLimit", 8: "QOSMaxGRESPerUser"}


def test_running_caps_and_reasons():
    cfg, w = example()
    groups, _ = compile_limits(cfg, w, None)
    # ann's two phys jobs use 8 GPUs: a third phys GPU job is held by the account's GrpTRES
    r = blocked_reasons(groups, w.jobs, [0, 1])
    assert r[2] == "AssocGrpGRES" and r[3] == "AssocGrpGRES"
    # bob has one normal job running: his own MaxJobs=1 holds the next normal one ...
    r = blocked_reasons(groups, w.jobs, [2])
    assert r[3] == ""                      # ... but not a high one (QOS MaxJobsPerUser wins)
    jobs2 = make_workload([(1, 0, 0, 1, 0, 1, 0, 60)] * 2, ["ann", "bob"], ["phys", "bio"],
                          ["normal", "high"])
    g2, _ = compile_limits(cfg, jobs2, None)
    assert blocked_reasons(g2, jobs2.jobs, [0])[1] == "AssocMaxJobsLimit"
    # ann (inherits phys MaxJobs=3) runs 3 zero-GPU jobs: the 4th is held
    jobs3 = make_workload([(0, 0, 0, 1, 0, 1, 0, 60)] * 4, ["ann", "bob"], ["phys", "bio"])
    g3, _ = compile_limits(cfg, jobs3, None)
    assert blocked_reasons(g3, jobs3.jobs, [0, 1, 2])[3] == "AssocMaxJobsLimit"
    assert blocked_reasons(g3, jobs3.jobs, [0, 1])[3] == ""


def test_qos_per_user_jobs():
    cfg, _ = example()
    w = make_workload([(0, 1, 1, 1, 0, 1, 0, 60)] * 3, ["ann", "bob"], ["phys", "bio"],
                      ["normal", "high"])
    g, rej = compile_limits(cfg, w, None)
    assert len(rej.rows) == 0
    assert blocked_reasons(g, w.jobs, [0, 1])[2] == "QOSMaxJobsPerUserLimit"


def test_unknown_qos_and_account():
    cfg, w = example()
    w.qos_names = ["normal", "nope"]
    with pytest.raises(InputError, match="unknown QOS 'nope'"):
        compile_limits(cfg, w, None)
    w2 = make_workload([(0, 0, 0, 1, 0, 1, 0, 60)], ["ann"], ["chem"])
    with pytest.raises(InputError, match="unknown account 'chem'"):
        compile_limits(cfg, w2, None)


def test_bad_qos_codes():
    cfg, w = example()
    w.qos = w.qos + 5
    with pytest.raises(InputError, match="indices into qos_names"):
        compile_limits(cfg, w, None)


def test_no_qos_column_means_normal():
    cfg, w = example()
    del w.qos, w.qos_names
    assert (cfg.job_qos(w) == cfg.qos_names.index("normal")).all()


def test_node_in_running_cap_is_an_error():
    cfg = parse_config('[qos.q]\nGrpTRES = "node=4"\n', source="c.toml")
    w = make_workload([(0, 0, 0, 1, 0, 1, 0, 60)], ["u"], ["a"], ["q"])
    with pytest.raises(InputError, match="node= is not supported"):
        compile_limits(cfg, w, None)


def test_million_jobs_compile():
    """A million jobs compile, one group list per job."""
    cfg, _ = example()
    n = 1_000_000
    rng = np.random.default_rng(0)
    rows_u = rng.integers(0, 2, n)
    jobs = JobTable.from_arrays(job_id=np.arange(n), submit_time=np.arange(n), time_limit=60,
                                runtime=1, num_nodes=1, gpus_per_node=rng.integers(0, 3, n),
                                cpus_per_node=4, user=rows_u)
    w = Workload(jobs, rng.integers(0, 2, n).astype(np.int32), ["ann", "bob"], ["phys", "bio"],
                 np.zeros(2, np.int32), ["org"])
    w.qos, w.qos_names = rng.integers(0, 2, n).astype(np.int32), ["normal", "high"]
    groups, _ = compile_limits(cfg, w, None)
    assert len(groups) == n


# ---------------------------------------------------------------- twins on random input

def _limits(draw, qos: bool):
    tres = st.dictionaries(st.sampled_from(["cpu", "mem", "gres/gpu"]), st.integers(0, 12),
                           max_size=2)
    opt = st.one_of(st.none(), st.integers(0, 4))
    return Limits(GrpTRES=draw(tres), GrpJobs=draw(opt), GrpSubmitJobs=draw(opt),
                  MaxTRESPerJob=draw(st.dictionaries(
                      st.sampled_from(["cpu", "mem", "node", "gres/gpu"]), st.integers(0, 12),
                      max_size=2)),
                  MaxTRESPerUser=draw(tres) if qos else {}, MaxJobs=draw(opt),
                  MaxSubmitJobs=draw(opt),
                  MaxWallDurationPerJob=draw(st.one_of(st.none(), st.integers(1, 100))))


@st.composite
def scenarios(draw):
    n_acct = draw(st.integers(1, 4))
    accts = [f"a{k}" for k in range(n_acct)]
    entries = []
    for k, a in enumerate(accts):
        parent = "root" if k == 0 else draw(st.sampled_from(["root"] + accts[:k]))
        lim = _limits(draw, False) if draw(st.booleans()) else Limits()
        entries.append(AccountEntry(a, parent, 1, (), lim))
    users = ["u0", "u1", "u2"]
    n_qos = draw(st.integers(1, 3))
    qos = {"normal": QOS("normal", 0, 1.0, _limits(draw, True) if draw(st.booleans())
                         else Limits())}
    for k in range(1, n_qos):
        qos[f"q{k}"] = QOS(f"q{k}", k, 1.0, _limits(draw, True))
    user_entries = []
    for a in accts:
        for u in users:
            if draw(st.integers(0, 4)) == 0:
                user_entries.append(UserEntry(u, a, 1, _limits(draw, False)))
    cfg = SchedulerConfig(qos=qos, accounts=entries, users=user_entries)
    n = draw(st.integers(0, 25))
    rows = [(draw(st.integers(0, 2)), draw(st.integers(0, n_acct - 1)),
             draw(st.integers(0, n_qos - 1)), draw(st.integers(1, 3)), draw(st.integers(0, 4)),
             draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(1, 120)))
            for _ in range(n)]
    w = make_workload(rows, users, accts, list(qos))
    running = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return cfg, w, np.array(running, dtype=bool)


def _fast_entries(groups, n):
    members = {}
    for i in range(n):
        for g in groups.group[groups.offsets[i]:groups.offsets[i + 1]].tolist():
            members.setdefault(g, set()).add(i)
    out = []
    for i in range(n):
        out.append([(tuple(groups.caps[g].tolist()), tuple(groups.reasons[g]),
                     frozenset(members[g]))
                    for g in groups.group[groups.offsets[i]:groups.offsets[i + 1]].tolist()])
    return out


def _naive_entries(per_job):
    members = {}
    for i, entries in enumerate(per_job):
        for key, _, _ in entries:
            members.setdefault(key, set()).add(i)
    return [[(tuple(caps), tuple(reasons), frozenset(members[key]))
             for key, caps, reasons in entries] for entries in per_job]


@settings(max_examples=105, deadline=None)
@given(scenarios())
def test_compile_matches_naive(sc):
    cfg, w, running = sc
    tree = cfg.build_tree(w)
    groups, rej = compile_limits(cfg, w, None, tree=tree)
    per_job = naive.naive_groups(cfg, tree, w)
    assert _fast_entries(groups, len(w)) == _naive_entries(per_job)
    assert dict(zip(rej.rows.tolist(), rej.reasons.tolist())) == \
        naive.naive_rejected(cfg, tree, w, per_job)
    run_rows = set(np.flatnonzero(running).tolist())
    fast = blocked_reasons(groups, w.jobs, running)
    assert fast.tolist() == [naive.naive_blocked(per_job, w.jobs, run_rows, i)
                             for i in range(len(w))]
    assert groups.caps.shape[1] == len(CAPS)


def test_a_twin_that_can_fail():
    # the comparison above is not vacuous: a wrong cap changes the blocked reason
    cfg, w = example()
    groups, _ = compile_limits(cfg, w, None)
    per_job = naive.naive_groups(cfg, cfg.build_tree(w), w)
    assert any(per_job)
    groups.caps[:, 1] = -1                 # drop every GPU cap
    fast = blocked_reasons(groups, w.jobs, [0, 1])
    assert fast[2] != naive.naive_blocked(per_job, w.jobs, {0, 1}, 2)

"""Multifactor priority: hand-checked cases, twin on random jobs, research orders, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.model.errors import InputError
from fastsched.model.jobs import JobTable
from fastsched.policy.priority import (PriorityWeights, multifactor, research_order, research_queue,
                                TRES_NAMES)

import naive_priority as naive


def table(**cols):
    n = len(cols["submit_time"])
    base = dict(job_id=np.arange(1, n + 1), time_limit=3600, runtime=60, num_nodes=1)
    base.update(cols)
    return JobTable.from_arrays(**base)


def test_age_factor_and_truncation():
    jobs = table(submit_time=[0, 500, 1000, 2000])
    w = PriorityWeights(PriorityWeightAge=1000, PriorityMaxAge=1000)
    # age = min(now - submit, max_age) / max_age; 0 before submit; at least 1
    got = multifactor(jobs, 1000, w)
    assert got.tolist() == [1000, 500, 1, 1]
    w3 = PriorityWeights(PriorityWeightAge=10, PriorityMaxAge=3)
    assert multifactor(table(submit_time=[0]), 1, w3).tolist() == [3]   # 3.33 truncated


def test_job_size_factor_both_directions():
    # 10 nodes, 100 CPUs: a 2-node, 20-CPU job has size (2/10 + 20/100) / 2 = 0.2
    jobs = table(submit_time=[0], num_nodes=[2], cpus_per_node=[10])
    big = PriorityWeights(PriorityWeightJobSize=1000)
    small = PriorityWeights(PriorityWeightJobSize=1000, PriorityFavorSmall=True)
    assert multifactor(jobs, 0, big, total_nodes=10, total_cpus=100).tolist() == [200]
    assert multifactor(jobs, 0, small, total_nodes=10, total_cpus=100).tolist() == [800]


def test_all_factors_site_nice_clamp():
    jobs = table(submit_time=[0, 0, 0], partition=[0, 1, 0], gpus_per_node=[4, 0, 8],
                 mem_per_node=[1000, 0, 0])
    w = PriorityWeights(PriorityWeightFairshare=10000, PriorityWeightPartition=1000,
                        PriorityWeightQOS=100, PriorityWeightTRES={"GRES/gpu": 800, "Mem": 10})
    got = multifactor(jobs, 0, w, fairshare=[0.5, 1.0, 0.25], partition_factor=[1.0, 0.5],
                      qos_factor=[0.0, 1.0, 0.5], site=[7, 0, 0], nice=[0, 0, 10 ** 6],
                      tres_totals={"GRES/gpu": 16, "Mem": 4000})
    # job 0: 5000 + 1000 + 0 + 7 + 800 * 4/16 + 10 * 1000/4000 = 6209.5 -> 6209
    # job 1: 10000 + 500 + 100 = 10600; job 2: huge nice -> clamped to 1
    assert got.tolist() == [6209, 10600, 1]


def test_cap_at_uint32():
    w = PriorityWeights(PriorityWeightFairshare=4294967295, PriorityWeightQOS=4294967295)
    got = multifactor(table(submit_time=[0]), 0, w, fairshare=1.0, qos_factor=1.0)
    assert got.tolist() == [4294967295]


def test_fairshare_gathered_per_association():
    jobs = table(submit_time=[0, 0, 0, 0])
    w = PriorityWeights(PriorityWeightFairshare=1000)
    got = multifactor(jobs, 0, w, fairshare=np.array([0.25, 1.0]),
                      fairshare_index=[1, 0, 0, 1])
    assert got.tolist() == [1000, 250, 250, 1000]


def test_cluster_defaults():
    from fastsched.tools.generate import ai_cluster
    cluster = ai_cluster("ai-8k")
    jobs = table(submit_time=[0], num_nodes=[500], gpus_per_node=[8], cpus_per_node=[112])
    w = PriorityWeights(PriorityWeightJobSize=1000, PriorityWeightTRES={"GRES/gpu": 1000})
    assert multifactor(jobs, 0, w, cluster=cluster).tolist() == [500 + 500]


# ---------------------------------------------------------------- twin on random jobs
@st.composite
def cases(draw):
    n = draw(st.integers(1, 30))
    ints = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=n, max_size=n)
    jobs = dict(submit_time=draw(ints(0, 50)), num_nodes=draw(ints(1, 8)),
                cpus_per_node=draw(ints(0, 4)), gpus_per_node=draw(ints(0, 4)),
                mem_per_node=draw(ints(0, 3)), partition=draw(ints(0, 1)))
    unit = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1 / 3])
    extra = dict(fairshare=draw(st.lists(unit, min_size=n, max_size=n)),
                 qos=draw(st.lists(unit, min_size=n, max_size=n)),
                 site=draw(ints(-5, 5)), nice=draw(ints(-5, 5)))
    weight = st.sampled_from([0, 1, 7, 1000, 4294967295])
    w = PriorityWeights(
        PriorityWeightAge=draw(weight), PriorityWeightFairshare=draw(weight),
        PriorityWeightJobSize=draw(weight), PriorityWeightPartition=draw(weight),
        PriorityWeightQOS=draw(weight), PriorityMaxAge=draw(st.integers(1, 60)),
        PriorityFavorSmall=draw(st.booleans()),
        PriorityWeightTRES={t: draw(st.sampled_from([0, 0.5, 3])) for t in TRES_NAMES})
    part = [draw(unit), draw(unit)]
    return jobs, extra, w, part, draw(st.integers(0, 80))


@settings(max_examples=210, deadline=None)
@given(cases())
def test_multifactor_matches_twin(case):
    cols, extra, w, part, now = case
    jobs = table(**cols)
    totals = {"CPU": [40, 0], "Mem": [20, 30], "Node": 16, "GRES/gpu": [8, 64]}
    got = multifactor(jobs, now, w, fairshare=extra["fairshare"], partition_factor=part,
                      qos_factor=extra["qos"], site=extra["site"], nice=extra["nice"],
                      total_nodes=16, total_cpus=40, tres_totals=totals)
    wd = dict(age=w.PriorityWeightAge, fs=w.PriorityWeightFairshare,
              js=w.PriorityWeightJobSize, part=w.PriorityWeightPartition,
              qos=w.PriorityWeightQOS, max_age=w.PriorityMaxAge,
              favor_small=w.PriorityFavorSmall, tres=w.PriorityWeightTRES)
    want = []
    for i in range(len(jobs)):
        p = cols["partition"][i]
        job = dict(submit=cols["submit_time"][i], num_nodes=cols["num_nodes"][i],
                   cpus_per_node=cols["cpus_per_node"][i], mem_per_node=cols["mem_per_node"][i],
                   gpus_per_node=cols["gpus_per_node"][i], fairshare=extra["fairshare"][i],
                   partition_factor=part[p], qos=extra["qos"][i], site=extra["site"][i],
                   nice=extra["nice"][i])
        tt = {k: (v[p] if isinstance(v, list) else v) for k, v in totals.items()}
        want.append(naive.multifactor_one(job, now, wd, 16, 40, tt))
    assert got.tolist() == want


# ---------------------------------------------------------------- research orders
def test_research_orders():
    jobs = table(submit_time=[10, 100, 1000], time_limit=[100, 10, 1000],
                 num_nodes=[1, 4, 2])
    now = 1100
    assert research_queue("FCFS", jobs, now).tolist() == [0, 1, 2]
    assert research_queue("sjf", jobs, now).tolist() == [1, 0, 2]
    w = np.array([1090.0, 1000.0, 100.0])
    r = np.array([100.0, 10.0, 1000.0])
    n = np.array([1.0, 4.0, 2.0])
    s = np.array([10.0, 100.0, 1000.0])
    assert research_order("WFP3", jobs, now) == pytest.approx(-((w / r) ** 3) * n)
    uni = research_order("UNICEP", jobs, now)
    assert uni[0] == -np.inf and uni[1:] == pytest.approx(-w[1:] / (np.log2(n[1:]) * r[1:]))
    assert research_order("F1", jobs, now) == pytest.approx(np.log10(r) * n + 870 * np.log10(s))
    assert research_order("F2", jobs, now) == pytest.approx(np.sqrt(r) * n + 25600 * np.log10(s))
    assert research_order("F3", jobs, now) == pytest.approx(r * n + 6860000 * np.log10(s))
    assert research_order("F4", jobs, now) == pytest.approx(r * np.sqrt(n) + 530000 * np.log10(s))


def test_research_ties_break_by_submit_then_id():
    jobs = JobTable.from_arrays(job_id=[5, 3, 4], submit_time=[2, 1, 1], time_limit=[60] * 3,
                                runtime=1, num_nodes=1)
    assert research_queue("SJF", jobs, 10).tolist() == [1, 2, 0]


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, message", [
    (dict(PriorityWeightAge=-1), "PriorityWeightAge must be in 0..4294967295"),
    (dict(PriorityWeightQOS=2 ** 32), "PriorityWeightQOS must be in 0..4294967295"),
    (dict(PriorityWeightFairshare=1.5), "PriorityWeightFairshare must be an integer"),
    (dict(PriorityMaxAge=0), "PriorityMaxAge must be"),
    (dict(PriorityWeightTRES={"GPU": 1}), "unknown TRES 'GPU'"),
    (dict(PriorityWeightTRES={"CPU": -1}), "CPU=-1 must be in"),
    (dict(PriorityFavorSmall="yes"), "PriorityFavorSmall must be a bool"),
])
def test_bad_weights(kwargs, message):
    with pytest.raises(InputError, match=message):
        PriorityWeights(**kwargs)


def test_bad_call_arguments():
    jobs = table(submit_time=[0, 0])
    w = PriorityWeights(PriorityWeightFairshare=1, PriorityWeightJobSize=1)
    with pytest.raises(InputError, match=r"fairshare\[1\] = 1.5 is outside"):
        multifactor(jobs, 0, w, fairshare=[0.0, 1.5], total_nodes=1, total_cpus=1)
    with pytest.raises(InputError, match="needs cluster="):
        multifactor(jobs, 0, w)
    with pytest.raises(InputError, match="fairshare_index out of range"):
        multifactor(jobs, 0, w, fairshare=[0.5], fairshare_index=[0, 1], total_nodes=1,
                    total_cpus=1)
    with pytest.raises(InputError, match="unknown research order 'LJF'"):
        research_order("LJF", jobs, 0)

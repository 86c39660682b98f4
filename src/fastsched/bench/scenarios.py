"""Standard benchmark scenarios (:data:`SUMMARIES`; figures in benchmarks/RESULTS.md),
runnable in-process.

Each scenario prepares its input once, warms up, then times several runs and
reports the median: the machine is shared and noisy.
"""
from __future__ import annotations

import resource
import statistics
import time

from .machine import machine


def time_runs(fn, repeat: int) -> list[float]:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def _kth_easy(repeat: int) -> dict:
    """B4: the whole KTH-SP2 trace under EASY and conservative, in-process."""
    from ..model.cluster import Cluster
    from ..sim.simulator import simulate
    from ..io.swf import bundled_trace, read_swf
    trace = read_swf(bundled_trace("KTH-SP2"))
    cluster = Cluster.homogeneous(trace.procs)
    figures = {"scenario": "kth-easy (B4)", "jobs": len(trace.jobs), "processors": trace.procs}
    for policy in ("easy", "conservative"):
        times = time_runs(lambda: simulate(cluster, trace.jobs, policy), repeat)
        median = statistics.median(times)
        figures[f"{policy}_median_ms"] = round(1000 * median, 2)
        figures[f"{policy}_min_ms"] = round(1000 * min(times), 2)
        figures[f"{policy}_jobs_per_s"] = round(len(trace.jobs) / median)
        # one start decision per job over the whole replay
        figures[f"{policy}_decisions_per_s"] = round(len(trace.jobs) / median)
    figures["runs"] = repeat
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["machine"] = machine()
    return figures


def priority_1m_inputs(num_jobs: int = 1_000_000, num_users: int = 2_000, seed: int = 0):
    """B1's input: pending jobs of users in a root > 20 orgs > 200 accounts > users tree."""
    import numpy as np
    from ..policy.fairshare import AssociationTree, Usage
    from ..model.jobs import JobTable
    from ..policy.priority import PriorityWeights
    rng = np.random.default_rng(seed)
    edges = [("root", f"org{o:02d}", 1) for o in range(20)]
    edges += [(f"org{a // 10:02d}", f"acct{a:03d}", 1) for a in range(200)]
    edges += [(f"acct{u * 200 // num_users:03d}", f"user{u:04d}", 1) for u in range(num_users)]
    tree = AssociationTree.from_edges(edges)
    usage = Usage(tree)
    usage.add_usage(np.arange(num_users), {"CPU": rng.integers(0, 10**6, num_users).astype(float)})
    jobs = JobTable.from_arrays(
        job_id=np.arange(num_jobs), submit_time=rng.integers(0, 10**6, num_jobs), time_limit=3600,
        runtime=60, num_nodes=rng.integers(1, 64, num_jobs), cpus_per_node=112, gpus_per_node=8,
        mem_per_node=1000, partition=rng.integers(0, 2, num_jobs),
        user=rng.integers(0, num_users, num_jobs))
    weights = PriorityWeights(PriorityWeightAge=1000, PriorityWeightFairshare=10000,
                              PriorityWeightJobSize=100, PriorityWeightPartition=1000,
                              PriorityWeightQOS=500,
                              PriorityWeightTRES={"GRES/gpu": 100, "CPU": 10})
    options = dict(fairshare_index=jobs.user, partition_factor=[1.0, 0.5], qos_factor=0.5,
                   total_nodes=1000, total_cpus=112_000,
                   tres_totals={"GRES/gpu": 8000, "CPU": 112_000})
    return tree, usage, jobs, weights, options


def priority_1m_pass(tree, usage, jobs, weights, options):
    """One B1 pass: Fair Tree factors for every user, then every job's priority."""
    from ..policy.fairshare import fair_tree
    from ..policy.priority import multifactor
    return multifactor(jobs, 10**6, weights, fairshare=fair_tree(tree, usage), **options)


def _priority_1m(repeat: int) -> dict:
    """B1: multifactor priority with Fair Tree for 1,000,000 pending jobs of 2,000 users."""
    inputs = priority_1m_inputs()
    times = time_runs(lambda: priority_1m_pass(*inputs), repeat)
    median = statistics.median(times)
    return {"scenario": "priority-1m (B1)", "jobs": len(inputs[2]), "users": 2000,
            "median_ms": round(1000 * median, 2), "min_ms": round(1000 * min(times), 2),
            "jobs_per_s": round(len(inputs[2]) / median),
            "decisions_per_s": round(len(inputs[2]) / median),   # one priority per job
            "runs": repeat,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "machine": machine()}


def place_512_inputs(busy: float = 0.85, seed: int = 1):
    """``place-512``'s input: ai-100k with a seeded random ``1 - busy`` share of nodes free;
    the tree levels, and a block topology on the 32-node leaves (BlockSizes=32,128,512;
    the last, partial leaf is in no block)."""
    import numpy as np
    from ..tools.generate import ai_cluster
    from ..model.topology import BlockTopology, levels_array
    cluster = ai_cluster("ai-100k")
    rng = np.random.default_rng(seed)
    n = cluster.num_nodes
    free = np.sort(rng.choice(n, int(round(n * (1 - busy))), replace=False)).astype(np.int64)
    leaf = cluster.topology["leaf"].copy()
    counts = np.bincount(leaf)
    leaf[counts[leaf] < 32] = -1
    return cluster, levels_array(cluster.topology), BlockTopology(leaf, (32, 128, 512)), free


PLACE_CASES = (("tree", 0), ("tree --switches=64", 64), ("block", 0), ("block --segment=4", 4))


def _place_512(repeat: int) -> dict:
    """A 512-node job placed on ai-100k at 85% busy: tree (with and without a
    --switches limit) and block (with and without --segment), through the public
    wrappers on a prepared levels array; median microseconds per placement."""
    import numpy as np
    from ..engine.placement import place_block, place_tree
    cluster, levels, blocks, free = place_512_inputs()
    figures = {"scenario": "place-512", "nodes": cluster.num_nodes, "free_nodes": len(free)}
    for name, k in PLACE_CASES:
        if name.startswith("tree"):
            fn = lambda: place_tree(levels, free, 512, max_switches=k)  # noqa: E731
            groups = cluster.topology["leaf"]
        else:
            fn = lambda: place_block(blocks, free, 512, segment=k)  # noqa: E731
            groups = blocks.block_of_node
        nodes = fn()
        times = time_runs(fn, max(repeat, 25))
        key = name.replace(" --", "_").replace("=", "")
        figures[f"{key}_median_us"] = round(1e6 * statistics.median(times), 1)
        figures[f"{key}_groups_spanned"] = int(np.unique(groups[nodes]).size) if len(nodes) else 0
    figures["runs"] = max(repeat, 25)
    figures["machine"] = machine()
    return figures


def _easy_100k_topo(repeat: int) -> dict:
    """B2 with topology on: the same state and EASY pass, starts placed by the tree
    (every multi-node job limited to the fewest leaf switches it can use,
    --switches=ceil(N/32)) and 4-GPU socket groups; the plain pass is timed in the
    same process for the ratio."""
    import numpy as np
    from .state import busy_state
    from ..model.constraints import Placement
    from ..engine import plan_nodes
    from ..model.topology import levels_array
    state = busy_state("ai-100k", pending=100_000)
    jobs = state.pending
    switches = np.where(jobs.num_nodes > 1, -(-jobs.num_nodes // 32), 0)
    placement = Placement.topology(levels_array(state.cluster.topology), len(jobs),
                                   max_leaves=switches, gpu_groups=[0x0F, 0xF0])

    def run(pl):
        return lambda: plan_nodes(state.cluster, state.running, jobs, state.now, "easy",
                                  placement=pl)
    figures = {"scenario": "easy-100k-topo", "pending": len(jobs)}
    for key, pl in (("plain", None), ("topology", placement)):
        d = run(pl)()                                    # warm-up (and the decisions)
        times = time_runs(run(pl), repeat)
        figures[f"{key}_median_ms"] = round(1e3 * statistics.median(times), 1)
        figures[f"{key}_starts"] = int((d.outcome == 0).sum())
    figures["runs"] = repeat
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["machine"] = machine()
    return figures


#: B5's site: Fair Tree, age, a 5-minute PriorityCalcPeriod, GPU billing
AI_MIX_SITE = """[priority]
PriorityWeightFairshare = 10000
PriorityWeightAge = 1000
PriorityCalcPeriod = "5"
TRESBillingWeights = "GRES/gpu=1.0"
"""


def ai_mix_site_inputs(num_jobs: int = 1_000_000, cluster: str = "ai-100k"):
    """B5's input: (cluster, ai-mix seed 1 with ``num_jobs`` jobs, :data:`AI_MIX_SITE`)."""
    from ..policy.config import parse_config
    from ..tools.generate import ai_cluster, ai_mix
    c = ai_cluster(cluster)
    config = parse_config(AI_MIX_SITE, source="fastsched.bench.scenarios.AI_MIX_SITE")
    return c, ai_mix(c, num_jobs, seed=1), config


def ai_mix_site_run(cluster, workload, config, progress: bool | None = False, **options):
    """One B5 run: the whole workload through :func:`fastsched.simulate_site` under EASY
    (``progress``: a progress bar on stderr; None: at a terminal; ``options``: more of
    :func:`fastsched.simulate`'s, e.g. a failure model)."""
    from ..sim.site import simulate_site
    return simulate_site(cluster, workload, config, "easy", progress=progress, **options)


#: B5 with failures: every job checkpoints hourly at a minute's cost, as training jobs
#: do, so that a failure costs its lost hour, not the whole run (without checkpoints a
#: multi-day job on hundreds of nodes rarely finishes, and the replay simulates years)
FAILURE_CHECKPOINTS = {"checkpoint_interval": 3600, "checkpoint_cost": 60}


def failure_options(spec: str, jobs) -> dict:
    """``simulate`` options for B5 with the failure model ``spec`` (e.g.
    "mtbf=30d,repair=4h,seed=1"): every job requeueable, :data:`FAILURE_CHECKPOINTS`."""
    from ..model.failures import FailureModel
    from ..model.lifecycle import Lifecycle
    return {"failures": FailureModel.parse(spec),
            "lifecycle": Lifecycle.of(len(jobs), **FAILURE_CHECKPOINTS)}


def _ai_mix_1m(repeat: int, jobs: int = 1_000_000, failures: str | None = None) -> dict:
    """B5: ``jobs`` ai-mix jobs on ai-100k under the site's multifactor priorities and
    EASY, one run (``repeat`` is ignored: a run is minutes); a 200-job run on ai-8k
    first loads the compiled kernels, untimed. With ``failures`` (a failure model),
    the same run with it follows the run without, in this process, and the figures
    are both runs' and their ratio."""
    small = ai_mix_site_inputs(200, "ai-8k")
    ai_mix_site_run(*small)
    inputs = ai_mix_site_inputs(jobs)
    fig = {"scenario": "ai-mix-1m (B5)", "jobs": jobs}
    plain, times = _b5_run(inputs, {})
    fig.update(plain)
    if failures is not None:
        ai_mix_site_run(*small, **failure_options(failures, small[1].jobs))
        with_failures, failed_times = _b5_run(inputs, failure_options(failures, inputs[1].jobs))
        fig.update({f"{k}_failures": v for k, v in with_failures.items()})
        fig["failures"] = failures
        fig["checkpoints"] = "every job: interval {checkpoint_interval} s, cost " \
            "{checkpoint_cost} s".format(**FAILURE_CHECKPOINTS)
        for k, new, old in zip(("wall", "cpu"), failed_times, times):    # unrounded
            fig[f"{k}_ratio_failures"] = round(new / old, 2)
    fig.update(runs=1, peak_rss_mb=round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), machine=machine())
    return fig


def _b5_run(inputs, options: dict) -> tuple[dict, tuple[float, float]]:
    """One timed B5 replay: what it did, and its (wall, CPU) seconds."""
    t, c = time.perf_counter(), time.process_time()
    result = ai_mix_site_run(*inputs, progress=None, **options)
    cpu, wall = time.process_time() - c, time.perf_counter() - t
    fig = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "passes": result.summary["passes"],
           "decisions_per_s": round(len(inputs[1].jobs) / wall),   # one start per job
           "gpu_utilisation": round(result.summary["gpu_utilisation"], 3)}
    lc = result.summary.get("lifecycle")
    if lc is not None:
        fig.update(killed_attempts=lc["killed_attempts"], goodput=round(lc["goodput"], 3))
    return fig, (wall, cpu)


def time_runs_cpu(fn, repeat: int) -> tuple[list[float], list[float]]:
    """Like :func:`time_runs`, with each run's CPU time (this process) beside its wall time."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return wall, cpu


def _rates(figures: dict, key: str, steps: int, wall: list[float], cpu: list[float]) -> None:
    """Steps/s of the median run (wall and CPU) and the wall spread (slowest-fastest)."""
    figures[key] = round(steps / statistics.median(wall))
    figures[f"{key}_cpu"] = round(steps / statistics.median(cpu))
    figures[f"{key}_spread"] = f"{round(steps / max(wall))}-{round(steps / min(wall))}"


#: issue 20's speed target for the Gymnasium environment, steps/s on one core
RL_ENV_TARGET = 100_000


def _rl_env(repeat: int, windows: int = 20) -> dict:
    """Steps/s of fastsched.gym with a trivial policy (action 0: the oldest job), default
    settings (profile=8) and without the profile features (profile=0), beside the plain
    Python RLScheduler simulator (the research mode, tools.rlsim) alone making the same
    decisions (FCFS), in the same process, on Lublin-1 windows of 256 jobs."""
    from ..io.swf import bundled_trace
    from ..tools.rlscheduler import policy_keys, read_rl_trace, schedule_window, window_starts
    jobs = read_rl_trace(bundled_trace("lublin_256"))
    starts = window_starts(len(jobs), seed=0, windows=windows, length=256)
    keys = policy_keys(jobs, "FCFS")
    figures = {"scenario": "rl-env", "trace": "lublin_256", "windows": windows,
               "target_steps_per_s": RL_ENV_TARGET}
    try:
        from ..gym import RLSchedulerEnv
    except ImportError:
        RLSchedulerEnv = None
        figures["env"] = "not measured: gymnasium is not installed (pip install fastsched[rl])"
    for backfill in (False, True):
        tag = "_backfill" if backfill else ""
        # one step per head chosen; backfilled jobs start without a step
        steps = sum(schedule_window(jobs, s, 256, keys, backfill=backfill).decisions
                    for s in starts)
        figures[f"steps_per_run{tag}"] = steps

        def simulator():
            for s in starts:
                schedule_window(jobs, s, 256, keys, backfill=backfill)
        _rates(figures, f"sim_steps_per_s{tag}", steps, *time_runs_cpu(simulator, repeat))
        for profile in ((8, 0) if RLSchedulerEnv is not None else ()):
            env = RLSchedulerEnv(jobs, window=256, backfill=backfill, profile=profile)

            def episodes():
                for s in starts:
                    env.reset(seed=0, options={"start": s})
                    while not env.step(0)[2]:
                        pass
            key = f"env_steps_per_s{tag}{'' if profile else '_noprofile'}"
            _rates(figures, key, steps, *time_runs_cpu(episodes, repeat))
            figures[f"{key}_vs_sim"] = round(figures[key] / figures[f"sim_steps_per_s{tag}"], 1)
    figures["runs"] = repeat
    figures["machine"] = machine()
    return figures


def _node_engine(name: str):
    """B2 / B3 / B6 on the node engine (state builders live in fastsched.bench.state)."""
    def run(repeat: int, **options) -> dict:
        from . import state as benchstate
        return {"easy-100k": benchstate._b2, "conservative-100k": benchstate._b3,
                "scaling": benchstate._b6,
                "memory-1m": benchstate._memory_1m}[name](repeat, **options)
    return run


def _short_queue(repeat: int, **options) -> dict:
    """B9 (fastsched.bench.shortqueue)."""
    from .shortqueue import b9
    return b9(repeat, **options)


SCENARIOS = {"kth-easy": _kth_easy, "priority-1m": _priority_1m,
             "easy-100k": _node_engine("easy-100k"),
             "conservative-100k": _node_engine("conservative-100k"),
             "scaling": _node_engine("scaling"), "memory-1m": _node_engine("memory-1m"),
             "place-512": _place_512, "easy-100k-topo": _easy_100k_topo,
             "ai-mix-1m": _ai_mix_1m, "rl-env": _rl_env, "short-queue": _short_queue}

#: what each scenario runs, for ``fastsched bench --help``
SUMMARIES = {
    "kth-easy": "B4, the whole KTH-SP2 trace under EASY and conservative",
    "priority-1m": "B1, Fair Tree + multifactor priorities of 1M pending jobs, 2,000 users",
    "easy-100k": "B2, one EASY pass on ai-100k with 85%% of GPUs busy and 100k pending",
    "conservative-100k": "B3, one conservative full-depth pass on that state",
    "scaling": "B6, B2 and B3 over cluster sizes x queue sizes",
    "memory-1m": "peak RSS of ai-1m 85%% busy with 1M pending and one EASY pass",
    "place-512": "a 512-node job placed with topology constraints on ai-100k",
    "easy-100k-topo": "B2 with topology-aware starts",
    "ai-mix-1m": "B5, 1M ai-mix jobs on ai-100k under multifactor priorities and EASY "
                 "(--failures: and again with a failure model)",
    "short-queue": "B9, Scheduler.schedule() (conservative) repeated on ai-100k and ai-1m, "
                   "85%% busy, 1k pending, state kept between passes, beside the pure pass",
    "rl-env": "fastsched.gym steps/s (trivial policy; target 100k) beside the plain "
              "RLScheduler simulator alone, Lublin-1",
}


def run_scenario(name: str, repeat: int = 7, **options) -> dict:
    """``options``: a scenario's own (ai-mix-1m: ``jobs``, ``failures``; scaling:
    ``clusters``, ``pending``; short-queue: ``clusters``, ``pending``; easy-100k and
    conservative-100k: ``reservations``)."""
    return SCENARIOS[name](repeat, **options)


#: columns of the per-point table (scaling): key, header
POINT_COLUMNS = [("cluster", "cluster"), ("gpus", "GPUs"), ("pending", "pending"),
                 ("policy", "policy"), ("median_ms", "median ms"), ("min_ms", "min ms"),
                 ("decisions_per_s", "decisions/s"), ("us_per_decision", "us/decision"),
                 ("peak_rss_mb", "peak RSS MB"), ("not_measured", "note")]


def format_figures(figures: dict) -> str:
    """Figures as ``key: value`` lines; a scenario's ``points`` as a table (scaling's), or
    each point's lines after the others (short-queue's)."""
    lines = [f"{key:>28}: {value}" for key, value in figures.items() if key != "points"]
    points = figures.get("points")
    if points and "policy" not in points[0]:
        for p in points:
            lines += [""] + [f"{key:>28}: {value}" for key, value in p.items()]
    elif points:
        rows = [[h for _, h in POINT_COLUMNS]]
        rows += [["" if p.get(k) is None else str(p[k]) for k, _ in POINT_COLUMNS] for p in points]
        widths = [max(len(r[i]) for r in rows) for i in range(len(POINT_COLUMNS))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)

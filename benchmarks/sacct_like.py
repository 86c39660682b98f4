"""A site-shaped ``sacct -a -D --parsable2`` dump of any size, for the reader benchmark
(``python benchmarks/readers.py --only sacct``), with its slurm.conf.

The rows are shaped like a year of a mixed CPU/GPU site: 2,000 users in 150 accounts,
single- and multi-node jobs (node lists as Slurm compresses them, some with gaps),
array tasks (``123_4``) and pending array ranges (``123_[5-9]``), het-job components
(``123+1``), ``.batch``/``.extern`` steps of a tenth of the jobs, requeued runs, jobs
that never started (``Unknown`` times, ``None assigned``), ``CANCELLED by UID``
states, typed GPU TRES, limits in ``D-HH:MM:SS``, ``HH:MM:SS``, ``UNLIMITED`` and
``Partition_Limit``. Seeded: the same arguments give the same bytes.

    python benchmarks/sacct_like.py --rows 1000000 --dir /tmp/fastsched-readers
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

CPU_NODES, GPU_NODES = 1024, 256
CONF = f"""\
NodeName=c[0001-{CPU_NODES:04d}] CPUs=64 RealMemory=256000
NodeName=g[001-{GPU_NODES // 2:03d}] CPUs=64 RealMemory=512000 Gres=gpu:a100:8
NodeName=g[{GPU_NODES // 2 + 1:03d}-{GPU_NODES:03d}] CPUs=64 RealMemory=512000 Gres=gpu:h100:8
PartitionName=cpu Nodes=c[0001-{CPU_NODES:04d}] Default=YES MaxTime=7-0
PartitionName=gpu Nodes=g[001-{GPU_NODES:03d}] MaxTime=2-0
"""
HEADER = ("JobID|JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Timelimit|"
          "ReqTRES|AllocTRES|NNodes|NodeList|State|ExitCode|Priority")
LIMITS = ["00:30:00", "01:00:00", "02:00:00", "04:00:00", "08:00:00", "12:00:00",
          "1-00:00:00", "2-00:00:00", "3-00:00:00", "7-00:00:00", "00:05:00", "00:15:00",
          "06:00:00", "18:00:00", "UNLIMITED", "Partition_Limit"]
STATES = ["COMPLETED"] * 12 + ["FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"]
T0 = 1704067200                                  # 2024-01-01T00:00:00


def _iso(seconds: np.ndarray) -> np.ndarray:
    return np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s")


def _hostlist(prefix: str, width: int, first: int, count: int, gap: bool) -> str:
    if count == 1:
        return f"{prefix}{first:0{width}d}"
    if gap:                                      # one node left out in the middle
        mid = first + count // 2
        return (f"{prefix}[{first:0{width}d}-{mid - 1:0{width}d},"
                f"{mid + 1:0{width}d}-{first + count:0{width}d}]")
    return f"{prefix}[{first:0{width}d}-{first + count - 1:0{width}d}]"


def _tres(cpus: int, mem_mb: int, gpus: int, gtype: str, nodes: int, alloc: bool) -> str:
    mem = f"{mem_mb // 1024}G" if mem_mb % 1024 == 0 else f"{mem_mb}M"
    items = [f"billing={cpus + 4 * gpus}"] if alloc else []
    items.append(f"cpu={cpus}")
    if gpus and alloc:
        items.append(f"gres/gpu:{gtype}={gpus}")
    if gpus:
        items.append(f"gres/gpu={gpus}")
    items += [f"mem={mem}", f"node={nodes}"]
    return ",".join(items)


def rows(n: int, seed: int = 0) -> list[str]:
    """About ``n`` data lines (jobs, their steps and pending rows)."""
    rng = np.random.default_rng(seed)
    jobs = int(n / 1.215)
    gpu = rng.random(jobs) < 0.35
    nodes = np.where(rng.random(jobs) < 0.8, 1, rng.integers(2, 17, jobs))
    submit = T0 + np.cumsum(rng.exponential(30.0, jobs)).astype(np.int64)
    wait = rng.exponential(1800.0, jobs).astype(np.int64)
    run = rng.lognormal(7.5, 1.5, jobs).astype(np.int64) + 1
    limit = rng.integers(0, len(LIMITS), jobs)
    user = rng.zipf(1.3, jobs) % 2000
    cpus = rng.choice([1, 2, 4, 8, 16, 32, 64], jobs) * nodes
    gpus = rng.integers(1, 9, jobs) * nodes * gpu
    mem = rng.choice([1000, 2048, 4096, 16384, 65536, 131072], jobs) * nodes
    kind = rng.random(jobs)                      # array task / het component / plain
    fields = (_iso(submit), _iso(submit + wait), _iso(submit + wait + run))
    out, jid, raw = [], 1000, 1000
    for j in range(jobs):
        sub, start, end = fields[0][j], fields[1][j], fields[2][j]
        nn, g = int(nodes[j]), bool(gpu[j])
        width, total, prefix = (3, GPU_NODES, "g") if g else (4, CPU_NODES, "c")
        first = 1 + (j * 7919) % (total - nn - 1)
        nodelist = _hostlist(prefix, width, first, nn, nn > 3 and j % 5 == 0)
        gtype = "a100" if first <= GPU_NODES // 2 else "h100"
        c, m, k = int(cpus[j]), int(mem[j]), int(gpus[j])
        req, alloc = _tres(c, m, k, gtype, nn, False), _tres(c, m, k, gtype, nn, True)
        if kind[j] < 0.2:
            job_id, raw_id = f"{jid}_{j % 50}", raw
        elif kind[j] < 0.21:
            job_id, raw_id = f"{jid}+{j % 2}", raw
        else:
            job_id, raw_id = str(jid), raw
        u = int(user[j])
        state = STATES[j % len(STATES)] if j % 97 else f"CANCELLED by {20000 + u}"
        common = (f"u{u:04d}|acct{u % 150:03d}|{'gpu' if g else 'cpu'}|"
                  f"{'high' if j % 9 == 0 else 'normal'}|{sub}|{sub}")
        if j % 211 == 0:                         # requeued: an earlier run on the same id
            out.append(f"{job_id}|{raw_id}|{common}|{sub}|{sub}|{LIMITS[limit[j]]}|{req}|"
                       f"{alloc}|{nn}|{nodelist}|REQUEUED|0:0|{10000 + j % 5000}")
        out.append(f"{job_id}|{raw_id}|{common}|{start}|{end}|{LIMITS[limit[j]]}|{req}|"
                   f"{alloc}|{nn}|{nodelist}|{state}|{j % 3}:0|{10000 + j % 5000}")
        if j % 10 == 0:                          # steps (a dump taken without -X)
            for step in ("batch", "extern"):
                out.append(f"{job_id}.{step}|{raw_id}.{step}||acct{u % 150:03d}||||{start}|"
                           f"{start}|{end}||||{nn}|{nodelist}|COMPLETED|0:0|")
        if j % 100 == 0:                         # never started
            out.append(f"{jid + 1}_[1-{j % 9 + 2}]|{jid + 1}|{common}|Unknown|Unknown|"
                       f"{LIMITS[limit[j]]}|{req}||{nn}|None assigned|PENDING|0:0|9000")
            jid, raw = jid + 1, raw + 1
        jid, raw = jid + (0 if kind[j] < 0.21 and j % 50 != 49 else 1), raw + 1
    return out


def write(folder: Path, n: int) -> tuple[Path, Path]:
    """(dump, slurm.conf) of about ``n`` rows in ``folder``, written once."""
    folder.mkdir(parents=True, exist_ok=True)
    dump, conf = folder / f"sacct-{n}.txt", folder / "sacct-slurm.conf"
    conf.write_text(CONF)
    if not dump.exists():
        tmp = dump.with_suffix(".tmp")
        tmp.write_text(HEADER + "\n" + "\n".join(rows(n)) + "\n")
        tmp.rename(dump)
    return dump, conf


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dir", type=Path, default=Path("/tmp/fastsched-readers"))
    a = p.parse_args()
    print(*write(a.dir, a.rows))

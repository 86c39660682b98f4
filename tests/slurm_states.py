"""The recorded Slurm states: where their files are, and loading one.

Seven moments of a real Slurm 22.05.8 cluster (tests/data/slurm-states/README.md); the
n64-p1000 one is shipped with fastsched (``fastsched generate slurm-state``).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import fastsched
from fastsched import read_cluster
from fastsched.io.planstate import read_plan_state

STATES = Path(__file__).parent / "data" / "slurm-states"
DATA = Path(fastsched.__file__).parent / "data"
#: the states of ../shared/slurm-states, then three recorded here with its recipe
#: (other sizes and workload seeds)
NAMES = ("n64-p1000", "n256-p1000", "n64-p10000", "n256-p10000", "n128-p2000-s7",
         "n32-p500-s3", "n96-p3000-s11")


def files(name):
    """(slurm.conf, running.csv, squeue --start csv, sdiag.txt) of a state."""
    if name == "n64-p1000":
        return tuple(DATA / f"slurm-state-n64{s}" for s in
                     (".conf", "-running.csv", "-squeue-start.csv.gz", "-sdiag.txt"))
    folder = STATES / name
    return (STATES / f"slurm.N{name.split('-')[0][1:]}.conf", folder / "running.csv",
            folder / "planned.csv.gz", folder / "sdiag.txt")


def load(name):
    """(cluster, PlanState, the cycle's time, Slurm's plan file, sdiag text)."""
    conf, running, planned, sdiag = files(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = read_cluster(conf)
    text = sdiag.read_text()
    now = int(re.search(r"Last cycle when:.*\((\d+)\)", text).group(1))
    return cluster, read_plan_state(running, planned, cluster), now, planned, text

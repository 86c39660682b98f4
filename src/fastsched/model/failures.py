"""A seeded node failure model: the ``down``/``up`` events of failing hardware.

Each failure unit (a node, or with ``scope=switch`` a whole leaf switch and every
node under it: a correlated failure) alternates between up and down from time
0: it stays up for a lifetime drawn from an exponential distribution of mean
``mtbf`` (or a Weibull one of shape ``shape`` scaled to the same mean: shape < 1
for infant mortality, > 1 for wear-out), then is down for ``repair`` seconds.
The lifetimes of all units are drawn round by round from one NumPy generator
seeded with ``seed``, so the same model on the same cluster gives the same
events on every machine. Events run until ``horizon`` seconds.

Written as ``mtbf=30d,repair=4h,seed=1[,dist=weibull,shape=0.7][,scope=node|switch]
[,horizon=90d]`` (durations: seconds, or a number with s, m, h, d or w).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .events import NodeEvents

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_KEYS = ("mtbf", "repair", "seed", "dist", "shape", "scope", "horizon")


@dataclass(frozen=True)
class FailureModel:
    """Per-unit mean time between failures and repair time (seconds), the lifetime
    distribution (``exponential`` or ``weibull`` with ``shape``), the failure unit
    (``node`` or ``switch``: a leaf switch of the cluster's topology), the seed, and
    the horizon (seconds; None: the caller's)."""

    mtbf: int
    repair: int
    seed: int = 0
    dist: str = "exponential"
    shape: float = 1.0
    scope: str = "node"
    horizon: int | None = None

    def __post_init__(self):
        if self.mtbf < 1 or self.repair < 0:
            raise InputError(f"failures: mtbf must be >= 1 s and repair >= 0 s, got "
                             f"{self.mtbf} and {self.repair}", field="failures")
        if self.dist not in ("exponential", "weibull"):
            raise InputError(f"failures: dist {self.dist!r}; choose exponential or weibull",
                             field="failures")
        if not self.shape > 0:
            raise InputError(f"failures: shape must be > 0, got {self.shape}", field="failures")
        if self.scope not in ("node", "switch"):
            raise InputError(f"failures: scope {self.scope!r}; choose node or switch",
                             field="failures")

    @classmethod
    def parse(cls, text: str) -> "FailureModel":
        """From ``mtbf=30d,repair=4h,seed=1,...`` (see the module)."""
        fields = {}
        for item in str(text).split(","):
            key, sep, value = item.strip().partition("=")
            key = key.strip().lower()
            if not sep or key not in _KEYS:
                raise InputError(f"failures: {item.strip()!r} is not key=value with a key "
                                 f"among {', '.join(_KEYS)}", field="failures")
            if key in fields:
                raise InputError(f"failures: {key} given twice", field="failures")
            fields[key] = value.strip()
        missing = [k for k in ("mtbf", "repair") if k not in fields]
        if missing:
            raise InputError(f"failures: needs {' and '.join(missing)} (e.g. "
                             "mtbf=30d,repair=4h,seed=1)", field="failures")
        out = {k: _seconds(fields[k], k) for k in ("mtbf", "repair", "horizon") if k in fields}
        if "seed" in fields:
            out["seed"] = _integer(fields["seed"], "seed")
        if "shape" in fields:
            try:
                out["shape"] = float(fields["shape"])
            except ValueError:
                raise InputError(f"failures: shape {fields['shape']!r} is not a number",
                                 field="failures") from None
        for k in ("dist", "scope"):
            if k in fields:
                out[k] = fields[k].lower()
        if out.get("dist", "exponential") == "exponential" and "shape" in out:
            raise InputError("failures: shape goes with dist=weibull", field="failures")
        return cls(**out)

    def events(self, num_nodes: int, horizon: int, leaf=None) -> NodeEvents:
        """The ``down``/``up`` events on a cluster of ``num_nodes`` nodes until
        ``horizon`` (this model's own horizon when it has one); ``leaf``: each node's
        leaf switch (int per node), needed by ``scope=switch``."""
        horizon = self.horizon if self.horizon is not None else int(horizon)
        units = _units(num_nodes, self.scope, leaf)
        rng = np.random.default_rng(self.seed)
        scale = self.mtbf / math.gamma(1.0 + 1.0 / self.shape) if self.dist == "weibull" \
            else float(self.mtbf)
        t = np.zeros(len(units), dtype=np.int64)       # when each unit is up again
        alive = np.arange(len(units))
        times, which = [], []
        while len(alive):
            draw = (rng.weibull(self.shape, len(alive)) if self.dist == "weibull"
                    else rng.exponential(1.0, len(alive))) * scale
            fail = t[alive] + np.maximum(1, np.round(draw)).astype(np.int64)
            hit = fail < horizon
            alive, fail = alive[hit], fail[hit]
            times.append(fail)
            which.append(alive)
            t[alive] = fail + self.repair
        times = np.concatenate(times) if times else np.zeros(0, dtype=np.int64)
        which = np.concatenate(which) if which else np.zeros(0, dtype=np.int64)
        order = np.lexsort((which, times))
        rows = []
        for f, u in zip(times[order].tolist(), which[order].tolist()):
            rows.append((f, "down", units[u], "failure"))
            rows.append((f + self.repair, "up", units[u], "repaired"))
        return NodeEvents.from_rows(rows, num_nodes)


def _units(num_nodes: int, scope: str, leaf) -> list:
    """The node lists that fail together."""
    if scope == "node":
        return [[x] for x in range(num_nodes)]
    if leaf is None:
        raise InputError("failures: scope=switch needs a cluster topology (leaf switches)",
                         field="failures")
    leaf = np.asarray(leaf)
    return [np.flatnonzero(leaf == s).tolist() for s in np.unique(leaf[leaf >= 0])]


def _seconds(text: str, key: str) -> int:
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:], None) if t else None
    number = t[:-1] if unit else t
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise InputError(f"failures: {key}={text!r} is not a duration (90, 90s, 10m, 4h, "
                         "30d, 2w)", field="failures") from None
    if value < 0 or value != value or value == float("inf"):
        raise InputError(f"failures: {key}={text!r} must be >= 0", field="failures")
    return int(round(value))


def _integer(text: str, key: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"failures: {key}={text!r} is not an integer", field="failures") \
            from None

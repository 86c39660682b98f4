"""The scheduler configuration file (TOML): priority weights, accounts, QOS, limits.

One file says what slurm.conf's priority lines and ``sacctmgr`` would say::

    [priority]
    PriorityWeightAge = 1000            # slurm.conf names and spellings
    PriorityDecayHalfLife = "7-0"       # Slurm time strings; a bare number is minutes
    TRESBillingWeights = "CPU=1.0,Mem=0.25G,GRES/gpu=2.0"

    [[account]]                         # sacctmgr add account ... parent=... fairshare=...
    name = "physics"
    parent = "science"                  # default "root"
    RawShares = 40                      # default 1
    users = ["alice", "bob"]            # user associations (1 share each)
    GrpTRES = "gres/gpu=64"             # association limits

    [[user]]                            # a user association's own shares / limits
    name = "alice"
    account = "physics"
    MaxJobs = 4

    [qos.high]                          # sacctmgr add qos high ...
    Priority = 100
    MaxTRESPerUser = "gres/gpu=16"

    [partition.gpu]                     # overrides of the cluster's partitions
    PriorityTier = 2
    PriorityJobFactor = 10

:func:`load_config` returns a :class:`SchedulerConfig`; every mistake is an
:class:`~fastsched.model.errors.InputError` naming the file, the key path
(``field="qos.high.MaxWall"``) and, where it can be found, the line. See the
"Configuration and limits" section of ``docs/priority.md`` for every key.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np


from ..io.tomllines import TomlLines, load_toml
from ..model.errors import InputError
from .fairshare import AssociationTree, Usage, classic, fair_tree
from .priority import PriorityWeights
from ..io.slurmconf import parse_time
from ..io.textfile import check_digits, read_text
from ..model.validation import MAX_COUNT, MAX_MEMORY_MB

__all__ = ["SchedulerConfig", "Limits", "QOS", "AccountEntry", "UserEntry", "load_config",
           "parse_config", "parse_tres", "LIMIT_TRES", "RESET_PERIODS"]

#: TRES names a limit may cap (Slurm spells them in lower case in sacctmgr).
LIMIT_TRES = ("cpu", "mem", "node", "gres/gpu")
#: PriorityUsageResetPeriod values (slurm.conf).
RESET_PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")
#: billing TRES (TRESBillingWeights names) in the order Usage is charged.
BILLING_TRES = ("CPU", "Mem", "Node", "GRES/gpu")
_MEM_UNITS = {"K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2}
_WEIGHT_KEYS = ("PriorityWeightAge", "PriorityWeightFairshare", "PriorityWeightJobSize",
                "PriorityWeightPartition", "PriorityWeightQOS")
_PRIORITY_KEYS = _WEIGHT_KEYS + (
    "PriorityWeightTRES", "PriorityMaxAge", "PriorityFavorSmall", "PriorityDecayHalfLife",
    "PriorityUsageResetPeriod", "PriorityCalcPeriod", "PriorityFlags", "FairShareAlgorithm",
    "FairShareDampeningFactor", "TRESBillingWeights")
#: limit keys an association (account or user) may set
ASSOC_LIMIT_KEYS = ("GrpTRES", "GrpJobs", "GrpSubmitJobs", "MaxTRESPerJob", "MaxJobs",
                    "MaxSubmitJobs", "MaxWallDurationPerJob")
#: limit keys a QOS may set
QOS_LIMIT_KEYS = ("GrpTRES", "GrpJobs", "GrpSubmitJobs", "MaxTRESPerJob", "MaxTRESPerUser",
                  "MaxJobsPerUser", "MaxSubmitJobsPerUser", "MaxWallDurationPerJob")
_ALIASES = {"maxwall": "MaxWallDurationPerJob", "maxtres": "MaxTRESPerJob",
            "maxsubmit": "MaxSubmitJobs", "fairshare": "RawShares",
            "maxsubmitjobspu": "MaxSubmitJobsPerUser", "maxjobspu": "MaxJobsPerUser",
            "maxtrespu": "MaxTRESPerUser", "maxsubmitjobsperuser": "MaxSubmitJobsPerUser"}


# --------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Limits:
    """Limits of a QOS or an association; None / {} = not set.

    TRES dicts map ``cpu``, ``mem`` (MB), ``node``, ``gres/gpu`` to counts.
    For an association, ``MaxJobs`` / ``MaxSubmitJobs`` are its own (per user
    association) caps; for a QOS the per-user ones are ``MaxJobsPerUser`` etc.
    """

    GrpTRES: Mapping[str, int] = field(default_factory=dict)
    GrpJobs: int | None = None
    GrpSubmitJobs: int | None = None
    MaxTRESPerJob: Mapping[str, int] = field(default_factory=dict)
    MaxTRESPerUser: Mapping[str, int] = field(default_factory=dict)
    MaxJobs: int | None = None               # association MaxJobs / QOS MaxJobsPerUser
    MaxSubmitJobs: int | None = None         # association MaxSubmitJobs / QOS ...PerUser
    MaxWallDurationPerJob: int | None = None  # seconds

    def any_grp(self) -> bool:
        return bool(self.GrpTRES) or self.GrpJobs is not None or self.GrpSubmitJobs is not None


@dataclass(frozen=True)
class QOS:
    """A QOS: its priority, UsageFactor and limits, and for preempt/qos
    (:mod:`fastsched.model.preemption`) the QOS it may preempt (``Preempt``), its
    ``PreemptMode`` as a victim ("" = the global one), ``GraceTime`` (seconds) and
    ``PreemptExemptTime`` (seconds; None = the global one)."""

    name: str
    Priority: int = 0
    UsageFactor: float = 1.0
    limits: Limits = field(default_factory=Limits)
    Preempt: tuple = ()
    PreemptMode: str = ""
    GraceTime: int = 0
    PreemptExemptTime: int | None = None


@dataclass(frozen=True)
class AccountEntry:
    """An ``[[account]]``: parent, RawShares, user associations, limits."""

    name: str
    parent: str = "root"
    RawShares: int = 1
    users: tuple = ()
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True)
class UserEntry:
    """A ``[[user]]``: the user association (name, account) with shares and limits."""

    name: str
    account: str
    RawShares: int = 1
    limits: Limits = field(default_factory=Limits)


@dataclass
class SchedulerConfig:
    """Everything a configuration file sets; defaults are Slurm's.

    ``decay_half_life``, ``calc_period`` are seconds (0 half-life: no decay);
    ``tres_billing_weights`` are per CPU / MB / node / GPU; ``qos`` always
    holds ``normal``; ``partitions`` maps a partition name to its overrides
    (``PriorityTier``, ``PriorityJobFactor``).
    """

    weights: PriorityWeights = field(default_factory=PriorityWeights)
    decay_half_life: int = 7 * 86400
    usage_reset_period: str = "NONE"
    calc_period: int = 300
    fairshare_algorithm: str = "fair_tree"
    damping: float = 1.0
    tres_billing_weights: dict = field(default_factory=lambda: {"CPU": 1.0, "Mem": 0.0,
                                                                "Node": 0.0, "GRES/gpu": 0.0})
    qos: dict = field(default_factory=lambda: {"normal": QOS("normal")})
    accounts: list = field(default_factory=list)
    users: list = field(default_factory=list)
    partitions: dict = field(default_factory=dict)
    source: str | None = None
    #: TOML key path -> line, for errors found after parsing (e.g. an unknown partition)
    key_lines: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ QOS
    @property
    def qos_names(self) -> list[str]:
        return list(self.qos)

    def job_qos(self, workload) -> np.ndarray:
        """int32 per job: index into :attr:`qos_names` of each job's QOS.

        Uses ``workload.qos`` / ``workload.qos_names`` when the workload has
        them, else every job is in ``normal``. A QOS the config does not
        define is an InputError naming it.
        """
        n = len(workload)
        codes = getattr(workload, "qos", None)
        if codes is None:
            return np.full(n, self.qos_names.index("normal"), dtype=np.int32)
        names = list(getattr(workload, "qos_names"))
        lookup = np.empty(len(names), dtype=np.int32)
        for k, name in enumerate(names):
            if name not in self.qos:
                raise InputError(f"unknown QOS {name!r} (config defines "
                                 f"{', '.join(self.qos)})", file=self.source, field="qos")
            lookup[k] = self.qos_names.index(name)
        codes = np.asarray(codes)
        if codes.shape != (n,) or (n and (codes.min() < 0 or codes.max() >= len(names))):
            raise InputError(f"workload.qos must be {n} indices into qos_names "
                             f"(0..{len(names) - 1})", field="qos")
        return lookup[codes] if n else np.zeros(0, np.int32)

    def qos_factor(self) -> np.ndarray:
        """float64 per QOS: Priority / the highest QOS Priority (0 if that is 0)."""
        prio = np.array([q.Priority for q in self.qos.values()], dtype=np.float64)
        top = prio.max() if len(prio) else 0.0
        return prio / top if top > 0 else np.zeros_like(prio)

    def usage_factor(self) -> np.ndarray:
        """float64 per QOS: UsageFactor."""
        return np.array([q.UsageFactor for q in self.qos.values()], dtype=np.float64)

    # ------------------------------------------------------------------ partitions
    def _check_partitions(self, cluster) -> list[str]:
        names = [p.name for p in cluster.partitions]
        for name in self.partitions:
            if name not in names:
                raise InputError(f"unknown partition {name!r}; cluster has {names}",
                                 file=self.source, line=self.key_lines.get(f"partition.{name}"),
                                 field=f"partition.{name}")
        return names

    def apply_partitions(self, cluster):
        """A copy of ``cluster`` with the configured PriorityTier overrides."""
        self._check_partitions(cluster)
        parts = [replace(p, priority_tier=self.partitions[p.name]["PriorityTier"])
                 if "PriorityTier" in self.partitions.get(p.name, {}) else p
                 for p in cluster.partitions]
        return replace(cluster, partitions=parts)

    def partition_factor(self, cluster) -> np.ndarray:
        """float64 per cluster partition: PriorityJobFactor / the highest one.

        PriorityJobFactor defaults to 1 (Slurm's default), so with no
        overrides every partition's factor is 1.0.
        """
        self._check_partitions(cluster)
        f = np.array([self.partitions.get(p.name, {}).get("PriorityJobFactor", 1)
                      for p in cluster.partitions], dtype=np.float64)
        top = f.max()
        return f / top if top > 0 else np.zeros_like(f)

    # ------------------------------------------------------------------ tree and usage
    def build_tree(self, workload) -> AssociationTree:
        """The association tree: root > accounts (any depth) > user associations.

        Accounts come from ``[[account]]``; without any, from the workload
        (organisation > account, 1 share each). User associations are every
        (account, user) pair of the jobs, named ``account/user``, first in
        (account, user) index order of the workload (so
        :meth:`AssociationTree.job_associations` maps jobs to them), then
        those only the config lists. A job's account missing from the config
        is an InputError naming it.
        """
        return _build_tree(self, workload)

    def new_usage(self, tree: AssociationTree) -> Usage:
        """An empty :class:`Usage` billed with TRESBillingWeights."""
        return Usage(tree, self.tres_billing_weights)

    def fairshare(self, tree: AssociationTree, usage) -> np.ndarray:
        """Fair-share factor per user association (Fair Tree or classic)."""
        if self.fairshare_algorithm == "classic":
            return classic(tree, usage, damping=self.damping)
        return fair_tree(tree, usage)


# --------------------------------------------------------------------------- tree

def _build_tree(config: SchedulerConfig, workload) -> AssociationTree:
    src = config.source
    if config.accounts:
        edges = [(a.parent, a.name, a.RawShares) for a in config.accounts]
        known = {a.name for a in config.accounts}
    else:   # the workload's organisations and accounts
        orgs, accts = workload.org_names, workload.account_names
        flat = list(orgs) == list(accts)
        edges = [] if flat else [("root", o, 1) for o in orgs if o not in set(accts)]
        edges += [("root" if flat or orgs[int(workload.org_of_account[a])] == name
                   else orgs[int(workload.org_of_account[a])], name, 1)
                  for a, name in enumerate(accts)]
        known = set(accts)
    for k, a in enumerate(workload.account_names):
        if a not in known:
            i = int(np.flatnonzero(workload.account == k)[0])
            raise InputError(f"job {int(workload.jobs.job_id[i])}: unknown account {a!r} "
                             f"(not an [[account]] of the config)", file=src, field="account")
    nu = max(len(workload.user_names), 1)      # (account, user) pairs via one int64 key
    keys = np.unique(workload.account.astype(np.int64) * nu + workload.jobs.user)
    pairs = np.stack([keys // nu, keys % nu], axis=1)
    shares = {(u.account, u.name): u.RawShares for u in config.users}
    names = [(workload.account_names[a], workload.user_names[u]) for a, u in pairs.tolist()]
    seen = set(names)
    extra = [(a.name, u) for a in config.accounts for u in a.users]
    extra += [(u.account, u.name) for u in config.users]
    for pair in extra:
        if pair not in seen:
            seen.add(pair)
            names.append(pair)
    edges += [(acct, f"{acct}/{user}", shares.get((acct, user), 1)) for acct, user in names]
    try:
        tree = AssociationTree.from_edges(edges, users=[f"{a}/{u}" for a, u in names])
    except InputError as e:
        raise InputError(e.reason, file=src, field="account") from None
    tree._pairs = pairs
    tree.assoc_account = [""] * tree.num_nodes      # sshare's Account column
    tree.assoc_user = [""] * tree.num_nodes         # sshare's User column
    for v, name in enumerate(tree.names):
        tree.assoc_account[v] = name
    for (acct, user), v in zip(names, tree.user_nodes.tolist()):
        tree.assoc_account[v], tree.assoc_user[v] = acct, user
    return tree


# --------------------------------------------------------------------------- parsing

def load_config(path) -> SchedulerConfig:
    """Read a TOML configuration file (see the module docstring)."""
    return parse_config(read_text(path), source=str(path))


def parse_config(text: str, source: str | None = None) -> SchedulerConfig:
    """Parse configuration TOML text; ``source`` names it in errors."""
    check_digits(text, source)
    doc, where = load_toml(text, source)
    _check_keys(doc, ("priority", "account", "user", "qos", "partition"), "", where)
    cfg = SchedulerConfig(source=source, key_lines=where.lines)
    _parse_priority(cfg, _table(doc.get("priority", {}), "priority", where), where)
    _parse_qos(cfg, _table(doc.get("qos", {}), "qos", where), where)
    _parse_accounts(cfg, doc.get("account", []), where)
    _parse_users(cfg, doc.get("user", []), where)
    _parse_partitions(cfg, _table(doc.get("partition", {}), "partition", where), where)
    return cfg


def _canon(key: str, allowed) -> str | None:
    low = key.lower()
    low = _ALIASES.get(low, low).lower()
    for a in allowed:
        if a.lower() == low:
            return a
    return None


def _check_keys(table: Mapping, allowed, path: str, where: TomlLines) -> dict:
    """{canonical key: value}; an unknown key is an error naming the allowed ones."""
    out = {}
    for key, value in table.items():
        c = _canon(key, allowed)
        p = f"{path}.{key}" if path else key
        if c is None:
            raise where.error(f"unknown key {key!r} (allowed: {', '.join(allowed)})", p)
        if c in out:
            raise where.error(f"{c} given twice", p)
        out[c] = (value, p)
    return out


def _table(value, path: str, where: TomlLines) -> dict:
    if not isinstance(value, dict):
        raise where.error(f"[{path}] must be a table", path)
    return value


def _int(value, path, where, minimum=0, allow_unlimited=False, maximum=MAX_COUNT) -> int | None:
    if allow_unlimited and (value == -1 or (isinstance(value, str)
                                            and value.upper() in ("UNLIMITED", "INFINITE", "-1"))):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(f"must be an integer, got {value!r}", path)
    if value < minimum:
        raise where.error(f"must be >= {minimum}, got {value}", path)
    if value > maximum:
        raise where.error(f"must be <= {maximum:,}, got {value}", path)
    return value


def _number(value, path, where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not np.isfinite(value) or value < 0:
        raise where.error(f"must be a finite number >= 0, got {value!r}", path)
    return float(value)


def _time(value, path, where, allow_unlimited=False, allow_zero=True) -> int | None:
    """A Slurm time ("7-0", "1:00:00", bare numbers = minutes) in seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise where.error(f"must be a Slurm time string like '7-0' or '1:00:00', got {value!r}",
                          path)
    try:
        t = parse_time(str(value))
    except InputError as e:
        raise where.error(e.reason, path) from None
    if t is None and not allow_unlimited:
        raise where.error(f"must be a finite time, got {value!r}", path)
    if t is not None and t == 0 and not allow_zero:
        raise where.error(f"must be > 0, got {value!r}", path)
    return t


def parse_tres(text, path: str = "TRES", where: TomlLines | None = None) -> dict[str, int]:
    """``"cpu=64,mem=500G,gres/gpu=8,node=4"`` -> {name: count}; mem in MB.

    Names are case-insensitive; ``mem`` takes K/M/G/T suffixes (default M);
    ``-1`` clears a TRES. Only ``cpu``, ``mem``, ``node`` and ``gres/gpu``
    (untyped) are known.
    """
    where = where or TomlLines("", None)
    if not isinstance(text, str):
        raise where.error(f"must be a string like 'cpu=64,gres/gpu=8', got {text!r}", path)
    out: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, eq, val = item.partition("=")
        name = name.strip().lower()
        if not eq or name not in LIMIT_TRES:
            raise where.error(f"bad TRES {item!r} (expected NAME=COUNT with NAME one of "
                              f"{', '.join(LIMIT_TRES)})", path)
        val = val.strip()
        unit = 1.0
        if name == "mem" and val[-1:].upper() in _MEM_UNITS:
            unit, val = _MEM_UNITS[val[-1].upper()], val[:-1]
        if val == "-1":
            out.pop(name, None)
            continue
        try:
            count = float(val) * unit
        except ValueError:
            raise where.error(f"bad TRES count in {item!r}", path) from None
        if not np.isfinite(count) or count < 0 or count != int(count):
            raise where.error(f"TRES count in {item!r} must be a whole number >= 0", path)
        if count > MAX_MEMORY_MB:
            raise where.error(f"TRES count in {item[:40]!r} is out of range (at most "
                              f"{MAX_MEMORY_MB:,})", path)
        if name in out:
            raise where.error(f"TRES {name} given twice in {text!r}", path)
        out[name] = int(count)
    return out


def _billing_weights(text, path, where) -> dict[str, float]:
    """TRESBillingWeights ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0") per CPU / MB / node / GPU."""
    if not isinstance(text, str):
        raise where.error(f"must be a string like 'CPU=1.0,Mem=0.25G', got {text!r}", path)
    out = {t: 0.0 for t in BILLING_TRES}
    lower = {t.lower(): t for t in BILLING_TRES}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, eq, val = item.partition("=")
        key = lower.get(name.strip().lower())
        if not eq or key is None:
            raise where.error(f"bad billing weight {item!r} (TRES: {', '.join(BILLING_TRES)})",
                              path)
        val = val.strip()
        scale = 1.0
        if key == "Mem" and val[-1:].upper() in _MEM_UNITS:   # weight per K/M/G/T -> per MB
            scale, val = 1.0 / _MEM_UNITS[val[-1].upper()], val[:-1]
        try:
            w = float(val) * scale
        except ValueError:
            raise where.error(f"bad billing weight {item!r}", path) from None
        if not np.isfinite(w) or w < 0:
            raise where.error(f"billing weight {item!r} must be a finite number >= 0", path)
        out[key] = w
    return out


def _parse_priority(cfg: SchedulerConfig, table, where: TomlLines) -> None:
    keys = _check_keys(table, _PRIORITY_KEYS, "priority", where)
    kw: dict[str, Any] = {}
    for name in _WEIGHT_KEYS:
        if name in keys:
            kw[name] = keys[name][0]
    if "PriorityWeightTRES" in keys:
        value, path = keys["PriorityWeightTRES"]
        weights = _billing_weights(value, path, where)
        given = {t.lower() for t in re.findall(r"([^,=\s]+)\s*=", value)}
        kw["PriorityWeightTRES"] = {t: w for t, w in weights.items() if t.lower() in given}
    if "PriorityMaxAge" in keys:
        kw["PriorityMaxAge"] = _time(*keys["PriorityMaxAge"], where, allow_zero=False)
    if "PriorityFavorSmall" in keys:
        value, path = keys["PriorityFavorSmall"]
        if isinstance(value, str) and value.upper() in ("YES", "NO"):
            value = value.upper() == "YES"
        if not isinstance(value, bool):
            raise where.error(f"must be true/false (or YES/NO), got {value!r}", path)
        kw["PriorityFavorSmall"] = value
    try:
        cfg.weights = PriorityWeights(**kw)
    except InputError as e:
        raise where.error(e.reason, f"priority.{e.field}" if e.field else "priority") from None
    if "PriorityDecayHalfLife" in keys:
        cfg.decay_half_life = _time(*keys["PriorityDecayHalfLife"], where)
    if "PriorityCalcPeriod" in keys:
        cfg.calc_period = _time(*keys["PriorityCalcPeriod"], where, allow_zero=False)
    if "PriorityUsageResetPeriod" in keys:
        value, path = keys["PriorityUsageResetPeriod"]
        if not isinstance(value, str) or value.upper() not in RESET_PERIODS:
            raise where.error(f"must be one of {', '.join(RESET_PERIODS)}, got {value!r}", path)
        cfg.usage_reset_period = value.upper()
    algo = "fair_tree"
    if "PriorityFlags" in keys:
        value, path = keys["PriorityFlags"]
        flags = [f.strip().upper() for f in str(value).split(",") if f.strip()]
        for f in flags:
            if f != "NO_FAIR_TREE":
                raise where.error(f"PriorityFlags {f!r} is not supported (only NO_FAIR_TREE)",
                                  path)
        if flags:
            algo = "classic"
    if "FairShareAlgorithm" in keys:
        value, path = keys["FairShareAlgorithm"]
        if value not in ("fair_tree", "classic"):
            raise where.error(f"must be 'fair_tree' or 'classic', got {value!r}", path)
        if "PriorityFlags" in keys and value != algo:
            raise where.error("contradicts PriorityFlags", path)
        algo = value
    cfg.fairshare_algorithm = algo
    if "FairShareDampeningFactor" in keys:
        value, path = keys["FairShareDampeningFactor"]
        cfg.damping = float(_int(value, path, where, minimum=1))
    if "TRESBillingWeights" in keys:
        cfg.tres_billing_weights = _billing_weights(*keys["TRESBillingWeights"], where)


def _parse_limits(keys: dict, allowed, where: TomlLines) -> Limits:
    kw: dict[str, Any] = {}
    for name in allowed:
        if name not in keys:
            continue
        value, path = keys[name]
        target = {"MaxJobsPerUser": "MaxJobs", "MaxSubmitJobsPerUser": "MaxSubmitJobs"}.get(
            name, name)
        if name in ("GrpTRES", "MaxTRESPerJob", "MaxTRESPerUser"):
            kw[target] = parse_tres(value, path, where)
        elif name == "MaxWallDurationPerJob":
            kw[target] = _time(value, path, where, allow_unlimited=True)
        else:
            kw[target] = _int(value, path, where, allow_unlimited=True)
    return Limits(**kw)


def _parse_qos(cfg: SchedulerConfig, table, where: TomlLines) -> None:
    allowed = ("Priority", "UsageFactor") + QOS_LIMIT_KEYS + _QOS_PREEMPT_KEYS
    for name, body in table.items():
        path = f"qos.{name}"
        keys = _check_keys(_table(body, path, where), allowed, path, where)
        prio = _int(*keys["Priority"], where, maximum=0xFFFFFFFF) if "Priority" in keys else 0
        factor = _number(*keys["UsageFactor"], where) if "UsageFactor" in keys else 1.0
        cfg.qos[name] = QOS(name, prio, factor, _parse_limits(keys, QOS_LIMIT_KEYS, where),
                            **_qos_preempt(keys, where))


#: preempt/qos keys of a QOS (sacctmgr's spellings)
_QOS_PREEMPT_KEYS = ("Preempt", "PreemptMode", "GraceTime", "PreemptExemptTime")


def _qos_preempt(keys: dict, where: TomlLines) -> dict:
    """A QOS's preemption keys: ``Preempt`` a list of QOS names (or one comma-separated
    string, as sacctmgr takes it), ``PreemptMode`` OFF/CANCEL/REQUEUE, ``GraceTime``
    and ``PreemptExemptTime`` Slurm times (GraceTime a number of seconds, as sacctmgr
    takes it)."""
    out: dict = {}
    if "Preempt" in keys:
        value, path = keys["Preempt"]
        names = value.split(",") if isinstance(value, str) else value
        if not isinstance(names, list) or not all(isinstance(v, str) and v.strip()
                                                  for v in names):
            raise where.error(f"must be a list of QOS names, got {value!r}", path)
        out["Preempt"] = tuple(v.strip() for v in names)
    if "PreemptMode" in keys:
        value, path = keys["PreemptMode"]
        from ..model.preemption import parse_mode
        try:
            parse_mode(value, field=path)
        except InputError as e:
            raise where.error(e.reason, path) from None
        out["PreemptMode"] = str(value)
    if "GraceTime" in keys:
        out["GraceTime"] = _int(*keys["GraceTime"], where)
    if "PreemptExemptTime" in keys:
        out["PreemptExemptTime"] = _time(*keys["PreemptExemptTime"], where) or 0
    return out


def _array(value, path, where) -> list:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise where.error(f"[[{path}]] must be an array of tables", path)
    return value


def _name(keys, path, where, key="name") -> str:
    if key not in keys:
        raise where.error(f"missing {key!r}", path)
    value, p = keys[key]
    if not isinstance(value, str) or not value or value != value.strip() or "/" in value:
        raise where.error(f"{key} must be a non-empty name without '/', got {value!r}", p)
    return value


def _shares(keys, where) -> int:
    if "RawShares" not in keys:
        return 1
    value, path = keys["RawShares"]
    from .fairshare import MAX_RAW_SHARES
    v = _int(value, path, where, minimum=0)
    if v > MAX_RAW_SHARES:
        raise where.error(f"RawShares must be <= {MAX_RAW_SHARES}, got {v}", path)
    return v


def _parse_accounts(cfg: SchedulerConfig, entries, where: TomlLines) -> None:
    allowed = ("name", "parent", "RawShares", "users") + ASSOC_LIMIT_KEYS
    seen: dict[str, int] = {}
    for k, body in enumerate(_array(entries, "account", where)):
        path = f"account[{k}]"
        keys = _check_keys(body, allowed, path, where)
        name = _name(keys, path, where)
        if name == "root" or name in seen:
            raise where.error(f"duplicate account {name!r}" if name != "root" else
                              "'root' is implicit; do not define it", f"{path}.name")
        seen[name] = k
        parent = keys["parent"][0] if "parent" in keys else "root"
        users = keys["users"][0] if "users" in keys else []
        if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users) \
                or len(set(users)) != len(users):
            raise where.error("users must be a list of distinct user names", f"{path}.users")
        cfg.accounts.append(AccountEntry(name, str(parent), _shares(keys, where), tuple(users),
                                         _parse_limits(keys, ASSOC_LIMIT_KEYS, where)))
    for k, a in enumerate(cfg.accounts):
        if a.parent != "root" and a.parent not in seen:
            raise where.error(f"account {a.name!r}: unknown parent account {a.parent!r}",
                              f"account[{k}].parent")
        # a cycle: following parents from here comes back here
        chain, p = {a.name}, a.parent
        while p != "root":
            if p in chain:
                raise where.error(f"account {a.name!r} is in a cycle of parents "
                                  f"({' > '.join(sorted(chain))})", f"account[{k}].parent")
            chain.add(p)
            p = cfg.accounts[seen[p]].parent


def _parse_users(cfg: SchedulerConfig, entries, where: TomlLines) -> None:
    allowed = ("name", "account", "RawShares") + ASSOC_LIMIT_KEYS
    accounts = {a.name for a in cfg.accounts}
    seen = set()
    for k, body in enumerate(_array(entries, "user", where)):
        path = f"user[{k}]"
        keys = _check_keys(body, allowed, path, where)
        name = _name(keys, path, where)
        account = _name(keys, path, where, key="account")
        if account not in accounts:
            raise where.error(f"user {name!r}: unknown account {account!r}",
                              f"{path}.account")
        if (account, name) in seen:
            raise where.error(f"user {name!r} in account {account!r} given twice", path)
        seen.add((account, name))
        cfg.users.append(UserEntry(name, account, _shares(keys, where),
                                   _parse_limits(keys, ASSOC_LIMIT_KEYS, where)))


def _parse_partitions(cfg: SchedulerConfig, table, where: TomlLines) -> None:
    for name, body in table.items():
        path = f"partition.{name}"
        keys = _check_keys(_table(body, path, where), ("PriorityTier", "PriorityJobFactor"),
                           path, where)
        over = {}
        for key, (value, p) in keys.items():
            v = _int(value, p, where)
            if v > 65533:                       # uint16 in Slurm
                raise where.error(f"{key} must be in 0..65533, got {v}", p)
            over[key] = v
        cfg.partitions[name] = over

"""Power saving and cloud bursting (Slurm's ``power_save``): what a node costs while
powered, and what a job waits while its nodes boot.

Slurm (doc/html/power_save.shtml, src/slurmctld/power_save.c): a node idle for
``SuspendTime`` seconds is powered down (``SuspendProgram``), which takes up to
``SuspendTimeout``; nodes listed in ``SuspendExcNodes`` or in a partition of
``SuspendExcParts`` never are. Nodes with ``State=CLOUD`` start powered down. A
powered-down node stays allocatable: a job given one is CONFIGURING while Slurm
resumes it (``ResumeProgram``, at most ``ResumeRate`` nodes a minute: a token
bucket refilled every 60000 / ResumeRate ms), and when every node of the job is
ready its start (and so its end: the time limit counts from then) is reset. A node
not ready ``ResumeTimeout`` seconds after its resume goes DOWN.

The model (fastsched's; Slurm has no key for how long a node boots): a node boots
in ``boot`` seconds, or in its own time given by hostlist or partition (``boots``:
``boot[cloud]=5m`` in the ``--power`` text). The nodes engine applies it when a job
starts (:mod:`fastsched.engine.power`): a node of the job that is powered down then (idle
longer than SuspendTime since its last job ended, as Slurm's ``last_busy < now -
SuspendTime``, not excluded; or a CLOUD node never used)
takes a resume token (one every 60000 / ResumeRate ms, first come first served; 0:
no limit), waits for its power-down to finish (SuspendTimeout after it began), then
boots; the job starts when its last node is ready. A node that is still booting for
another job makes a job sharing it wait too. A node whose boot is over
``ResumeTimeout`` never comes up once powered down: such CLOUD nodes are DOWN for the
whole run (other such nodes are refused: their failures mid-run are not modelled).
``SuspendRate`` limits the power-downs as ResumeRate the power-ups: a node idle for
SuspendTime takes a power-down token (one every 60000 / SuspendRate ms; 0: no limit),
in the order the nodes became eligible (then by node index, the order Slurm's power
thread scans them); with none left it stays up, and takes jobs without a boot, until
its token.
Both rates are modelled as a stream of tokens handed out the instant they are due,
not as Slurm's bucket of max(1, rate * power_save_interval / 60) tokens spent by a
power thread every 10 s: the same nodes a minute, without the thread's bursts and
its delay of up to ``power_save_interval``. Cost: ``cost`` per node-hour powered on (``cloud_cost`` for CLOUD nodes; a
node is powered from its resume, or time 0 for the others, until SuspendTime after
its last job or the end of the run).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from .errors import InputError

#: duration suffixes of the ``--power`` text
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: lower-case Slurm key -> field, for the keys that take a number of seconds or a rate
SLURM_KEYS = {"suspendtime": "suspend_time", "suspendtimeout": "suspend_timeout",
              "resumetimeout": "resume_timeout", "resumerate": "resume_rate",
              "suspendrate": "suspend_rate"}
#: lower-case ``--power`` key -> field
_OPTION_KEYS = {"boot": "boot", "cost": "cost", "cloud-cost": "cloud_cost",
                **{k.replace("_", "-"): v for k, v in SLURM_KEYS.items()},
                **{v.replace("_", "-"): v for v in SLURM_KEYS.values()}}


@dataclass(frozen=True)
class PowerSaving:
    """Slurm's power saving keys (defaults: Slurm's) and fastsched's boot latency and
    prices. ``suspend_time`` None: SuspendTime=NONE (idle nodes stay up; CLOUD nodes
    still start powered down). ``exc_nodes`` / ``exc_parts`` / ``cloud_nodes``: node
    and partition names (SuspendExcNodes, SuspendExcParts, State=CLOUD). ``boots``: the
    nodes that boot in their own time, ``((name, seconds), ...)`` or a dict, a name
    being a partition or else a Slurm hostlist (``node[01-04]``); ``boot`` is every
    other node's. A node named by two entries must be given one time
    (:func:`fastsched.io.slurmpower.node_boots` resolves them on a cluster)."""

    suspend_time: int | None = None
    suspend_timeout: int = 30
    resume_timeout: int = 60
    resume_rate: int = 300
    suspend_rate: int = 60
    boot: int = 60
    cost: float = 0.0
    cloud_cost: float | None = None
    exc_nodes: tuple = ()
    exc_parts: tuple = ()
    cloud_nodes: tuple = field(default=())
    boots: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "boots", _boot_pairs(self.boots))
        for name in ("suspend_timeout", "resume_timeout", "resume_rate", "suspend_rate",
                     "boot") + (("suspend_time",) if self.suspend_time is not None else ()):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or not 0 <= value <= 2**40:
                raise InputError(f"power: {name}={value!r} must be a whole number >= 0",
                                 field="power")
        for name in ("resume_rate", "suspend_rate"):
            if getattr(self, name) > 60000:
                raise InputError(f"power: {name}={getattr(self, name)} is over Slurm's "
                                 "60000 nodes a minute", field="power")
        for name in ("cost", "cloud_cost"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float))
                                          and 0 <= value < float("inf")):
                raise InputError(f"power: {name}={value!r} must be a number >= 0",
                                 field="power")

    def resume_period_ms(self) -> int:
        """Milliseconds between two power-ups (Slurm's token refill period; 0: none)."""
        return 60000 // self.resume_rate if self.resume_rate else 0

    def suspend_period_ms(self) -> int:
        """Milliseconds between two power-downs (SuspendRate's refill period; 0: none)."""
        return 60000 // self.suspend_rate if self.suspend_rate else 0

    def price(self, cloud: bool) -> float:
        return float(self.cost if not cloud or self.cloud_cost is None else self.cloud_cost)

    def with_text(self, text: str | None) -> "PowerSaving":
        """This model with the ``--power`` text's keys: ``boot=5m,cost=3.2/node-hour,
        cloud-cost=4.1``, a boot by partition or hostlist (``boot[cloud]=5m``,
        ``boot[n[01-04,7]]=30s``: over this model's ``boots``, a name given again
        replaces its time) and Slurm's numeric keys (``SuspendTime=600``,
        ``suspend-time=10m``, ``ResumeRate=20``...; SuspendTime=NONE)."""
        if text is None or not str(text).strip():
            return self
        out: dict = {}
        boots: dict = {}
        for item in _split_items(str(text)):
            key, sep, value = item.strip().partition("=")
            target = _boot_target(key.strip())
            if target is not None and sep:
                if target in boots:
                    raise InputError(f"power: {key.strip()} given twice",
                                     field=f"power.boot[{target}]")
                try:
                    boots[target] = _value("boot", value.strip(), key.strip())
                except InputError as e:
                    raise InputError(e.reason, field=f"power.boot[{target}]") from None
                continue
            name = _OPTION_KEYS.get(key.strip().lower())
            if not sep or name is None:
                raise InputError(f"power: {item.strip()!r} is not one of "
                                 f"{', '.join(sorted(set(_OPTION_KEYS)))} = value",
                                 field="power")
            if name in out:
                raise InputError(f"power: {key.strip()} given twice", field="power")
            out[name] = _value(name, value.strip(), key.strip())
        if boots:
            out["boots"] = tuple({**dict(self.boots), **boots}.items())
        return replace(self, **out)

    @classmethod
    def parse(cls, text: str) -> "PowerSaving":
        """From the ``--power`` text alone (every other key at Slurm's default)."""
        return cls().with_text(text)


def _split_items(text: str) -> list:
    """The ``--power`` text's items: split at the commas outside brackets (a hostlist
    ``n[1-4,7]`` keeps its own)."""
    items, depth, begin = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            items.append(text[begin:i])
            begin = i + 1
    items.append(text[begin:])
    return items


def _boot_target(key: str) -> str | None:
    """The partition or hostlist of a ``boot[NAME]`` key (None: another key)."""
    if key[:5].lower() != "boot[" or not key.endswith("]"):
        return None
    target = key[5:-1].strip()
    if not target:
        raise InputError(f"power: {key!r} names no partition or nodes", field="power.boot")
    return target


def _boot_pairs(boots) -> tuple:
    """``boots`` as ((name, seconds), ...), checked."""
    items = boots.items() if isinstance(boots, Mapping) else boots
    try:
        pairs = tuple((name, value) for name, value in items)
    except (TypeError, ValueError):
        raise InputError(f"power: boots={boots!r} must be (name, seconds) pairs or a dict",
                         field="power.boots") from None
    seen = set()
    for name, value in pairs:
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"power: boots name {name!r} must be a partition or a hostlist",
                             field="power.boots")
        if name in seen:
            raise InputError(f"power: boot[{name}] given twice", field=f"power.boot[{name}]")
        seen.add(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or int(value) != value or not 0 <= value <= 2**40:
            raise InputError(f"power: boot[{name}]={value!r} must be a whole number of "
                             "seconds >= 0", field=f"power.boot[{name}]")
    return tuple((name, int(value)) for name, value in pairs)


def _value(name: str, text: str, key: str):
    if name in ("cost", "cloud_cost"):
        number = text.lower().removesuffix("/node-hour").strip()
        try:
            return float(number)
        except ValueError:
            raise InputError(f"power: {key}={text!r} is not a price per node-hour",
                             field="power") from None
    if name == "suspend_time" and text.upper() in ("NONE", "INFINITE", "-1"):
        return None
    if name in ("resume_rate", "suspend_rate"):
        if not text.isdigit():
            raise InputError(f"power: {key}={text!r} must be a whole number of nodes a "
                             "minute", field="power")
        return int(text)
    t = text.lower()
    unit = _UNITS.get(t[-1:]) if t else None
    try:
        value = float(t[:-1] if unit else t) * (unit or 1)
    except ValueError:
        raise InputError(f"power: {key}={text!r} is not a duration (90, 90s, 10m, 2h)",
                         field="power") from None
    if not 0 <= value <= 2**40 or value != int(value):
        raise InputError(f"power: {key}={text!r} must be a whole number of seconds >= 0",
                         field="power")
    return int(value)

"""Power saving in a simulation: the engine's input and the summary's ``power`` part,
cost vs wait (:mod:`fastsched.model.power`)."""
from __future__ import annotations

import numpy as np

from ..io.slurmpower import node_boots, power_nodes, power_saving
from ..model.cluster import Cluster
from ..model.errors import InputError, UnsupportedError
from ..model.power import PowerSaving


def check_power(power, cluster: Cluster, *, events=None, advance_reservations=None,
                placement=None, lifecycle=None) -> PowerSaving | None:
    """The run's power saving model (``power``: a PowerSaving, or the ``--power`` text
    over the cluster's slurm.conf keys; None: off), refusing what it does not model:
    with node ``events``, elastic (--no-kill) jobs and node ranges of ``lifecycle``, and
    CLOUD nodes that never boot (a node's boot over ResumeTimeout); with
    ``advance_reservations``, a slurm.conf ``SuspendExcStates`` keeping reserved nodes up
    (:func:`reserved_exempt`)."""
    if power is None:
        return None
    if isinstance(power, str):
        power = power_saving(cluster, power)
    if not isinstance(power, PowerSaving):
        raise InputError(f"power must be a fastsched.PowerSaving or its text, got "
                         f"{type(power).__name__}", field="power")
    other = []
    if advance_reservations and reserved_exempt(cluster):
        other.append(f"advance reservations and SuspendExcStates={reserved_exempt(cluster)}")
    if placement is not None and placement.exclusive_topo.any():
        other.append("--exclusive=topo jobs")
    if events is not None and lifecycle is not None and (lifecycle.elastic or lifecycle.ranged):
        other.append("node events and elastic (--no-kill) jobs or node ranges")
    boots = node_boots(cluster, power)
    late = boots > power.resume_timeout
    if events is not None and late.any():
        other.append(f"node events and a boot ({int(boots.max())} s) over ResumeTimeout "
                     f"({power.resume_timeout} s)")
    if other:
        raise UnsupportedError(f"power saving with {' and '.join(other)} is not modelled yet")
    cloud, excluded = power_nodes(cluster, power)
    refused = np.flatnonzero(late & ~cloud & ~excluded) if power.suspend_time is not None \
        else []
    if len(refused):
        x = int(refused[0])
        raise UnsupportedError(f"power: node {cluster.node_names[x]!r} boots in "
                               f"{int(boots[x])} s, over ResumeTimeout "
                               f"{power.resume_timeout} s: a node powered down would go "
                               "DOWN at its resume, which is not modelled for non-CLOUD nodes "
                               "(exclude them with SuspendExcNodes / SuspendExcParts)")
    return power


def reserved_exempt(cluster: Cluster) -> str:
    """The slurm.conf ``SuspendExcStates`` when it names RESERVED or MAINT ("" else).
    Slurm's power thread powers a node in a reservation down as any idle node
    (power_save.c: ``_node_state_suspendable`` reads only the base state and the boot
    flags), unless SuspendExcStates names the node state flags reservation.c sets on the
    nodes of an open reservation (RESERVED, and MAINT for Flags=MAINT): that exemption is
    not modelled."""
    other = {str(k).lower(): str(v) for k, v in (cluster.settings.other.items()
                                                 if cluster.settings is not None else ())}
    text = other.get("suspendexcstates", "")
    names = [_state_flag(w.strip().upper()) for w in text.split(",") if w.strip()]
    return text if {"RESERVED", "MAINTENANCE"} & set(names) else ""


#: Slurm's node state flags in the order ``parse_node_state_flag`` tries them
#: (slurm_protocol_defs.c): a word names the first whose name it begins (or is begun by)
_STATE_FLAGS = ("BLOCKED", "CLOUD", "COMPLETING", "DRAIN", "DYNAMIC_FUTURE", "DYNAMIC_NORM",
                "EXTERNAL", "INVALID_REG", "FAIL", "MAINTENANCE", "POWER_DOWN", "POWER_UP",
                "POWERED_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED", "RESUME",
                "NOT_RESPONDING", "PLANNED", "POWERING_UP", "POWERING_DOWN")


def _state_flag(word: str) -> str:
    """The node state flag a SuspendExcStates word names ("" for none)."""
    n = len(word)
    return next((f for f in _STATE_FLAGS if f[:n] == word[:len(f)]), "")


def down_cloud(power: PowerSaving, cluster: Cluster):
    """Per node whether it is usable (None: all): a CLOUD node whose boot is over
    ResumeTimeout never comes up, so it is DOWN for the whole run."""
    late = node_boots(cluster, power) > power.resume_timeout
    if not late.any():
        return None
    cloud, _ = power_nodes(cluster, power)
    return ~(cloud & late)


def engine_power(power: PowerSaving, cluster: Cluster) -> tuple:
    """The ``power`` argument of :func:`fastsched.engine.loop.run_nodes`."""
    cloud, excluded = power_nodes(cluster, power)
    st = -1 if power.suspend_time is None else int(power.suspend_time)
    boot = node_boots(cluster, power) if power.boots else int(power.boot)
    return (st, int(power.suspend_timeout), boot, power.resume_period_ms(),
            cloud, excluded, power.suspend_period_ms())


def power_summary(power: PowerSaving, cluster: Cluster, run, wait: np.ndarray) -> dict:
    """The summary's ``power``: node-hours powered (CLOUD apart), with a job (from
    allocation, boots included) and powered idle, power-ups, the jobs that waited for
    boots and their mean wait, the cost at the given prices, and the mean wait of all
    started jobs (``wait``): cost vs wait."""
    cloud, _ = power_nodes(cluster, power)
    on = run.power["on_seconds"] / 3600.0
    busy = run.power["busy_seconds"] / 3600.0
    conf = run.configure[run.start >= 0]
    cost = float(on[~cloud].sum() * power.price(False) + on[cloud].sum() * power.price(True))
    return {"node_hours_on": float(on.sum()),
            "cloud_node_hours_on": float(on[cloud].sum()),
            "node_hours_busy": float(busy.sum()),
            "node_hours_idle_on": float(on.sum() - busy.sum()),
            "power_ups": int(run.power["power_ups"]),
            "jobs_configuring": int((conf > 0).sum()),
            "mean_configure_seconds": float(conf[conf > 0].mean()) if (conf > 0).any() else 0.0,
            "cost": cost,
            "cost_per_node_hour": power.price(False),
            "cloud_cost_per_node_hour": power.price(True),
            "mean_wait_seconds": float(wait.mean()) if len(wait) else 0.0,
            "suspend_time": power.suspend_time, "boot": int(power.boot),
            **({"boots": dict(power.boots)} if power.boots else {}),
            "resume_rate": int(power.resume_rate),
            "suspend_rate": int(power.suspend_rate), "horizon": int(run.power["horizon"])}


def power_line(summary: dict) -> str:
    """One line on cost vs wait (a summary's ``power``)."""
    pw = summary["power"]
    st = "NONE" if pw["suspend_time"] is None else f"{pw['suspend_time']} s"
    own = "".join(f", {name} {seconds} s" for name, seconds in pw.get("boots", {}).items())
    return (f"power saving (SuspendTime {st}, boot {pw['boot']} s{own}): "
            f"{pw['node_hours_on']:,.1f} "
            f"node-h powered ({pw['node_hours_idle_on']:,.1f} idle, "
            f"{pw['cloud_node_hours_on']:,.1f} cloud), {pw['power_ups']:,} power-ups, "
            f"cost {pw['cost']:,.2f} vs mean wait {pw['mean_wait_seconds']:,.0f} s")

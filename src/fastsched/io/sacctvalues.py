"""Values of ``sacct --parsable2`` fields: job ids, times, time limits, TRES, states.

Each parser works on the distinct values of a column (a dump of a million rows holds
far fewer distinct TRES strings, time limits or states), or vectorised (times). A
bad value raises InputError naming the value; the reader adds file, line and field.
"""
from __future__ import annotations

import re

import numpy as np

from ..model.errors import InputError
from ..model.jobs import UNLIMITED
from .times import parse_time

__all__ = ["NO_VALUE", "parse_job_ids", "job_ids_from_bytes", "parse_times", "parse_limit", "parse_tres",
           "parse_tres_many", "state_word", "PARTITION_LIMIT"]

#: what sacct prints for a value it does not have
NO_VALUE = frozenset({"", "Unknown", "None", "INVALID", "(null)", "None assigned", "n/a"})
#: Timelimit "Partition_Limit": the partition's MaxTime
PARTITION_LIMIT = -2
_JOB_ID = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.(.+))?$")
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$", re.I)
_MEM_MB = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}
_ISO = "%Y-%m-%dT%H:%M:%S"


def parse_job_ids(values: np.ndarray):
    """JobID texts -> (base id, array task or -1, het offset or -1, is step, is pending
    array range) as arrays; raises InputError at the first malformed one (its index in
    ``.line``)."""
    n = len(values)
    base = np.zeros(n, np.int64)
    task = np.full(n, -1, np.int64)
    het = np.full(n, -1, np.int64)
    step = np.zeros(n, bool)
    pending = np.zeros(n, bool)
    codes, uniques = _factorize(values)
    parsed = []
    for k, text in enumerate(uniques):
        m = _JOB_ID.match(text)
        if not m or len(m.group(1)) > 18:
            raise InputError(f"{text[:40]!r} is not a job id (N, N_T, N+K, N.step)",
                             line=int(np.flatnonzero(codes == k)[0]))
        t = m.group(2)
        parsed.append((int(m.group(1)), int(t) if t and t.isdigit() and len(t) < 10 else -1,
                       int(m.group(3)) if m.group(3) else -1, m.group(4) is not None,
                       bool(t) and not t.isdigit()))
    if n:
        for arr, col in zip((base, task, het, step, pending), zip(*parsed)):
            arr[:] = np.array(col, dtype=arr.dtype)[codes]
    return base, task, het, step, pending


def _leading_digits(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, count) of the digits each row of a byte matrix starts with (at most 19)."""
    n = m.shape[0]
    value = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    active = np.ones(n, bool)
    for j in range(min(m.shape[1], 19)):
        d = m[:, j] - np.uint8(48)                      # wraps below '0': > 9
        active &= d <= 9
        if not active.any():
            break
        value = np.where(active, value * 10 + d, value)
        count += active
    return value, count


def job_ids_from_bytes(m: np.ndarray, length: np.ndarray):
    """As :func:`parse_job_ids`, vectorised over a padded byte matrix of JobIDs (rows x
    width, 0-padded, width > longest): also returns ``ok`` per row instead of raising."""
    n, width = m.shape
    step = (m == ord(".")).any(axis=1)
    base, nb = _leading_digits(m)
    rows = np.arange(n)
    after = m[rows, np.minimum(nb, width - 1)]
    task, het = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    pending = np.zeros(n, bool)
    used = nb.copy()
    tagged = np.flatnonzero((after == ord("_")) | (after == ord("+")))
    if len(tagged):
        # the rest of each tagged row, from just after its '_' or '+'
        shift = nb[tagged] + 1
        cols = np.minimum(shift[:, None] + np.arange(width), width - 1)
        rest = np.where(shift[:, None] + np.arange(width) < width, m[tagged[:, None], cols], 0)
        tail, nt = _leading_digits(rest.astype(np.uint8))
        under = after[tagged] == ord("_")
        pending[tagged] = under & (rest[:, 0] == ord("["))
        has = nt > 0
        task[tagged[under & has]] = tail[under & has]
        het[tagged[~under & has]] = tail[~under & has]
        used[tagged[has]] = shift[has] + nt[has]
    ok = (nb > 0) & (nb <= 18) & (step | pending | (used == length))
    return base, task, het, step, pending, ok


def _factorize(values: np.ndarray):
    import pandas as pd
    codes, uniques = pd.factorize(values)
    return codes, [str(u) for u in uniques]


def parse_times(values: np.ndarray, tz: str = "UTC") -> tuple[np.ndarray, np.ndarray]:
    """sacct timestamps -> (int64 epoch seconds, -1 where sacct printed no value; bool
    per entry: malformed). ``2024-03-01T12:00:00`` is local time in ``tz`` (sacct prints
    local times without an offset); a text with an offset (``...+01:00``, ``...Z``)
    carries its own. A local time that a daylight-saving change makes ambiguous is
    taken as the first (summer-time) one; one that never existed moves forward."""
    import pandas as pd
    series = pd.Series(values, dtype=object)
    parsed = pd.to_datetime(series, format=_ISO, errors="coerce")
    if tz not in ("UTC", "utc", "Z"):
        ambiguous = np.ones(len(parsed), dtype=bool)
        parsed = parsed.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent="shift_forward")
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    missing = parsed.isna().to_numpy()
    out = np.full(len(values), -1, np.int64)
    ok = ~missing
    out[ok] = parsed[ok].to_numpy(dtype="datetime64[s]").astype(np.int64)
    bad = np.zeros(len(values), bool)
    if missing.any():
        idx = np.flatnonzero(missing)
        rest = series.iloc[idx]
        none = rest.isin(NO_VALUE).to_numpy()
        other = idx[~none]
        if len(other):
            again = pd.to_datetime(series.iloc[other], format="ISO8601", errors="coerce",
                                   utc=True)
            good = again.notna().to_numpy()
            out[other[good]] = (again[good].dt.tz_localize(None)
                                .to_numpy(dtype="datetime64[s]").astype(np.int64))
            bad[other[~good]] = True
    bad |= (out < -1)
    return out, bad


def parse_limit(text: str) -> int:
    """Timelimit -> seconds (UNLIMITED for UNLIMITED; PARTITION_LIMIT; -1: no value)."""
    t = text.strip()
    if t in NO_VALUE:
        return -1
    if t == "Partition_Limit":
        return PARTITION_LIMIT
    seconds = parse_time(t)
    if seconds is None:
        return UNLIMITED
    if seconds == 0:
        raise InputError(f"time limit {t!r} is zero")
    return seconds


def _mem_mb(value: str) -> int:
    m = _MEM.match(value)
    if not m:
        raise InputError(f"mem={value!r} is not an amount of memory")
    return int(np.ceil(float(m.group(1)) * _MEM_MB[m.group(2).upper()]))


def parse_tres(text: str) -> tuple[int, int, int, str, int]:
    """A TRES string (``billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32G,node=2``) ->
    (nodes, CPUs, GPUs, GPU type, memory MB), totals of the job (-1: not given)."""
    nodes = cpus = mem = -1
    gpus, typed = -1, {}
    if text.strip() in NO_VALUE:
        return nodes, cpus, 0, "", mem
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise InputError(f"TRES item {item[:40]!r} is not name=count")
        if key == "mem":
            mem = _mem_mb(value)
            continue
        if key not in ("cpu", "node") and not key.startswith("gres/gpu"):
            continue                                    # billing, energy, licenses...
        if not value.isdigit() or len(value) > 12:
            raise InputError(f"TRES {key}={value[:30]!r} is not a count")
        if key == "cpu":
            cpus = int(value)
        elif key == "node":
            nodes = int(value)
        elif key == "gres/gpu":
            gpus = int(value)
        else:
            typed[key.partition(":")[2]] = int(value)
    if gpus < 0:
        gpus = sum(typed.values())
    gpu_type = next(iter(typed)) if len(typed) == 1 else ""
    return nodes, cpus, gpus, gpu_type, mem


def parse_tres_many(texts: list[str]):
    """:func:`parse_tres` of many TRES strings at once: (int64 rows x 4 of nodes, CPUs,
    GPUs, memory MB; GPU type per text; bool per text: parsed here). The items of all
    texts are cut at ``,`` and ``=`` together and their counts read with NumPy; a
    text with a malformed item, spaces, or non-ASCII bytes is not parsed here
    (``False``): :func:`parse_tres` gives its value or its exact error."""
    n = len(texts)
    out = np.tile(np.array([-1, -1, 0, -1], np.int64), (n, 1))
    types = [""] * n
    if not n:
        return out, types, np.zeros(0, bool)
    ok = np.array([t.isascii() and t.strip() not in NO_VALUE for t in texts], bool)
    blob = "\n".join(t if good else "" for t, good in zip(texts, ok.tolist()))
    data = np.frombuffer(blob.encode("ascii"), np.uint8)  # byte i is character i
    newlines = np.flatnonzero(data == 10)
    spaced = np.flatnonzero((data <= 32) & (data != 10))  # parse_tres strips items
    ok[np.searchsorted(newlines, spaced, side="right")] = False
    cut = np.flatnonzero((data == 44) | (data == 10))   # ',' and the text separators
    item_end = np.r_[cut, len(data)]
    item_start = np.r_[0, cut + 1]
    owner = np.searchsorted(newlines, item_end)         # an item ends at or before its text's end
    eq = np.flatnonzero(data == 61)                     # '='
    at = np.searchsorted(eq, item_start)
    eq_pos = np.where(at < len(eq), eq[np.minimum(at, max(len(eq) - 1, 0))], -1) \
        if len(eq) else np.full(len(item_start), -1)
    has_eq = (eq_pos >= 0) & (eq_pos < item_end)
    ok[owner[~has_eq]] = False                          # an item that is not name=count
    keys = [blob[a:b] for a, b in zip(item_start.tolist(), np.where(has_eq, eq_pos, item_end)
                                      .tolist())]
    kind = np.array([_tres_kind(k) for k in keys], np.int64)
    value_start = eq_pos + 1
    counted = has_eq & (kind >= 0) & (kind != 1)        # cpu, node, gres/gpu[:T]
    count, good = _counts(data, value_start[counted], item_end[counted])
    ok[owner[counted][~good]] = False
    mem = np.flatnonzero(has_eq & (kind == 1))
    mem_mb = np.zeros(len(mem), np.int64)
    for k, i in enumerate(mem.tolist()):                # few distinct amounts
        try:
            mem_mb[k] = _mem_mb(blob[value_start[i]:item_end[i]])
        except InputError:
            ok[owner[i]] = False
    # last item of a kind wins, as in parse_tres; typed GPUs summed per text
    items = np.flatnonzero(counted)
    for column, which in ((0, 2), (1, 0), (2, 3)):      # node, cpu, gres/gpu
        sel = kind[items] == which
        out[owner[items[sel]], column] = count[sel]
    out[owner[mem], 3] = mem_mb
    typed = items[kind[items] >= 4]
    if len(typed):
        _typed_gpus(out, types, owner, typed, count[kind[items] >= 4], keys)
    return out, types, ok


#: TRES item names read by parse_tres_many (-1: ignored, 4: gres/gpu:TYPE)
_TRES_KINDS = {"cpu": 0, "mem": 1, "node": 2, "gres/gpu": 3}


def _tres_kind(key: str) -> int:
    if key in _TRES_KINDS:
        return _TRES_KINDS[key]
    return 4 if key.startswith("gres/gpu") else -1


def _counts(data: np.ndarray, start: np.ndarray, end: np.ndarray):
    """(int64 value, ok) of the 1-12 digit numbers data[start:end]."""
    length = end - start
    ok = (length >= 1) & (length <= 12)
    value = np.zeros(len(start), np.int64)
    for j in range(12):
        inside = ok & (j < length)
        if not inside.any():
            break
        d = data[np.minimum(start + j, len(data) - 1)].astype(np.int64) - 48
        ok &= ~inside | ((d >= 0) & (d <= 9))
        value = np.where(inside, value * 10 + d, value)
    return value, ok


def _typed_gpus(out, types, owner, typed, count, keys) -> None:
    """GPUs of texts without ``gres/gpu=`` as the sum of their ``gres/gpu:TYPE=`` items
    (the last item of each type counting), and the type of texts with exactly one."""
    per_text: dict[int, dict[str, int]] = {}
    for i, c in zip(typed.tolist(), count.tolist()):
        per_text.setdefault(int(owner[i]), {})[keys[i].partition(":")[2]] = c
    has_total = set(owner[[i for i in range(len(keys)) if keys[i] == "gres/gpu"]].tolist()) \
        if any(k == "gres/gpu" for k in keys) else set()
    for t, kinds in per_text.items():
        if t not in has_total:
            out[t, 2] = sum(kinds.values())
        types[t] = next(iter(kinds)) if len(kinds) == 1 else ""


def state_word(text: str) -> str:
    """``CANCELLED by 1234`` -> ``CANCELLED``."""
    return text.strip().split(" ")[0].upper()

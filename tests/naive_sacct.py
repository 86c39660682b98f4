"""Slow, obviously-correct twins of the vectorised sacct reading (io/bytetable.py,
io/hostindex.py): a line split in Python, field by field."""
from __future__ import annotations

import re

from fastsched.io.hostlist import expand

_ISO = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})")


def split_rows(raw: bytes, ncols: int):
    """(file line per row, fields (bytes) per row, [(line, field count)] of lines with
    another count); the header is line 1; blank lines (also a lone CR) are skipped."""
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    rows, fields, wrong = [], [], []
    for k, line in enumerate(lines[1:], start=2):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            continue
        parts = line.split(b"|")
        if len(parts) != ncols:
            wrong.append((k, len(parts)))
            continue
        rows.append(k)
        fields.append(parts)
    return rows, fields, wrong


def days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def iso_seconds(field: bytes) -> int | None:
    """Seconds of a naive ``YYYY-MM-DDTHH:MM:SS`` field; None for another form."""
    m = _ISO.fullmatch(field.decode("latin-1"))
    if not m:
        return None
    y, mo, d, hh, mm, ss = (int(g) for g in m.groups())
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    dim = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not (1 <= mo <= 12 and 1 <= d <= dim[mo - 1] and hh < 24 and mm < 60 and ss < 61):
        return None
    return days_from_civil(y, mo, d) * 86400 + hh * 3600 + mm * 60 + ss


def digits(field: bytes, maxlen: int) -> int | None:
    if 0 < len(field) <= maxlen and all(48 <= c <= 57 for c in field):
        return int(field)
    return None


def factorize(values: list) -> tuple[list[int], list]:
    """Codes in order of first appearance."""
    seen: dict = {}
    codes = [seen.setdefault(v, len(seen)) for v in values]
    return codes, list(seen)


def node_list(text: str, node_names: list[str]):
    """Sorted distinct node indices of a hostlist, or None when it names an unknown
    node or is malformed."""
    index = {nm: k for k, nm in enumerate(node_names)}
    try:
        return sorted({index[h] for h in expand(text)})
    except Exception:
        return None

"""Slurm hostlists: ``"node[001-003,010],gpu7"`` <-> a list of host names.

Rules (as Slurm's): names are separated by commas at the top level (commas
inside brackets belong to the bracket); ``prefix[a-b,c]suffix`` expands each
range, with the width of the low bound fixing zero padding (``[001-010]`` gives
``001 ... 010``, ``[8-10]`` gives ``8 9 10``); several bracket groups in one
name give their cartesian product (``a[1-2]b[3-4]`` -> ``a1b3 a1b4 a2b3 a2b4``).

:func:`compress` is the inverse: names sharing a prefix (the text before the
trailing number) and a digit width become one bracket group with sorted,
merged ranges; a lone name stays bare.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from .errors import InputError

__all__ = ["expand", "compress"]

#: refuse to expand hostlists larger than this (a typo like ``[1-999999999]``).
MAX_HOSTS = 1 << 24

_TRAILING_NUM = re.compile(r"^(.*?)(\d+)$", re.S)


def _split_top(hostlist: str) -> list[str]:
    """Split at commas outside brackets, checking bracket balance."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(hostlist):
        if ch == "[":
            if depth:
                raise InputError(f"nested '[' at position {i} in hostlist {hostlist!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise InputError(f"unbalanced ']' at position {i} in hostlist {hostlist!r}")
            depth = 0
        elif ch == "," and not depth:
            items.append(hostlist[start:i])
            start = i + 1
    if depth:
        raise InputError(f"unbalanced '[' (no closing ']') in hostlist {hostlist!r}")
    items.append(hostlist[start:])
    return items


def _expand_range(body: str, hostlist: str) -> list[str]:
    out: list[str] = []
    if not body.strip():
        raise InputError(f"empty brackets '[]' in hostlist {hostlist!r}")
    for part in body.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not sep:
            hi = lo
        if not (lo.isascii() and lo.isdigit() and hi.isascii() and hi.isdigit()):
            raise InputError(f"bad range {part!r} in hostlist {hostlist!r}: "
                             f"expected a number or 'lo-hi'")
        a, b = int(lo), int(hi)
        if a > b:
            raise InputError(f"bad range {part!r} in hostlist {hostlist!r}: {a} > {b}")
        if len(out) + (b - a + 1) > MAX_HOSTS:
            raise InputError(f"hostlist {hostlist!r} expands to more than {MAX_HOSTS} names")
        width = len(lo)
        out.extend(f"{n:0{width}d}" for n in range(a, b + 1))
    return out


def expand(hostlist: str) -> list[str]:
    """All host names of a Slurm hostlist, in order (duplicates kept)."""
    if not isinstance(hostlist, str):
        raise InputError(f"hostlist must be a string, got {type(hostlist).__name__}")
    names: list[str] = []
    for item in _split_top(hostlist):
        item = item.strip()
        if not item:
            continue
        # item alternates literal text and bracket bodies: lit [body] lit [body] lit
        pieces = re.split(r"\[([^\]]*)\]", item)
        choices = []
        for k, piece in enumerate(pieces):
            if k % 2 == 0:
                choices.append((piece,))
            else:
                choices.append(_expand_range(piece, hostlist))
        if len(pieces) == 1:
            names.append(item)
            continue
        total = 1
        for c in choices:
            total *= len(c)
        if len(names) + total > MAX_HOSTS:
            raise InputError(f"hostlist {hostlist!r} expands to more than {MAX_HOSTS} names")
        names.extend("".join(p) for p in itertools.product(*choices))
    return names


def _ranges(nums: list[int], width: int) -> str:
    parts = []
    start = prev = nums[0]
    for n in itertools.chain(nums[1:], [None]):
        if n is not None and n == prev + 1:
            prev = n
            continue
        if start == prev:
            parts.append(f"{start:0{width}d}")
        else:
            parts.append(f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def compress_numbers(numbers: Iterable[int]) -> str:
    """Sorted, de-duplicated integers as ranges, Slurm style: [0, 1, 2, 5] -> "0-2,5"."""
    nums = sorted(set(int(n) for n in numbers))
    return _ranges(nums, 0) if nums else ""


def compress(names: Iterable[str]) -> str:
    """A Slurm hostlist naming exactly the set ``names``.

    Groups appear in order of first appearance; within a group numbers are
    sorted ascending and duplicates dropped. A zero-padded number of width
    ``w`` (``node010``) only joins names printed with ``w`` digits; unpadded
    numbers (``node9``, ``node10``) group together.
    """
    if isinstance(names, str):
        names = [names]
    parsed: list[tuple[str, str | None]] = []
    padded_widths: set[tuple[str, int]] = set()
    for name in names:
        if not isinstance(name, str):
            raise InputError(f"host name must be a string, got {name!r}")
        if not name or any(c in name for c in "[],") or name != name.strip():
            raise InputError(f"bad host name {name!r}")
        m = _TRAILING_NUM.match(name)
        if m is None:
            parsed.append((name, None))
            continue
        prefix, digits = m.group(1), m.group(2)
        parsed.append((prefix, digits))
        if len(digits) > 1 and digits[0] == "0":
            padded_widths.add((prefix, len(digits)))

    # group key -> set of numbers; dict keeps order of first appearance.
    groups: dict[tuple, set[int]] = {}
    for prefix, digits in parsed:
        if digits is None:
            groups.setdefault(("bare", prefix), set())
            continue
        w = len(digits)
        # A width-w padded group also takes unpadded numbers of exactly w digits.
        width = w if (prefix, w) in padded_widths else 1
        groups.setdefault(("num", prefix, width), set()).add(int(digits))

    out = []
    for key, nums in groups.items():
        if key[0] == "bare":
            out.append(key[1])
            continue
        _, prefix, width = key
        ordered = sorted(nums)
        if len(ordered) == 1:
            out.append(f"{prefix}{ordered[0]:0{width}d}")
        else:
            out.append(f"{prefix}[{_ranges(ordered, width)}]")
    return ",".join(out)

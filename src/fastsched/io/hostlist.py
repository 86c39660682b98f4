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
from collections.abc import Iterable, Sequence

import numpy as np

from ..model.errors import InputError
from ..model.noderuns import NodeRuns

__all__ = ["expand", "compress", "compress_rows", "compress_runs", "schedule_hostlists"]

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


def _check_name(name) -> None:
    if not isinstance(name, str):
        raise InputError(f"host name must be a string, got {name!r}")
    if not name or any(c in name for c in "[],") or name != name.strip():
        raise InputError(f"bad host name {name!r}")


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
        _check_name(name)
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


# ---- many hostlists at once ------------------------------------------------------------

#: trailing numbers up to this many digits are handled with int64 arithmetic
_MAX_DIGITS = 18


def compress_rows(names: Sequence[str], offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """:func:`compress` of every row of a CSR list of node indices, with array operations.

    Row ``i`` names ``names[k]`` for ``k`` in ``nodes[offsets[i]:offsets[i + 1]]``.
    Returns an object array of str, element ``i`` equal to ``compress`` of row ``i``'s
    names ("" for an empty row). Runs of consecutive indices naming consecutive
    numbers are handled as one item, so whole-node allocations of thousands of
    nodes cost little; rows that are not one ascending group are sorted.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) == 0:
        return np.full(len(offsets) - 1, "", dtype=object)
    start = np.ones(len(nodes), dtype=bool)         # where a run of consecutive indices starts
    start[1:] = nodes[1:] != nodes[:-1] + 1
    start[offsets[:-1][np.diff(offsets) > 0]] = True
    starts = np.flatnonzero(start)
    runs = NodeRuns(offsets=np.searchsorted(starts, offsets), first=nodes[starts],
                    count=np.diff(np.append(starts, len(nodes))))
    return _compress(names, runs, nodes)


def compress_runs(names: Sequence[str], runs: NodeRuns) -> np.ndarray:
    """:func:`compress_rows` of rows given as runs of consecutive node indices
    (:class:`fastsched.model.noderuns.NodeRuns`): in O(runs + nodes named), not one
    entry per node, unless a row is not one ascending group of names (then its
    nodes are listed one by one, as :func:`compress_rows` does)."""
    if not np.asarray(runs.count).sum():
        return np.full(len(runs.offsets) - 1, "", dtype=object)
    return _compress(names, runs.merged())


def schedule_hostlists(names: Sequence[str], schedule) -> np.ndarray:
    """Each job's hostlist of a :class:`~fastsched.model.schedule.Schedule` (from its node
    runs when it has them: no node index per allocated node)."""
    if schedule.node_runs is not None:
        return compress_runs(names, schedule.node_runs)
    return compress_rows(names, schedule.alloc_offsets, schedule.alloc_nodes)


def _compress(names, runs: NodeRuns, nodes=None) -> np.ndarray:
    """The hostlists of ``runs`` (maximal runs per row); ``nodes``: the same rows one
    index per node, or None to expand the runs only if a row needs them."""
    offsets = runs.node_offsets()
    used = (np.bincount(runs.first, minlength=len(names) + 1)
            - np.bincount(runs.first + runs.count, minlength=len(names) + 1))
    parsed = _ParsedNames(names, np.flatnonzero(np.cumsum(used[:-1]) > 0))
    items = None if parsed.too_long else _ascending_runs(parsed, runs)
    if items is None:
        nodes = runs.nodes() if nodes is None else nodes
    if parsed.too_long:
        return np.array([compress([names[k] for k in nodes[a:b]])
                         for a, b in zip(offsets[:-1], offsets[1:])] or [], dtype=object)
    if items is None:
        items = _sorted_entries(parsed, offsets, nodes)
    tokens, token_row = _range_tokens(parsed.texts, *items)
    return join_rows(tokens, token_row, len(offsets) - 1)


def _ascending_runs(parsed, runs: NodeRuns):
    """Items ``(row, text, lo, hi, width, group)`` for runs of consecutive node indices
    with consecutive numbers, when every row is one group in ascending order (else
    None). ``group`` changes where a bracket group starts: here, at each row."""
    first = runs.first
    last = first + runs.count - 1
    cut = np.flatnonzero(~parsed.follows)           # node k + 1 does not continue node k
    lo_cut, hi_cut = np.searchsorted(cut, first), np.searchsorted(cut, last)
    pieces = hi_cut - lo_cut + 1                    # the run split at each cut inside it
    run = np.repeat(np.arange(len(first)), pieces)
    j = np.arange(len(run)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    k = lo_cut[run] + j                             # the cut ending piece j of its run
    cut = np.append(cut, 0)                         # (k is at most the number of cuts)
    lo_node = np.where(j > 0, cut[np.maximum(k - 1, 0)] + 1, first[run])
    hi_node = np.where(k < hi_cut[run], cut[k], last[run])
    row = np.repeat(np.arange(len(runs.offsets) - 1), np.diff(runs.offsets))[run]
    text, width = parsed.text[lo_node], parsed.width[lo_node]
    lo, hi = parsed.num[lo_node], parsed.num[hi_node]
    _set_row_dependent_widths(width, row, text, parsed, lo_node)
    same_row = row[1:] == row[:-1]
    if (same_row & ((text[1:] != text[:-1]) | (width[1:] != width[:-1])
                    | (lo[1:] <= hi[:-1]))).any():
        return None
    return row, text, lo, hi, width, row


def _sorted_entries(parsed, offsets, nodes):
    """Items ``(row, text, lo, hi, width, group)`` of single entries, repeats dropped, in
    each row's group order (first appearance) with ascending numbers; ``group`` is the
    position of the group's first entry."""
    row = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    text, num, width = parsed.text[nodes], parsed.num[nodes], parsed.width[nodes]
    _set_row_dependent_widths(width, row, text, parsed, nodes)
    group = _first_appearance(row, text * (_MAX_DIGITS + 1) + width)
    order = np.lexsort((num, group))
    row, text, num, width, group = (a[order] for a in (row, text, num, width, group))
    keep = np.ones(len(num), dtype=bool)
    keep[1:] = (group[1:] != group[:-1]) | (num[1:] != num[:-1])
    row, text, num, width, group = (a[keep] for a in (row, text, num, width, group))
    return row, text, num, num, width, group


class _ParsedNames:
    """Per node (only ``used`` ones are parsed): the text before the trailing number
    (an index into ``texts``; bare names: the whole name), the number, and the
    bracket group's digit width (0: bare name; 1: unpadded number)."""

    def __init__(self, names: Sequence[str], used: np.ndarray):
        n = len(names)
        self.text = np.zeros(n, dtype=np.int64)
        self.num = np.zeros(n, dtype=np.int64)
        self.width = np.zeros(n, dtype=np.int64)
        self.digits = np.zeros(n, dtype=np.int64)   # of an unpadded number (0: none)
        ids: dict[str, int] = {}
        padded: set[tuple[int, int]] = set()
        self.too_long = False
        for k in used.tolist():
            _check_name(names[k])
            m = _TRAILING_NUM.match(names[k])
            prefix, digits = (names[k], "") if m is None else m.groups()
            self.text[k] = ids.setdefault(prefix, len(ids))
            if not digits:
                continue
            if len(digits) > _MAX_DIGITS:
                self.too_long = True
                return
            self.num[k] = int(digits)
            if len(digits) > 1 and digits[0] == "0":
                self.width[k] = len(digits)
                padded.add((self.text[k], len(digits)))
            else:
                self.width[k], self.digits[k] = 1, len(digits)
        self.texts = np.array(list(ids), dtype=object)
        self._pick_widths(used, padded)
        #: node k + 1's name continues node k's range (same bracket group, number + 1)
        self.follows = np.zeros(n, dtype=bool)
        self.follows[:-1] = ((self.text[1:] == self.text[:-1]) & (self.width[:-1] > 0)
                             & (self.width[1:] == self.width[:-1])
                             & (self.num[1:] == self.num[:-1] + 1)
                             & ~self.row_dependent[1:] & ~self.row_dependent[:-1])

    def _pick_widths(self, used: np.ndarray, padded: set) -> None:
        """An unpadded w-digit number joins the width-w group when its row has padded
        w-digit names of that prefix, else the width-1 group (as :func:`compress`).
        When no prefix also has unpadded numbers of another length, both groups print
        alike, so such numbers take width w here; ``row_dependent`` marks the others."""
        unpadded = used[self.digits[used] > 0]
        pairs = list(zip(self.text[unpadded].tolist(), self.digits[unpadded].tolist()))
        lengths: dict[int, set] = {}
        for t, d in pairs:
            lengths.setdefault(t, set()).add(d)
        shadowed = np.array([p in padded for p in pairs], dtype=bool)
        mixed = np.array([len(lengths[t]) > 1 for t, _ in pairs], dtype=bool)
        self.row_dependent = np.zeros(len(self.text), dtype=bool)
        self.row_dependent[unpadded[shadowed & mixed]] = True
        canonical = unpadded[shadowed & ~mixed]
        self.width[canonical] = self.digits[canonical]


def _set_row_dependent_widths(width, row, text, parsed: _ParsedNames, nodes) -> None:
    """Width of the row-dependent entries: w when the row has a padded w-digit name
    with the same prefix, else 1 (already set)."""
    check = parsed.row_dependent[nodes]
    if not check.any():
        return
    key = (row * len(parsed.texts) + text) * (_MAX_DIGITS + 1)
    padded_keys = (key + width)[(width > 1) & (parsed.digits[nodes] == 0)]
    digits = parsed.digits[nodes][check]
    width[check] = np.where(np.isin(key[check] + digits, padded_keys), digits, 1)


def _first_appearance(row, group):
    """Per entry, the position of the first entry of its (row, group)."""
    by_group = np.lexsort((group, row))           # stable: first entries lead
    starts = np.ones(len(row), dtype=bool)
    starts[1:] = (row[by_group][1:] != row[by_group][:-1]) | \
        (group[by_group][1:] != group[by_group][:-1])
    where = np.flatnonzero(starts)
    first = np.empty(len(row), dtype=np.int64)
    first[by_group] = np.repeat(by_group[where], np.diff(np.append(where, len(row))))
    return first


def _range_tokens(texts, row, text, lo, hi, width, group):
    """One string per range of consecutive numbers, in order: ``[","] prefix ["["]
    lo["-"hi] ("," | "]" | "")``, and its row; concatenated per row, the hostlists.
    Items are sorted, without repeats; ``group`` changes where a bracket group starts."""
    new_group = np.ones(len(lo), dtype=bool)
    new_group[1:] = group[1:] != group[:-1]
    new_range = new_group.copy()
    new_range[1:] |= lo[1:] != hi[:-1] + 1
    first = np.flatnonzero(new_range)
    last = np.append(first[1:], len(lo)) - 1
    group_of = np.cumsum(new_group) - 1
    group_starts = np.flatnonzero(new_group)
    group_ends = np.append(group_starts[1:], len(lo)) - 1
    multi = (hi[group_ends] > lo[group_starts])[group_of[first]]
    opens = new_group[first]
    closes = np.append(new_group[first[1:]], True)
    row_start = np.ones(len(lo), dtype=bool)
    row_start[1:] = row[1:] != row[:-1]
    bare, w = width[first] == 0, width[first]
    a, b = lo[first], hi[last]
    head = _pick(row_start[first], "", ",") + texts[text[first]] + _pick(multi, "[", "")
    body = _padded(a, w) + _pick(b > a, "-", "") + np.where(b > a, _padded(b, w), "")
    tail = np.where(closes, _pick(multi, "]", ""), ",")
    return np.where(opens, head, "") + np.where(bare, "", body) + tail, row[first]


def _pick(cond, yes: str, no: str) -> np.ndarray:
    return np.where(cond, yes, no).astype(object)


def _padded(values, widths) -> np.ndarray:
    """Decimal strings zero-padded to ``widths``, as an object array."""
    return np.strings.zfill(values.astype(str), widths).astype(object)


def join_rows(tokens: np.ndarray, row: np.ndarray, rows: int) -> np.ndarray:
    """Concatenate ``tokens`` (str, grouped by ``row`` in ascending order) per row:
    an object array of ``rows`` strings, "" for rows without tokens."""
    tokens = np.asarray(tokens, dtype=object)
    text = "".join(tokens.tolist())
    # one C-level join and split instead of a Python loop over rows
    sep = next(c for c in map(chr, itertools.count(1)) if c not in text)
    marks = np.searchsorted(row, np.arange(rows), side="right") + np.arange(rows)
    pieces = np.full(len(tokens) + rows, sep, dtype=object)
    keep = np.ones(len(pieces), dtype=bool)
    keep[marks] = False
    pieces[keep] = tokens
    return np.array("".join(pieces.tolist()).split(sep)[:-1], dtype=object)


def split_items(hostlist: str) -> list[str]:
    """The top-level comma-separated items of a hostlist (brackets kept whole)."""
    return _split_top(hostlist)


def node_indices(text: str, index: dict[str, int], sets: dict | None = None) -> np.ndarray:
    """Sorted unique int64 indices (in ``index``: name -> node) of a node list: a
    hostlist, ``ALL``, or names of ``sets`` (name -> int64 indices, Slurm's
    NodeSets). InputError (without location: callers add it) for an unknown node."""
    text = text.strip()
    if not text:
        return np.zeros(0, dtype=np.int64)
    if text.upper() == "ALL":
        return np.arange(len(index), dtype=np.int64)
    parts, names = [], []
    for item in _split_top(text):
        if sets and item in sets:
            parts.append(sets[item])
        elif item.upper() == "ALL":
            parts.append(np.arange(len(index), dtype=np.int64))
        else:
            names.extend(expand(item))
    try:
        parts.append(np.fromiter((index[h] for h in names), dtype=np.int64, count=len(names)))
    except KeyError as e:
        raise InputError(f"unknown node {e.args[0]!r} (no NodeName line defines it)") from None
    return np.unique(np.concatenate(parts))

"""Many Slurm hostlists at once -> the sorted node indices each names, vectorised.

A sacct dump of a large cluster holds tens of thousands of distinct NodeList values.
Each is cut into its items with one regular expression (``c0012``, ``c[0001-0007,0009]``,
``c[01-02],g7``); the ranges of all of them are expanded together with NumPy and
looked up as (prefix, digit count, number) keys among the cluster's node names, so no
host name string is built. A hostlist of another shape (several bracket groups in one
name, a suffix after the brackets, spaces, a descending range), one naming a node the
cluster lacks, and one with a range longer than the cluster are not resolved here:
:func:`index_lists` reports them and the caller reads them with
:func:`fastsched.io.hostlist.expand`, which gives the exact error.
"""
from __future__ import annotations

import re

import numpy as np

__all__ = ["index_lists"]

# one item: "prefix[ranges]" (ranges: digits, digits-digits, comma-separated) or a name
_ITEM = re.compile(r"([^\[\],\s]+)\[(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\](?:,|$)"
                   r"|([^\[\],\s]+)(?:,|$)")
_TRAILING_NUM = re.compile(r"^(.*?)(\d+)$", re.S)
#: numbers at or above this are left to the slow path (they do not fit the key)
_BIG = 10**10


def _node_keys(names: list[str], prefixes: dict) -> tuple[np.ndarray, np.ndarray]:
    """(sorted keys, node index per key) of the names that end in digits."""
    keys, nodes = [], []
    for k, name in enumerate(names):
        m = _TRAILING_NUM.match(name)
        if m and len(m.group(2)) < 11 and int(m.group(2)) < _BIG:
            pid = prefixes.setdefault(m.group(1), len(prefixes))
            keys.append(_key(pid, len(m.group(2)), int(m.group(2))))
            nodes.append(k)
    keys_a, nodes_a = np.array(keys, np.int64), np.array(nodes, np.int64)
    order = np.argsort(keys_a, kind="stable")
    return keys_a[order], nodes_a[order]


def _key(prefix_id, digits, number):
    return (prefix_id * 16 + digits) * _BIG + number


def _digit_counts(numbers: np.ndarray) -> np.ndarray:
    return np.searchsorted(10 ** np.arange(1, 11, dtype=np.int64), numbers, side="right") + 1


def _parse(texts, wanted, names_index, prefixes):
    """Plain names as (text, node) pairs and ranges as (text, prefix, width, lo, hi)
    columns; the texts not of a simple shape are returned as ``slow``."""
    plain_t, plain_n = [], []
    rng = ([], [], [], [], [])
    slow = []
    for k in wanted:
        text = texts[k]
        if "[" not in text and "," not in text:         # one name: the common case
            plain_t.append(k)
            plain_n.append(names_index.get(text, -1))
            if plain_n[-1] < 0:
                slow.append(k)
            continue
        pos, items = 0, []
        for m in _ITEM.finditer(text):
            if m.start() != pos or m.end() == m.start():
                break
            items.append(m)
            pos = m.end()
        if pos != len(text) or not text or text.endswith(","):
            slow.append(k)
            continue
        ok = True
        for m in items:
            if m.group(3) is not None:
                node = names_index.get(m.group(3), -1)
                ok &= node >= 0
                plain_t.append(k)
                plain_n.append(node)
                continue
            pid = prefixes.get(m.group(1), -1)
            for part in m.group(2).split(","):
                lo, _, hi = part.partition("-")
                a, b = int(lo), int(hi or lo)
                ok &= pid >= 0 and a <= b < _BIG and len(lo) < 11
                for col, v in zip(rng, (k, pid, len(lo), a, b)):
                    col.append(v)
        if not ok:
            slow.append(k)
    return (np.array(plain_t, np.int64), np.array(plain_n, np.int64),
            [np.array(c, np.int64) for c in rng], slow)


def index_lists(texts: list[str], wanted: np.ndarray, node_names: list[str]):
    """For each of ``texts`` (hostlists) at the indices ``wanted``: the sorted distinct
    indices (in ``node_names``) of the nodes it names, as CSR (offsets, indices) over
    all ``texts`` (empty for the others); and the indices left to the slow path."""
    names_index = {nm: k for k, nm in enumerate(node_names)}
    prefixes: dict = {}
    keys, key_nodes = _node_keys(node_names, prefixes)
    plain_t, plain_n, (rt, rp, rw, ra, rb), slow = _parse(
        texts, np.asarray(wanted).tolist(), names_index, prefixes)
    slow_mask = np.zeros(len(texts) + 1, bool)
    slow_mask[slow] = True
    slow_mask[rt[(rb - ra + 1) > max(len(node_names), 1)]] = True   # longer than the cluster
    take = ~slow_mask[rt]
    rt, rp, rw, ra, rb = rt[take], rp[take], rw[take], ra[take], rb[take]
    count = rb - ra + 1
    owner = np.repeat(rt, count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    number = np.repeat(ra, count) + within
    digits = np.maximum(np.repeat(rw, count), _digit_counts(number))
    want = _key(np.repeat(rp, count), digits, number)
    at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    found = (keys[at] == want) if len(keys) else np.zeros(len(want), bool)
    missing = np.unique(owner[~found])
    slow_mask[missing] = True
    slow_mask[plain_t[plain_n < 0]] = True
    owner = np.concatenate([owner[found], plain_t])
    node = np.concatenate([key_nodes[at[found]] if len(keys) else np.zeros(0, np.int64),
                           plain_n])
    keep = ~slow_mask[owner]
    pair = np.unique(owner[keep] * max(len(node_names), 1) + node[keep])
    owner, node = np.divmod(pair, max(len(node_names), 1))
    offsets = np.searchsorted(owner, np.arange(len(texts) + 1))
    return offsets.astype(np.int64), node.astype(np.int64), np.flatnonzero(slow_mask)

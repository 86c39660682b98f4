"""gres.conf: the GPUs of a node and their groups (NVLink islands from ``Links=``,
socket affinity from ``Cores=``), as Slurm's gres.conf man page describes the file.

Lines (comments and continuations as in slurm.conf, :mod:`fastsched.io.conflines`)::

    AutoDetect=nvml                                   # every node: counts from slurm.conf
    NodeName=a[01-16] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31
    NodeName=a[01-16] Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63
    NodeName=m1 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/cap21
    NodeName=b[1-4] Name=gpu Type=v100 Count=4
    Name=gpu File=/dev/nvidia0 Links=-1,2,0,0         # one device per line with Links

* A line applies to the nodes of its ``NodeName`` hostlist, or to every node.
* ``File=`` a device hostlist: one GPU per file, GPU k being the file ending in k.
  ``MultipleFiles=``: one GPU made of several files (MIG, or a GPU with its
  companion devices); it takes the next free GPU number. ``Count=`` without
  files: that many GPUs, numbered on from the largest so far; with ``File=`` it
  must equal the number of files.
* ``AutoDetect=`` (nvml, rsmi, nrt, oneapi; off): fastsched cannot probe
  devices, so a node whose lines only say AutoDetect has the GPU count of its
  slurm.conf ``Gres=`` and no groups ("count from slurm.conf").
* ``Cores=`` (or its old name ``CPUs=``): GPUs with the same core set form a
  group. ``Links=``: link counts to every GPU (-1 for itself); GPUs joined by
  links > 0 form a group. Without either, each GPU is its own group.
* ``Name=`` other than gpu (mps, shard, nic...) and ``Flags=`` are skipped.

Placement takes one GPU layout for every node: :func:`read_gres_conf` without a
node gives the layout every node shares, and an UnsupportedError naming two
lines when node types differ (use ``node=`` for one of them).
"""
from __future__ import annotations

import re

import numpy as np

from ..model.errors import InputError, UnsupportedError
from ..model.topology import GpuGroups
from .conflines import logical_lines, split_words
from .hostlist import expand
from .textfile import read_text

__all__ = ["parse_gres_conf", "read_gres_conf"]

_FILE_RE = re.compile(r"^(.*?)(\d+)$")
_GRES_KEYS = {"nodename", "name", "type", "file", "cores", "cpus", "links", "count", "flags",
              "autodetect", "multiplefiles"}
_MAX_GPUS = 64


def _lines(text: str, file: str):
    """(line number, lower key -> (spelling, value)) of the non-blank lines."""
    for lineno, logical in logical_lines(text):
        words = split_words(logical, file, lineno)
        if words:
            yield lineno, {k.lower(): (k, v.strip()) for k, v in words}


def _gpu_lines(text: str, file: str):
    """The Name=gpu lines (checked keys), as (line, opts)."""
    out = []
    for lineno, opts in _lines(text, file):
        if "name" not in opts:
            if "autodetect" in opts:
                continue
            raise InputError("gres.conf line without Name=", file=file, line=lineno,
                             field=next(iter(opts.values()))[0])
        if opts["name"][1].lower() != "gpu":
            continue
        for key, (spelled, _) in opts.items():
            if key not in _GRES_KEYS:
                raise InputError(f"unknown key {spelled}=", file=file, line=lineno,
                                 field=spelled)
        out.append((lineno, opts))
    return out


def _applies(opts: dict, node: str, file: str, lineno: int) -> bool:
    try:
        return node in expand(opts["nodename"][1])
    except InputError as e:
        raise InputError(e.reason, file=file, line=lineno, field="NodeName") from None


def parse_gres_conf(text: str, *, file: str = "gres.conf", node: str | None = None) -> GpuGroups:
    """GPU groups of one node (``node``), or of every node when they share one layout
    (``node=None``), from gres.conf text; rules in the module docs. A malformed line
    raises InputError naming the file, line and key."""
    lines = _gpu_lines(text, file)
    plain = [x for x in lines if "nodename" not in x[1]]
    named = [x for x in lines if "nodename" in x[1]]
    if node is not None:
        use = sorted(plain + [x for x in named if _applies(x[1], node, file, x[0])],
                     key=lambda x: x[0])
        return _groups(use, file)
    by_nodes: dict[str, list] = {}
    for lineno, opts in named:
        by_nodes.setdefault(opts["nodename"][1], []).append((lineno, opts))
    if not by_nodes:
        return _groups(plain, file)
    layouts = {}
    for key, group in by_nodes.items():
        g = _groups(sorted(plain + group, key=lambda x: x[0]), file)
        layouts[key] = (g, group[0][0])
    first, *rest = layouts.values()
    for g, lineno in rest:
        if g.num_gpus != first[0].num_gpus or g.masks.tolist() != first[0].masks.tolist():
            raise UnsupportedError(
                f"{file}:{lineno}: these nodes' GPU layout differs from that of line "
                f"{first[1]}; placement takes one layout for all nodes (read one node type "
                "with read_gres_conf(path, node=...))")
    return first[0]


def _groups(use, file: str) -> GpuGroups:
    entries = []   # (gpu index, cores or None, links or None, lineno)
    for lineno, opts in use:
        entries.extend(_line_gpus(lineno, opts, file, entries))
    return _groups_from_entries(entries, file)


def _line_gpus(lineno: int, opts: dict, file: str, before: list):
    """The (gpu, cores, links, line) entries of one Name=gpu line."""
    def fail(message, field):
        return InputError(message, file=file, line=lineno, field=field)
    cores_key = "cores" if "cores" in opts else "cpus" if "cpus" in opts else None
    cores = _cpu_set(opts[cores_key][1], file, lineno, opts[cores_key][0]) if cores_key \
        else None
    count = None
    if "count" in opts:
        c = opts["count"][1]
        if not (c.isascii() and c.isdigit()) or not 0 < int(c) <= _MAX_GPUS:
            raise fail(f"Count={c!r} is not a GPU count 1..{_MAX_GPUS}", opts["count"][0])
        count = int(c)
    nxt = max((e[0] for e in before), default=-1) + 1
    if "multiplefiles" in opts:
        _expand(opts["multiplefiles"][1], file, lineno, "MultipleFiles")
        indices = [nxt]
    elif "file" in opts:
        indices = [_device(f, file, lineno) for f in _expand(opts["file"][1], file, lineno,
                                                             "File")]
        if count is not None and count != len(indices):
            raise fail(f"Count={count} but File= names {len(indices)} devices",
                       opts["count"][0])
    elif count is not None:
        indices = list(range(nxt, nxt + count))
    elif "autodetect" in opts:
        return []
    else:
        raise fail("Name=gpu line without File=, MultipleFiles= or Count=", "File")
    links = _links(opts, indices, file, lineno) if "links" in opts else None
    if max(indices, default=0) >= _MAX_GPUS:
        raise fail(f"more than {_MAX_GPUS} GPUs on a node", "Count")
    return [(k, cores, links, lineno) for k in indices]


def _expand(text: str, file: str, lineno: int, field: str) -> list[str]:
    try:
        return expand(text)
    except InputError as e:
        raise InputError(e.reason, file=file, line=lineno, field=field) from None


def _device(name: str, file: str, lineno: int) -> int:
    m = _FILE_RE.match(name)
    if not m or int(m.group(2)) >= _MAX_GPUS:
        raise InputError(f"device file {name!r} does not end in a GPU number 0..63",
                         file=file, line=lineno, field="File")
    return int(m.group(2))


def _links(opts: dict, indices: list[int], file: str, lineno: int) -> list[int]:
    if len(indices) != 1:
        raise InputError("Links= needs one device per line", file=file, line=lineno,
                         field="Links")
    try:
        return [int(x) for x in opts["links"][1].split(",")]
    except ValueError:
        raise InputError(f"Links={opts['links'][1]!r} is not a list of numbers",
                         file=file, line=lineno, field="Links") from None


def _cpu_set(text: str, fname: str, lineno: int, field: str = "Cores") -> frozenset[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not (lo.isdigit() and (not sep or hi.isdigit())) or (sep and int(hi) < int(lo)) \
                or len(lo) > 6 or len(hi) > 6:
            raise InputError(f"bad CPU range {part!r} in {field}={text!r}", file=fname,
                             line=lineno, field=field)
        cpus.update(range(int(lo), int(hi if sep else lo) + 1))
    return frozenset(cpus)


def _groups_from_entries(entries, file: str) -> GpuGroups:
    gpus = [e[0] for e in entries]
    dup = {k for k in gpus if gpus.count(k) > 1}
    if dup:
        k = min(dup)
        line = [e[3] for e in entries if e[0] == k][1]
        raise InputError(f"GPU {k} defined twice", file=file, line=line, field="File")
    num = max(gpus) + 1 if gpus else 0
    with_links = [e for e in entries if e[2] is not None]
    groups: list[int] = []
    if with_links:
        if len(with_links) != len(entries):
            line = next(e[3] for e in entries if e[2] is None)
            raise InputError("Links= given for some GPUs but not this one", file=file,
                             line=line, field="Links")
        parent = {k: k for k in gpus}

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k
        for k, _, links, line in entries:
            if len(links) != num:
                raise InputError(f"Links= has {len(links)} entries for {num} GPUs",
                                 file=file, line=line, field="Links")
            if links[k] != -1:
                raise InputError(f"Links= entry {k} (the GPU itself) must be -1", file=file,
                                 line=line, field="Links")
            for j, v in enumerate(links):
                if j != k and v > 0 and j in parent:
                    parent[find(j)] = find(k)
        comp: dict[int, int] = {}
        for k in gpus:
            comp[find(k)] = comp.get(find(k), 0) | (1 << k)
        groups = list(comp.values())
        source = "Links"
    elif any(e[1] is not None for e in entries):
        by_cores: dict = {}
        for k, cores, _, _ in entries:
            key = cores if cores is not None else ("gpu", k)
            by_cores[key] = by_cores.get(key, 0) | (1 << k)
        groups = list(by_cores.values())
        source = "Cores"
    else:
        groups = [1 << k for k in gpus]
        source = ""
    groups.sort(key=lambda m: (m & -m))
    return GpuGroups(np.array(groups, dtype=np.uint64), num, source)


def read_gres_conf(path, node: str | None = None) -> GpuGroups:
    """:func:`parse_gres_conf` of the file at ``path``."""
    return parse_gres_conf(read_text(path), file=str(path), node=node)

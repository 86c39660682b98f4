"""Node event files: ``time,event,nodes[,reason]`` CSV rows (a header line first),
``event`` one of drain, resume, down, up, ``nodes`` a Slurm hostlist
(``gpu[001-004,009]``), ``time`` in seconds of simulated time. Lines starting
with ``#`` and blank lines are skipped."""
from __future__ import annotations

import csv

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.events import NODE_EVENT_KINDS, NodeEvents
from .hostlist import expand
from .textfile import read_text

COLUMNS = ("time", "event", "nodes", "reason")


def read_node_events(path, cluster: Cluster) -> NodeEvents:
    """The events of the file at ``path`` on ``cluster``'s nodes; a malformed line is
    an InputError naming the file, line and field."""
    fname = str(path)
    lines = [(i + 1, line) for i, line in enumerate(read_text(path).splitlines())
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError("no header line (time,event,nodes[,reason])", file=fname)
    header_line, header = lines[0]
    names = [h.strip().lower() for h in next(csv.reader([header]))]
    if names[:3] != list(COLUMNS[:3]) or names[3:] not in ([], ["reason"]):
        raise InputError(f"header must be time,event,nodes[,reason], got {header!r}",
                         file=fname, line=header_line)
    index = {name: i for i, name in enumerate(cluster.node_names)}
    rows = []
    for number, line in lines[1:]:
        fields = [f.strip() for f in next(csv.reader([line]))]
        if len(fields) not in (3, len(names)):
            raise InputError(f"expected {len(names)} fields, got {len(fields)}", file=fname,
                             line=number)
        rows.append(_row(fields, index, fname, number))
    return NodeEvents.from_rows(rows, cluster.num_nodes)


def _row(fields, index, fname, number):
    text, kind, hosts = fields[:3]
    try:
        t = int(text)
    except ValueError:
        raise InputError(f"{text!r} is not a whole number of seconds", file=fname, line=number,
                         field="time") from None
    if t < 0:
        raise InputError(f"negative time {t}", file=fname, line=number, field="time")
    if kind.lower() not in NODE_EVENT_KINDS:
        raise InputError(f"unknown event {kind!r}; choose one of {', '.join(NODE_EVENT_KINDS)}",
                         file=fname, line=number, field="event")
    try:
        names = expand(hosts)
    except InputError as e:
        raise InputError(e.reason, file=fname, line=number, field="nodes") from None
    unknown = [n for n in names if n not in index]
    if unknown or not names:
        raise InputError(f"{unknown[0] if unknown else hosts!r} is not a node of the cluster",
                         file=fname, line=number, field="nodes")
    return (t, kind.lower(), [index[n] for n in names], fields[3] if len(fields) > 3 else "")

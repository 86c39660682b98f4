"""``fastsched sbatch``: parse a batch script and sbatch options as Slurm does; with --test-only
print the normalised request and its expected start."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..io.sbatch import (NormalisedRequest, SlurmRequest, format_request, normalise, parse_args,
                         parse_script, to_job_request)
from ..io.reservations import read_reservations
from ..model.constraints import PartitionChoices
from ..model.jobs import JobTable
from ..model.resvjobs import JobReservations
from ..model.errors import InputError
from ..sim.gputypes import place_gpu_types
from ..sim.scheduler import Scheduler
from ..tools.generate import load_cluster


_USAGE = ("usage: fastsched sbatch --test-only [--cluster slurm.conf|ai-8k|ai-100k|ai-1m] "
          "[--resv-file FILE] [--user NAME] [--image-pull SPEC] [--power SPEC] [--strict] "
          "SCRIPT [sbatch options...]")
_HELP = _USAGE + """

Parse a batch script's #SBATCH lines and sbatch options (options on the command line
override the script's), print the request as Slurm normalises it and, on a cluster
the engine can schedule, its expected start on an empty cluster. fastsched runs no
jobs: only --test-only is supported.

  --test-only            print the normalised request and its expected start
  --cluster C            slurm.conf path, or ai-8k / ai-100k / ai-1m (default: none,
                         so no cluster checks and no expected start)
  --resv-file FILE       advance reservations (as simulate --resv-file takes them): the
                         expected start keeps out of their windows, and a job with
                         --reservation=NAME starts inside one of NAME's windows
                         (with Flags=FLEX, in them or anywhere else)
  --user NAME            the submitting user, for the reservations' Users= (default:
                         unknown; -A/--account is the account)
  --image-pull SPEC      the pull model of --container-image (as simulate takes it:
                         default=120s,cache=4[,IMAGE=SECONDS...]): the start shows the
                         image's pull (nodes' caches start empty), inside the time limit
  --power SPEC           power saving over the slurm.conf keys (as simulate takes it:
                         boot=5m[,SuspendTime=600,...]): a start on powered-down (CLOUD)
                         nodes shows how long the job is CONFIGURING while they boot
  --strict               an unknown #SBATCH option is an error (default: a warning
                         naming file:line; the option is listed as ignored)
  -h, --help             this help

The expected start is on an empty cluster: no job runs there to be preempted, so
there is no --preempt-backfill (planning with preemptable capacity, simulate
--preempt-backfill, would give the same start).

pyxis/enroot options (--container-image, --container-mounts, --container-workdir,
--container-name, --no-container-mount-home, ...) are accepted and shown; a
workload built from scripts keeps --container-image (column container_image, whose
pulls `simulate --image-pull` models). Unknown options on the command line are
errors, as sbatch's are.
"""


#: the subparser takes every argument after ``sbatch`` untouched (``prefix_chars`` is
#: not ``-``), because sbatch options may come before or after the script
PARSER_OPTIONS = {"prefix_chars": "+", "add_help": False}


def configure(s: argparse.ArgumentParser, command: str) -> None:
    s.usage = _USAGE.removeprefix("usage: ")
    s.description = "Parse #SBATCH lines and sbatch options as Slurm does."
    s.add_argument("tokens", nargs="*")
    s.set_defaults(run=_cmd_sbatch)


#: fastsched's own options that take a value (not sbatch's): what the value is
_VALUED = {"--cluster": "slurm.conf, ai-8k, ai-100k, ai-1m", "--resv-file": "a file",
           "--user": "a user name", "--image-pull": "a pull model, e.g. default=120s,cache=4",
           "--power": "a power model, e.g. boot=5m"}


def _split_cli(tokens: list[str]):
    """(test_only, values of :data:`_VALUED` by name without dashes, help, strict,
    sbatch tokens) from the raw tokens."""
    test_only = help_ = strict = False
    values: dict = {}
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        i += 1
        name = t.partition("=")[0]
        if t == "--":
            rest.extend(tokens[i - 1:])
            break
        if t == "--test-only":
            test_only = True
        elif t in ("-h", "--help"):
            help_ = True
        elif t == "--strict":
            strict = True
        elif t in _VALUED:
            if i >= len(tokens):
                raise InputError(f"{t} needs a value ({_VALUED[t]})")
            values[t[2:]] = tokens[i]
            i += 1
        elif name in _VALUED:
            values[name[2:]] = t.partition("=")[2]
        else:
            rest.append(t)
    return test_only, values, help_, strict, rest


def _cmd_sbatch(args) -> int:
    test_only, values, help_, strict, rest = _split_cli(list(args.tokens))
    cluster_spec = values.get("cluster")
    if help_:
        print(_HELP, end="")
        return 0
    _check_cost_texts(values)
    cli = parse_args(rest, stop_at_positional=True)
    script = cli.script
    if script is None:
        raise InputError("no batch script given (" + _USAGE + ")")
    after = parse_args(cli.script_args, stop_at_positional=True)
    if after.script is not None:
        raise InputError(f"unexpected argument {after.script!r} after the script "
                         "(script arguments are not supported)")
    cli = SlurmRequest({**cli.options, **after.options}, {**cli.origin, **after.origin}, script)
    test_only = test_only or "test-only" in cli
    if not test_only:
        raise InputError("only --test-only is supported (fastsched does not run jobs)")
    req = parse_script(Path(script), strict=strict).merged(cli)
    cluster = None
    if cluster_spec:
        cluster = load_cluster(cluster_spec)
    norm = normalise(req, cluster)
    print(f"{script}: normalised request" + (f" on {cluster_spec}" if cluster_spec else ""))
    for line in format_request(norm):
        print("   " + line)
    for note in norm.notes:
        print("   note: " + note)
    if norm.time_min:
        print("   note: the expected start plans the job with its full time limit "
              "(--time-min: an empty cluster has no later hold to cut it for; the "
              "Scheduler does not model it with reservation windows yet)")
    print(_expected_start(norm, cluster, values.get("resv-file"), values.get("user"),
                          values.get("image-pull"), values.get("power")))
    return 0


def _expected_start(norm: NormalisedRequest, cluster, resv_file=None, user=None,
                    image_pull=None, power=None) -> str:
    """Expected start on an empty ``cluster``: the Scheduler's what-if (the engine
    the request needs, as the simulator would pick it), with the reservations of
    ``resv_file`` (None: none) and the job in the one it names; with ``image_pull`` /
    ``power`` (texts), the start's pull and boots."""
    if cluster is None:
        if resv_file or norm.reservation:
            raise InputError("reservations need the nodes: give --cluster", field="--cluster")
        return "expected start: not computed (no --cluster given)"
    if norm.reservation and not resv_file:
        raise InputError(f"--reservation={norm.reservation}: give the reservations "
                         "(--resv-file)", field="reservation")
    parts = [cluster.partition_index(p) for p in norm.partitions] or [0]
    placed = place_gpu_types(cluster, [norm.gpu_type],
                             PartitionChoices(np.array([0, len(parts)]), np.array(parts)))
    request = to_job_request(norm, job_id=1, submit_time=0,
                             partition=int(placed.partition[0]))
    options = {}
    if resv_file:
        table = JobTable.from_requests([request])
        resv = JobReservations.of(read_reservations(resv_file, cluster),
                                  [norm.reservation or ""], None if user is None else [user],
                                  None if norm.account is None else [norm.account],
                                  table.job_id)
        options = {"jobs": table, "advance_reservations": resv}
    options.update(_start_costs(norm, request, cluster, image_pull, power))
    sched = Scheduler(placed.cluster, "conservative", **options)
    sched.submit(request)
    start = int(sched.expected_start_times(now=0)["expected_start"].iloc[0])
    if start < 0:
        return (f"expected start: never (no window of reservation {norm.reservation!r} "
                "fits its time limit)")
    extra = []
    if norm.dependencies:
        extra.append("assuming its dependencies are satisfied")
    if norm.array is not None:
        extra.append("for the first array task")
    if placed.derived:
        extra.append(f"on the nodes with {norm.gpu_type} GPUs")
    if norm.reservation:
        extra.append(f"in reservation {norm.reservation}")
    suffix = f" ({'; '.join(extra)})" if extra else ""
    return f"expected start: {start} s after submission on an empty cluster{suffix}" + \
        _costs_line(sched, start)


def _check_cost_texts(values: dict) -> None:
    """``--image-pull`` and ``--power``: checked before anything is printed."""
    from ..model.images import ImagePull
    from ..model.power import PowerSaving
    for name, parse in (("image-pull", ImagePull.parse), ("power", PowerSaving.parse)):
        if values.get(name):
            if not values.get("cluster"):
                raise InputError(f"--{name} needs the nodes: give --cluster",
                                 field="--cluster")
            parse(values[name])


def _start_costs(norm: NormalisedRequest, request, cluster, image_pull, power) -> dict:
    """The Scheduler options of ``--image-pull`` (the job's --container-image) and
    ``--power`` (over ``cluster``'s slurm.conf keys)."""
    out = {}
    if image_pull:
        from ..model.images import Containers
        out.update(jobs=JobTable.from_requests([request]),
                   containers=Containers.of([norm.container.get("container-image") or ""],
                                            image_pull))
    if power:
        from ..io.slurmpower import power_saving
        out["power"] = power_saving(cluster, power)
    return out


def _costs_line(sched: Scheduler, start: int) -> str:
    """What the start costs (with --image-pull / --power): its boots and its pull."""
    if sched.start_costs is None or start != 0:
        return ""
    d = sched.schedule(0)
    state, configure, pull = d.job_state[0], int(d.configure_time[0]), int(d.pull_time[0])
    lines = [f"\njob state at its start: {state}"]
    if configure:
        lines.append(f" for {configure} s while its powered-down nodes boot (it runs from "
                     f"{configure} s; its time limit counts from then)")
    if sched.start_costs.images is not None:
        lines.append(f"\nimage pull: {pull} s, inside its time limit")
    return "".join(lines)

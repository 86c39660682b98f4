"""The output files of ``fastsched simulate``: per-job records (CSV, Parquet or Arrow
by the name), sacct-like records, an SWF trace and Batsim's jobs.csv."""
from __future__ import annotations

import argparse
import os

from ..io.jobsout import jobs_format, write_jobs
from ..io.sacctout import DEFAULT_SACCT_FIELDS, parse_sacct_fields, write_sacct
from .common import write_atomic


def output_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("outputs (each written whole: temporary file, then rename)")
    g.add_argument("--jobs-out", metavar="FILE",
                   help="one record per job; the name picks the format: .csv (.csv.gz...), "
                   ".parquet, .arrow/.feather (Parquet/Arrow need pip install "
                   "'fastsched[parquet]')")
    g.add_argument("--sacct-out", metavar="FILE",
                   help="the jobs as 'sacct --parsable2' prints them ('|'-separated, header "
                   "line, Slurm's value formats; times in --tz); fastsched reads it back as "
                   "a sacct dump")
    g.add_argument("--sacct-format", metavar="FIELDS", default=",".join(DEFAULT_SACCT_FIELDS),
                   help="the fields of --sacct-out, sacct's --format names (any case): "
                   "JobID, JobIDRaw, JobName, User, Account, Partition, QOS, Submit, Eligible, "
                   "Start, End, Elapsed, ElapsedRaw, Timelimit, TimelimitRaw, ReqTRES, "
                   "AllocTRES, ReqCPUS, AllocCPUS, ReqNodes, NNodes, NodeList, State, "
                   "ExitCode, CPUTimeRAW, Reservation (the reservation a job ran in, "
                   "--resv-file) (default: %(default)s)")
    g.add_argument("--swf-out", metavar="FILE",
                   help="the schedule as an SWF trace (18 fields, ';' header; wait and run "
                   "times as simulated)")
    g.add_argument("--batsim-out", metavar="FILE.csv",
                   help="the jobs as Batsim's jobs.csv (evalys reads it; resources = nodes)")


def check_outputs(args) -> None:
    """Refuse bad output options before the run: an unknown name ending or field."""
    if args.jobs_out:
        jobs_format(args.jobs_out)
    if args.sacct_out:
        parse_sacct_fields(args.sacct_format)


def write_outputs(args, result, workload) -> None:
    """Write every output file the options ask for, and say so."""
    n = len(result.workload)
    if args.jobs_out:
        fmt = jobs_format(args.jobs_out)
        write_atomic(result.to_csv if fmt == "csv" else
                     lambda path: write_jobs(result.jobs, path, fmt), args.jobs_out)
        records = len(result.jobs) if getattr(result, "attempts", None) is not None else n
        print(f"wrote {records:,} job records to {args.jobs_out}")
    if args.sacct_out:
        write_atomic(lambda path: write_sacct(result, path, args.sacct_format,
                                              workload=workload, tz=args.tz), args.sacct_out)
        print(f"wrote {n:,} sacct records to {args.sacct_out}")
    if args.swf_out:
        from ..io.swfout import write_swf
        write_atomic(lambda path: write_swf(result, path, workload=workload), args.swf_out)
        print(f"wrote {n:,} SWF jobs to {args.swf_out}")
    if args.batsim_out:
        from ..io.batsimout import write_batsim
        name = _workload_name(str(args.trace))
        write_atomic(lambda path: write_batsim(result, path, name), args.batsim_out)
        print(f"wrote {n:,} Batsim job rows to {args.batsim_out}")


def _workload_name(path: str) -> str:
    """The trace's file name without compression and format endings (Batsim's
    workload_name)."""
    name = os.path.basename(path)
    for ending in (".gz", ".xz", ".bz2"):
        name = name[:-len(ending)] if name.endswith(ending) else name
    return os.path.splitext(name)[0] or "w0"

"""The ``fastsched`` command, the package's only home of argparse.

One module per subcommand (or per family: sprio and sshare share one), each with
``configure(parser, command)`` (the command's options, and the function that runs it
as the parser's default), a thin call of the public API.
Only the module of the command given is imported, so ``fastsched --help`` and
the help of commands that do not plan load no compiled engine.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings

from ..model.errors import ConfigWarning, FastschedError


#: command -> (module of this package, one-line help)
COMMANDS = {
    "simulate": ("simulate", "replay a trace under a policy and print the summary"),
    "demo": ("demo", "replay the bundled KTH-SP2 trace under fcfs, easy and conservative, "
             "side by side"),
    "check": ("check", "verify a schedule (jobs CSV) against its trace, or what Slurm did "
              "(a sacct dump)"),
    "replay-report": ("replay", "what Slurm did (a sacct dump) vs a policy replayed on the "
                      "same jobs, side by side"),
    "bench": ("bench", "run a standard benchmark scenario"),
    "compile": ("compile", "compile every kernel of the engine now (once per install; the "
                "first simulation otherwise waits for it)"),
    "generate": ("generate", "write a standard cluster (slurm.conf), workload (CSV) or the "
                 "example site configuration"),
    "sbatch": ("sbatch", "parse a batch script + sbatch options; with --test-only print the "
               "normalised request and expected start"),
    "run": ("run", "launch a command as the tasks of a local allocation (like srun)"),
    "sprio": ("views", "multifactor priority and its weighted factors of the pending jobs "
              "at a time of a simulation (like sprio -l)"),
    "sshare": ("views", "shares, usage and fair-share factors of every association at a "
               "time of a simulation (like sshare -l -a)"),
    "plan": ("plan", "plan every pending job's start and nodes on a cluster's state (running "
             "and pending jobs) as Slurm's backfill would"),
    "compare-plan": ("plan", "compare two plans of one state job by job (fastsched plan vs "
                     "Slurm's squeue --start)"),
    "sweep": ("sweep", "run a grid of simulations (policies x parameters x traces x seeds) "
              "from a TOML sweep file on a process pool, Dask or Ray into one table"),
    "plot": ("plot", "plot a schedule (Gantt, utilisation, queue length), wait-time CDFs "
             "or sweep results (needs fastsched[plot])"),
    "research": ("research", "research modes: reproduce published simulators' results "
                 "(rlscheduler: RLScheduler's SC'20 tables)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    warnings.showwarning = _show_warning
    try:
        if _command(argv) is not None:   # the top-level --help and --version load no engine
            from ..engine.interrupt import signals_interrupt
            signals_interrupt()
        parser = build_parser(argv)      # imports the command's module: may take a second
        args = parser.parse_args(argv)
        args.argv = argv
        if not hasattr(args, "run"):
            parser.print_help()
            return 2
        code = args.run(args) or 0
        # every result out before the interpreter's teardown, during which a signal
        # ends the process without Python's handlers
        sys.stdout.flush()
        return code
    except KeyboardInterrupt as e:        # Ctrl-C, SIGTERM; Interrupted says where the run was
        code = 128 + int(getattr(e, "signum", signal.SIGINT))
        # without the engine's module loaded, no run was under way
        interrupt = sys.modules.get("fastsched.engine.interrupt")
        ran = interrupt is not None and isinstance(e, interrupt.Interrupted)
        print(f"fastsched: {e if ran else 'interrupted'}; no result written", file=sys.stderr)
        if interrupt is not None and interrupt.kernel_running():
            sys.stdout.flush()          # a kernel still compiling cannot be stopped:
            sys.stderr.flush()          # end the process without waiting for it
            os._exit(code)
        return code
    except FastschedError as e:
        print(f"fastsched: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:               # e.g. `fastsched ... | head`: not an error
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"fastsched: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A ConfigWarning as one line (it names its file and line); others as Python shows
    them."""
    if issubclass(category, ConfigWarning):
        print(f"fastsched: warning: {message}", file=sys.stderr)
        return
    print(warnings.formatwarning(message, category, filename, lineno, line), end="",
          file=sys.stderr if file is None else file)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: every command listed, the one ``argv`` names configured."""
    from .. import __version__
    p = argparse.ArgumentParser(prog="fastsched", description=(
        "Slurm-compatible scheduling core: replay workload traces under FCFS, EASY and "
        "conservative backfilling, check schedules, run benchmarks."))
    p.add_argument("--version", action="version", version=f"fastsched {__version__}")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    chosen = _command(argv)
    for name, (module_name, helptext) in COMMANDS.items():
        if name != chosen:
            sub.add_parser(name, help=helptext)
            continue
        module = importlib.import_module(f".{module_name}", __name__)
        s = sub.add_parser(name, help=helptext, **getattr(module, "PARSER_OPTIONS", {}))
        module.configure(s, name)
    return p


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word not an option), or None."""
    return next((a for a in argv if not a.startswith("-")), None)

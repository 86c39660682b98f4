"""sbatch options: the table of options fastsched knows, and parsing ``#SBATCH`` lines
and sbatch/srun argument lists into a :class:`SlurmRequest` (options as spelled;
:func:`fastsched.io.sbatch.normalise` turns one into per-node numbers).

* ``--opt=value``, ``--opt value``, ``-Xvalue`` and ``-X value`` for the short forms
  Slurm has (``-N -n -c -G -C -t -p -q -A -d -a -J -o -e -D ...``). Options stop at
  the first non-option argument (the script or command) or at ``--``, as sbatch/srun
  stop (getopt ``+`` mode); a leading ``sbatch``/``srun``/``salloc`` word is skipped.
  A later option overrides an earlier one.
* Long options must be spelled in full (getopt's unique-prefix abbreviations are not
  accepted).
* Options Slurm has but fastsched does not model (``--output``, ``--mail-type``,
  ``--nodelist`` ...) are accepted and listed in ``NormalisedRequest.ignored``.
* pyxis/enroot container options (``--container-image``, ``--container-mounts``,
  ``--container-workdir``, ``--container-name``, ``--container-save``,
  ``--container-env``, ``--[no-]container-mount-home``,
  ``--[no-]container-remap-root``, ``--[no-]container-entrypoint``,
  ``--container-entrypoint-log``, ``--container-writable``, ``--container-readonly``)
  are accepted and kept as given (``NormalisedRequest.container``): a container
  changes no scheduling decision; ``--container-image`` becomes the job's
  ``container_image`` in a workload (:func:`fastsched.io.workload.requests_to_workload`),
  whose pull a simulation may model (:mod:`fastsched.model.images`).
* An unknown option (a site's SPANK plugin option, a newer Slurm's, a typo) on an
  ``#SBATCH`` line is a :class:`~fastsched.model.errors.ConfigWarning` naming
  file:line and is kept in ``SlurmRequest.unknown`` (listed as ignored); with
  ``strict=True``, and always on the command line (``parse_args``, as sbatch
  itself), it is an InputError naming it. Its value is ``--opt=value``, else the
  next word when that does not start with ``-`` (an ``#SBATCH`` line holds only
  options), else none. Real Slurm options fastsched cannot represent
  (``UNSUPPORTED``: ``--ntasks-per-core``, ``--tmp``...) stay errors: they change
  the request.
* Script (sbatch(1): "The batch script may contain options preceded with "#SBATCH"
  before any executable commands in the script. sbatch will stop processing further
  #SBATCH directives once the first non-comment non-whitespace line has been
  reached"): a line starting with ``#SBATCH`` (at column 0, case-sensitive) holds
  options; other lines whose first non-blank character is ``#``, and blank lines, are
  skipped; the first other line ends the scan. On a ``#SBATCH`` line, quotes group
  words, a backslash escapes, and an unquoted ``#`` starts a comment (as sbatch's
  ``_get_argument``). Command-line options override script lines
  (``SlurmRequest.merged``). A bad option on a line is an InputError with the file,
  the line number and the option as field.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..model.errors import ConfigWarning, InputError
from .textfile import check_digits, read_text

__all__ = ["SlurmRequest", "parse_args", "parse_script", "OPTIONS", "CONTAINER", "IGNORED",
           "MODELLED", "UNSUPPORTED"]

REQ, NONE, OPT = "required", "none", "optional"

#: options fastsched models: long name -> (short letter or None, argument)
MODELLED = {
    "nodes": ("N", REQ), "ntasks": ("n", REQ), "ntasks-per-node": (None, REQ),
    "cpus-per-task": ("c", REQ), "gres": (None, REQ), "gpus": ("G", REQ),
    "gpus-per-node": (None, REQ), "gpus-per-task": (None, REQ), "cpus-per-gpu": (None, REQ),
    "mem": (None, REQ), "mem-per-cpu": (None, REQ), "mem-per-gpu": (None, REQ),
    "exclusive": (None, OPT), "constraint": ("C", REQ), "time": ("t", REQ),
    "time-min": (None, REQ), "partition": ("p", REQ), "qos": ("q", REQ),
    "account": ("A", REQ), "dependency": ("d", REQ), "array": ("a", REQ),
    "job-name": ("J", REQ), "test-only": (None, NONE), "switches": (None, REQ),
    "segment": (None, REQ), "requeue": (None, NONE), "no-requeue": (None, NONE),
    "no-kill": ("k", OPT), "reservation": (None, REQ),
}
#: real sbatch/srun options accepted and listed as not modelled
IGNORED = {
    "output": ("o", REQ), "error": ("e", REQ), "input": ("i", REQ), "chdir": ("D", REQ),
    "mail-type": (None, REQ), "mail-user": (None, REQ), "export": (None, REQ),
    "open-mode": (None, REQ), "hold": ("H", NONE), "comment": (None, REQ), "nice": (None, OPT), "begin": ("b", REQ),
    "signal": (None, REQ), "wckey": (None, REQ),
    "licenses": ("L", REQ), "parsable": (None, NONE), "wait": ("W", NONE),
    "quiet": ("Q", NONE), "verbose": ("v", NONE), "nodelist": ("w", REQ),
    "exclude": ("x", REQ), "oversubscribe": ("s", NONE), "priority": (None, REQ),
    "distribution": ("m", REQ), "hint": (None, REQ), "gpu-bind": (None, REQ),
    "kill-on-invalid-dep": (None, REQ), "ignore-pbs": (None, NONE),
    "propagate": (None, OPT), "get-user-env": (None, OPT),
    "label": ("l", NONE), "unbuffered": ("u", NONE), "pty": (None, NONE), "mpi": (None, REQ),
    "cpu-bind": (None, REQ), "exact": (None, NONE), "overlap": (None, NONE),
    "kill-on-bad-exit": ("K", OPT), "container": (None, REQ),
}
#: aliases Slurm documents for the same option
ALIASES = {"tasks-per-node": "ntasks-per-node", "workdir": "chdir", "share": "oversubscribe",
           "cpu_bind": "cpu-bind"}
#: real Slurm options that change the request in ways fastsched cannot represent
UNSUPPORTED = {"gpus-per-socket", "ntasks-per-gpu", "ntasks-per-socket", "ntasks-per-core",
               "sockets-per-node", "cores-per-socket", "threads-per-core", "extra-node-info",
               "mincpus", "tmp", "nodefile", "use-min-nodes", "het-group", "batch",
               "clusters", "cluster-constraint", "tres-per-task"}

#: pyxis/enroot container options (NVIDIA's pyxis SPANK plugin, its ``args.c`` option
#: table): kept on the request (``NormalisedRequest.container``); only the image is
#: modelled (its pull at the job's start: :mod:`fastsched.model.images`)
CONTAINER = {
    "container-image": (None, REQ), "container-mounts": (None, REQ),
    "container-workdir": (None, REQ), "container-name": (None, REQ),
    "container-save": (None, REQ), "container-env": (None, REQ),
    "container-mount-home": (None, NONE), "no-container-mount-home": (None, NONE),
    "container-remap-root": (None, NONE), "no-container-remap-root": (None, NONE),
    "container-entrypoint": (None, NONE), "no-container-entrypoint": (None, NONE),
    "container-entrypoint-log": (None, NONE), "container-writable": (None, NONE),
    "container-readonly": (None, NONE),
}

OPTIONS = {**MODELLED, **IGNORED, **CONTAINER}
SHORT = {short: name for name, (short, _) in OPTIONS.items() if short}


# --------------------------------------------------------------------------- requests

@dataclass
class SlurmRequest:
    """Options as spelled: long option name -> value text (None for a flag).

    ``origin`` maps each option to ``(file, line, spelling)`` so that normalisation
    errors can point at the script line the option came from.
    """

    options: dict[str, str | None] = field(default_factory=dict)
    origin: dict[str, tuple[str | None, int | None, str]] = field(default_factory=dict)
    script: str | None = None
    script_args: list[str] = field(default_factory=list)
    #: options the table does not know, as spelled (``--foo``) -> value (None: a flag)
    unknown: dict[str, str | None] = field(default_factory=dict)

    def get(self, name: str, default=None):
        return self.options.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self.options

    def merged(self, override: "SlurmRequest") -> "SlurmRequest":
        """This request with every option of ``override`` replacing ours (command line
        over script)."""
        return SlurmRequest({**self.options, **override.options},
                            {**self.origin, **override.origin},
                            override.script or self.script,
                            override.script_args or self.script_args,
                            {**self.unknown, **override.unknown})


# --------------------------------------------------------------------------- parsing

def parse_args(argv, *, file: str | None = None, line: int | None = None,
               stop_at_positional: bool = True, strict: bool = True) -> SlurmRequest:
    """An sbatch/srun argument list as a :class:`SlurmRequest` (see module docstring).
    ``strict=False`` (``#SBATCH`` lines): an unknown option is a warning, kept in
    ``unknown``, instead of an InputError."""
    argv = [str(a) for a in argv]
    if argv and argv[0] in ("sbatch", "srun", "salloc"):
        argv = argv[1:]
    req = SlurmRequest()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            positional.extend(argv[i:])
            break
        if not tok.startswith("-") or tok == "-":
            positional.append(tok)
            if stop_at_positional:
                positional.extend(argv[i:])
                break
            continue
        where = (file, line)
        if tok.startswith("--"):
            name, spelled, value, i = _long(tok, argv, i, where, strict)
        else:
            name, spelled, value, i = _short(tok, argv, i, where, strict)
        if name is None:
            _unknown(req, spelled, value, where)
            continue
        req.options[name] = value
        req.origin[name] = (file, line, spelled)
    if positional:
        req.script, req.script_args = positional[0], positional[1:]
    return req


def _value(kind: str, spelled: str, given: str | None, argv, i: int, where):
    """(the option's value, next index): ``given`` (after ``=`` or glued to a short
    option), else the next word when the option requires one."""
    if kind == NONE:
        if given is not None:
            raise InputError(f"{spelled} takes no value", file=where[0], line=where[1],
                             field=spelled)
        return None, i
    if given is not None or kind == OPT:
        return given, i
    if i >= len(argv):
        raise InputError(f"{spelled} needs a value", file=where[0], line=where[1],
                         field=spelled)
    return argv[i], i + 1


def _long(tok: str, argv, i: int, where, strict: bool):
    """(name or None if unknown, spelling, value, next index) of a ``--option``."""
    name, eq, value = tok[2:].partition("=")
    spelled = "--" + name
    name = ALIASES.get(name, name)
    if name in UNSUPPORTED:
        raise InputError(f"{spelled} is a Slurm option fastsched does not model",
                         file=where[0], line=where[1], field=spelled)
    if name not in OPTIONS:
        return _unknown_value(spelled, value if eq else None, argv, i, where, strict)
    value, i = _value(OPTIONS[name][1], spelled, value if eq else None, argv, i, where)
    return name, spelled, value, i


def _short(tok: str, argv, i: int, where, strict: bool):
    """(name or None if unknown, spelling, value, next index) of a ``-X`` option."""
    letter = tok[1]
    spelled = "-" + letter
    rest = tok[2:]
    given = rest[1:] if rest.startswith("=") else (rest or None)
    if letter not in SHORT:
        return _unknown_value(spelled, given, argv, i, where, strict)
    name = SHORT[letter]
    if OPTIONS[name][1] == NONE and rest:
        raise InputError(f"{spelled} takes no value (got {tok!r})", file=where[0],
                         line=where[1], field=spelled)
    value, i = _value(OPTIONS[name][1], spelled, given, argv, i, where)
    return name, spelled, value, i


def _unknown_value(spelled: str, given, argv, i: int, where, strict: bool):
    """An option the table lacks: an InputError when strict, else (None, spelling,
    value, next index), the value being ``given`` or the next word not starting
    with ``-``."""
    if strict:
        raise InputError(f"unknown option {spelled}", file=where[0], line=where[1],
                         field=spelled)
    if given is None and i < len(argv) and not argv[i].startswith("-"):
        given, i = argv[i], i + 1
    return None, spelled, given, i


def _unknown(req: SlurmRequest, spelled: str, value, where) -> None:
    """Keep an unknown option on the request and warn, naming file:line."""
    place = f"{where[0] or '<args>'}:{where[1]}: " if where[1] is not None else ""
    warnings.warn(ConfigWarning(f"{place}{spelled}: unknown sbatch option, kept but not "
                                "modelled (strict mode makes it an error)"), stacklevel=4)
    req.unknown[spelled] = value
    req.origin[spelled] = (where[0], where[1], spelled)


def _split_words(text: str, file, lineno) -> list[str]:
    """Words of an ``#SBATCH`` line: quotes group, backslash escapes, ``#`` ends it."""
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i + 1])
            in_word = True
            i += 2
            continue
        if quote:
            if ch == quote:
                quote = None
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote = ch
            in_word = True
        elif ch == "#":
            break
        elif ch.isspace():
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
        else:
            cur.append(ch)
            in_word = True
        i += 1
    if quote:
        raise InputError(f"unterminated {quote} quote", file=file, line=lineno, field="#SBATCH")
    if in_word:
        words.append("".join(cur))
    return words


def parse_script(path_or_text, *, name: str | None = None, strict: bool = False
                 ) -> SlurmRequest:
    """The ``#SBATCH`` options of a batch script (a path, or the script text itself
    when it contains a newline). An unknown option is a warning naming file:line
    (kept in ``unknown``), or with ``strict=True`` an InputError."""
    if isinstance(path_or_text, Path) or "\n" not in str(path_or_text):
        path = Path(path_or_text)
        text = read_text(path)
        fname = name or str(path)
    else:
        text, fname = str(path_or_text).removeprefix("\ufeff"), name or "<script>"
        check_digits(text, fname)
    req = SlurmRequest(script=fname if fname != "<script>" else None)
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("#SBATCH"):
            words = _split_words(line[len("#SBATCH"):], fname, lineno)
            if not words:
                continue
            part = parse_args(words, file=fname, line=lineno, stop_at_positional=True,
                              strict=strict)
            if part.script is not None:
                raise InputError(f"unexpected {part.script!r} (not an option)", file=fname,
                                 line=lineno, field="#SBATCH")
            req.options.update(part.options)
            req.origin.update(part.origin)
            req.unknown.update(part.unknown)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        break                                   # first command: sbatch stops here
    return req

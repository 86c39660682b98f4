"""Lines of Slurm configuration files as Slurm's parser reads them (slurm.conf,
gres.conf, topology.conf): comments, continuations, escapes, ``Include`` and
``Key=Value`` words.

The rules, from Slurm's ``src/common/parse_config.c`` (``_get_next_line``,
``_strip_comments``, ``_strip_continuation``, ``_strip_escapes``,
``_keyvalue_regex``, ``_parse_include_directive``) and ``get_extra_conf_path``
in ``src/common/read_config.c``:

* ``#`` starts a comment unless an odd number of backslashes precedes it;
* a line ending in an odd number of backslashes (trailing blanks allowed) goes
  on on the next line; the line number of a logical line is its first line;
* then every backslash escapes the character after it (``\\\\`` is one backslash);
* a word is ``Key=Value``, with blanks allowed around ``=``; a value is
  ``"quoted text"`` (blanks kept) or runs to the next blank; keys are
  case-insensitive;
* ``Include FILE`` reads FILE in place. A relative FILE is relative to the
  directory of the top configuration file (slurm.conf), not of the file that
  includes it; ``%c`` in FILE is the ClusterName in lower case. Slurm skips a
  FILE with ``*`` (no globbing) with an error: fastsched raises InputError.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import ConfigWarning, InputError
from .textfile import read_text

__all__ = ["ConfLine", "conf_lines", "split_words", "Warnings"]

_WORD = re.compile(r'\s*([A-Za-z0-9_.]+)\s*([-*+/]?)=\s*(?:"([^"]*)"|(\S+))?(?=\s|$)')
_INCLUDE = re.compile(r"^\s*include\s+(\S+)\s*$", re.I)
#: nested Includes beyond this depth are a loop
_MAX_DEPTH = 16


@dataclass(frozen=True)
class ConfLine:
    """One logical line: where it is, and its words as (key as spelled, value)."""

    file: str
    line: int
    words: tuple[tuple[str, str], ...]

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, file=self.file, line=self.line, field=field)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class Warnings(list):
    """Collected ``file:line: message`` strings; :meth:`add` also issues a
    :class:`ConfigWarning`."""

    def add(self, where: str, message: str) -> None:
        text = f"{where}: {message}"
        self.append(text)
        warnings.warn(text, ConfigWarning, stacklevel=3)


def _strip_comment(raw: str) -> str:
    backslashes = 0
    for i, ch in enumerate(raw):
        if ch == "#" and backslashes % 2 == 0:
            return raw[:i]
        backslashes = backslashes + 1 if ch == "\\" else 0
    return raw


def _continues(text: str) -> tuple[str, bool]:
    """(text without the continuation backslash, whether the line goes on)."""
    body = text.rstrip()
    trailing = len(body) - len(body.rstrip("\\"))
    if trailing % 2 == 1:
        return body[:-1], True
    return text, False


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)?", lambda m: m.group(1) or "", text)


def logical_lines(text: str):
    """(first line number, logical line) pairs of a file's text."""
    pending, start = "", 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = lineno
        body, more = _continues(_strip_comment(raw))
        pending += body
        if more:
            continue
        yield start, _unescape(pending)
        pending = ""
    if pending:
        yield start, _unescape(pending)


def split_words(text: str, file: str, line: int) -> tuple[tuple[str, str], ...]:
    """The ``Key=Value`` words of a logical line; anything else is an InputError."""
    words, pos = [], 0
    while pos < len(text) and not text[pos:].isspace():
        m = _WORD.match(text, pos)
        if not m:
            rest = text[pos:].strip()
            key = rest.split("=")[0].split()
            raise InputError(f"expected Key=value, got {rest[:40]!r}", file=file, line=line,
                             field=key[0][:40] if key else rest[:40])
        if m.group(2):
            raise InputError(f"{m.group(1)}{m.group(2)}= (scontrol's operators) is not valid "
                             "in a configuration file", file=file, line=line, field=m.group(1))
        value = m.group(3) if m.group(3) is not None else (m.group(4) or "")
        words.append((m.group(1), value))
        pos = m.end()
    return tuple(words)


def conf_lines(path, *, cluster_name: str = ""):
    """Every logical line of ``path`` (Includes read in place) as :class:`ConfLine`,
    blank lines left out. ``cluster_name`` fills ``%c`` in Include names until a
    ``ClusterName=`` line sets it."""
    top = Path(path)
    state = {"cluster": cluster_name.lower()}
    yield from _file_lines(top, top.parent, state, [])


def _file_lines(path: Path, base: Path, state: dict, chain: list[str]):
    fname = str(path)
    for lineno, text in logical_lines(read_text(path)):
        if not text.strip():
            continue
        inc = _INCLUDE.match(text)
        if inc:
            yield from _include(inc.group(1), fname, lineno, base, state, chain + [fname])
            continue
        words = split_words(text, fname, lineno)
        if words and words[0][0].lower() == "clustername":
            state["cluster"] = words[0][1].lower()
        yield ConfLine(fname, lineno, words)


def _include(name: str, fname: str, lineno: int, base: Path, state: dict, chain: list[str]):
    if "%c" in name:
        if not state["cluster"]:
            raise InputError(f"Include {name}: %c needs a ClusterName line before it",
                             file=fname, line=lineno, field="Include")
        name = name.replace("%c", state["cluster"])
    if "*" in name:
        raise InputError(f"Include {name}: Slurm does not expand '*' (it skips the file "
                         "with an error)", file=fname, line=lineno, field="Include")
    target = Path(name) if name.startswith("/") else base / name
    if str(target) in chain or len(chain) > _MAX_DEPTH:
        raise InputError(f"Include {name}: includes itself", file=fname, line=lineno,
                         field="Include")
    if not target.is_file():
        raise InputError(f"Include {name}: no such file {str(target)!r} (a relative name is "
                         f"relative to {str(base)!r}, the directory of the top file)",
                         file=fname, line=lineno, field="Include")
    yield from _file_lines(target, base, state, chain)

"""Where each key of a TOML file is, so that errors name its line.

``tomllib`` gives values, not lines; this finds the line of a key path
(``qos.high.MaxWall``, ``account[2].name``: the third ``[[account]]`` table) by
scanning the text, for :class:`~fastsched.model.errors.InputError` messages.
"""
from __future__ import annotations

import re

try:
    import tomllib
except ImportError:                     # Python 3.10: the same parser as a backport
    import tomli as tomllib

from ..model.errors import InputError


def load_toml(text: str, source: str | None) -> tuple[dict, "TomlLines"]:
    """``text`` parsed, and where its keys are; invalid TOML is an InputError at the
    line tomllib names."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"not valid TOML: {e}", file=source,
                         line=int(m.group(1)) if m else None) from None
    return doc, TomlLines(text, source)


class TomlLines:
    """The line of every key path of a TOML text; ``source`` names the file."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-/\"']+)\s*=")

    def __init__(self, text: str, source: str | None):
        self.source = source
        self.lines: dict[str, int] = {}
        table, counts = "", {}
        for no, raw in enumerate(text.splitlines(), 1):
            h = self._HEADER.match(raw)
            if h:
                name = h.group(2).replace('"', "")
                if h.group(1) == "[[":
                    self.lines.setdefault(name, no)        # the first of the array
                    counts[name] = counts.get(name, -1) + 1
                    name = f"{name}[{counts[name]}]"
                table = name
                self.lines.setdefault(table, no)
                continue
            k = self._KEY.match(raw)
            if k:
                key = k.group(1).strip("\"'")
                self.lines.setdefault(f"{table}.{key}" if table else key, no)

    def error(self, message: str, path: str) -> InputError:
        """An InputError at ``path``'s line, else at the nearest enclosing table's."""
        line = self.lines.get(path)
        probe = path
        while line is None and "." in probe:
            probe = probe.rsplit(".", 1)[0]
            line = self.lines.get(probe)
        return InputError(message, file=self.source, line=line, field=path)

"""Write docs/api.md, the API reference, from the public names' docstrings.

    python docs/make_api.py          # rewrites docs/api.md

tests/test_docs.py checks that docs/api.md is what this writes, so the reference
never drifts from the code."""
from __future__ import annotations

import inspect
import pathlib
import sys

import fastsched

OUT = pathlib.Path(__file__).with_name("api.md")


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def _entry(name: str) -> list[str]:
    obj = getattr(fastsched, name)
    doc = inspect.getdoc(obj) or "(no docstring)"
    if inspect.isclass(obj):
        head = f"### class `{name}{_signature(obj)}`"
    elif callable(obj):
        head = f"### `{name}{_signature(obj)}`"
    else:
        head = f"### `{name}`"
        doc = f"A {type(obj).__name__}: " + ", ".join(map(str, obj)) \
            if isinstance(obj, (dict, tuple, list)) else doc
    where = getattr(obj, "__module__", None) or ""
    lines = [head, "", f"*{where}*" if where.startswith("fastsched") else "", "", doc, ""]
    if inspect.isclass(obj):
        for meth, fn in sorted(vars(obj).items()):
            if meth.startswith("_") or not (inspect.isfunction(fn) or isinstance(
                    fn, (classmethod, staticmethod, property))):
                continue
            target = fn.fget if isinstance(fn, property) else getattr(fn, "__func__", fn)
            sig = "" if isinstance(fn, property) else _signature(target)
            first = (inspect.getdoc(target) or "").split("\n\n")[0].replace("\n", " ")
            lines.append(f"- `{meth}{sig}`: {first}" if first else f"- `{meth}{sig}`")
        lines.append("")
    return lines


def render() -> str:
    out = ["# API reference", "",
           "Generated from the docstrings by `python docs/make_api.py`; every name here is "
           "importable as `fastsched.<name>`. Everything else is private.", ""]
    for name in sorted(fastsched.__all__, key=str.lower):
        out += _entry(name)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.exit(0)

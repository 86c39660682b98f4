"""Tokenizing of whitespace-separated numeric text (the job lines of SWF).

A compiled scan (``kernels/_numscan.pyx``, built with the Cython core: no JIT on the way
to a first result) skips comment lines (first non-blank character ``;``), checks that
every line holding tokens holds the expected number of them, and converts the plain
integers (``-?[0-9]+``, at most 18 digits) by digit arithmetic in int64, then to
float64: both that conversion and Python's ``float(str)`` round correctly, so the values
are the same. Any other token (``1.5``, ``1e3``, ``+2``, garbage) goes through
Python's ``float`` itself, which is therefore the one definition of a number here.

Only clean input takes this path: printable ASCII, tabs and ``\\n`` line ends (``\\r\\n``
allowed). Anything else (other control characters, non-ASCII text, lone ``\\r``) makes
:func:`parse_text` return None, so that the caller splits lines as Python's
``str.splitlines`` and ``str.split`` do, with their Unicode rules. :func:`parse_numbers`
returns None for a malformed block; it never says where: the caller's line-by-line scan
names the line and field.
"""
from __future__ import annotations

import math

import numpy as np

from ._numscan import comment_lines, is_clean, scan_numbers

__all__ = ["parse_text", "parse_numbers", "is_clean"]


def parse_text(raw: bytes, nfields: int):
    """``(comment lines, parsed)`` of clean ASCII text (:func:`is_clean`), else None.

    ``comment lines`` are ``(1-based line, text)`` in file order (first non-blank
    character ``;``); ``parsed`` is :func:`parse_numbers` of the other lines (rows:
    0-based file lines), None if one is malformed.
    """
    u8 = np.frombuffer(raw, dtype=np.uint8)
    scanned = scan_numbers(u8, nfields)
    if scanned is None:
        if not is_clean(u8):
            return None
        return _comments(raw, comment_lines(u8)), None
    values, rows, special, comments = scanned
    values = _specials(values, special, u8)
    return _comments(raw, comments), None if values is None else (values, rows)


def parse_numbers(blob: np.ndarray, nfields: int):
    """``(values, rows)`` of a blob of clean lines (:func:`is_clean`) with no comment
    line, or None if a line is malformed.

    ``values`` is float64 ``(len(rows), nfields)``, column by column in memory
    (Fortran order: each field's values contiguous); ``rows`` the 0-based blob lines that
    hold tokens, each of which must hold exactly ``nfields`` numbers (finite, as Python's
    ``float`` reads them).
    """
    scanned = scan_numbers(np.ascontiguousarray(blob, dtype=np.uint8), nfields)
    if scanned is None:
        return None
    values, rows, special, _ = scanned
    values = _specials(values, special, blob)
    return None if values is None else (values, rows)


def _specials(values, special, blob):
    """``values`` with the tokens the compiled scan left (``special``: index, start,
    end) read by Python's ``float``; None if one is not a finite number."""
    nfields = values.shape[1]
    for t, s, e in special.tolist():
        try:
            v = float(blob[s:e].tobytes())
        except ValueError:
            return None
        if not math.isfinite(v):
            return None
        values[t // nfields, t % nfields] = v
    return values


def _comments(raw: bytes, spans) -> list:
    """(1-based line, text) of the comment lines ``spans`` (0-based line, start, end)."""
    return [(line + 1, raw[s:e].rstrip(b"\r").decode("ascii")) for line, s, e in spans]

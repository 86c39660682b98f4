"""Vectorised tokenizing of whitespace-separated numeric text (the job lines of SWF).

The bytes are classified with NumPy in one pass: line breaks, comment lines (first
non-blank character ``;``), token boundaries. Tokens that are plain integers (``-?[0-9]+``,
at most 18 digits) are converted by digit arithmetic in int64, then to float64: both that
conversion and Python's ``float(str)`` round correctly, so the values are the same. The
digits of a token are read eight at a time as one little-endian uint64 and combined by
three multiply-shift steps (the "SWAR" method of Lemire, "Fast number parsing", 2021). Any
other token (``1.5``, ``1e3``, ``+2``, garbage) goes through Python's ``float`` itself,
which is therefore the one definition of a number here.

Only clean input takes this path: printable ASCII, tabs and ``\\n`` line ends (``\\r\\n``
allowed). Anything else (other control characters, non-ASCII text, lone ``\\r``) makes
:func:`split_lines` return None, so that the caller splits lines as Python's
``str.splitlines`` and ``str.split`` do, with their Unicode rules. :func:`parse_numbers`
returns None for a malformed block; it never says where: the caller's line-by-line scan
names the line and field.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["split_lines", "parse_numbers", "is_clean"]

_TAB, _LF, _CR, _SPACE, _MINUS, _ZERO, _SEMI = 9, 10, 13, 32, 45, 48, 59
#: the longest digit string whose value int64 holds for every digit
_MAX_DIGITS = 18
_U = np.uint64
_ZEROS = _U(0x3030303030303030)      # eight ASCII "0"
_PAIRS = _U(0x000000FF000000FF)
#: by number of digits k (0..8): the mask of the word's last k bytes, and "0"s in the others
_KEEP = np.array([~((1 << 8 * (8 - k)) - 1) & (2**64 - 1) for k in range(9)], dtype=np.uint64)
_FILL = ~_KEEP & _ZEROS
#: bytes of text parsed at a time: its temporaries (8 bytes per token) stay small
_PIECE = 1 << 17


def split_lines(raw: bytes):
    """``(comment lines, blob, line breaks)`` of clean ASCII text, else None.

    ``comment lines`` are ``(1-based line, text)`` in file order; ``blob`` is a uint8
    array of ``raw`` with comment lines blanked to spaces, so only blank and data lines
    hold tokens; ``line breaks`` are the positions of its ``\\n``: blob line ``i`` (from
    0) is file line ``i + 1``.
    """
    u8 = np.frombuffer(raw, dtype=np.uint8)
    if not is_clean(u8):
        return None
    nl = np.flatnonzero(u8 == _LF)
    comments = []
    blob = u8
    last = -1
    for p in np.flatnonzero(u8 == _SEMI).tolist():
        i = int(np.searchsorted(nl, p))
        if i == last:
            continue
        last = i
        s = int(nl[i - 1]) + 1 if i else 0
        if raw[s:p].strip(b" \t\r"):
            continue
        e = int(nl[i]) if i < len(nl) else len(u8)
        comments.append((i + 1, raw[s:e].rstrip(b"\r").decode("ascii")))
        if blob is u8:
            blob = u8.copy()
        blob[s:e] = _SPACE
    return comments, blob, nl


def is_clean(u8: np.ndarray) -> bool:
    """Printable ASCII, tabs, ``\\n``, and ``\\r`` only right before ``\\n``."""
    printable = (u8 - _SPACE) < 127 - _SPACE           # uint8: below the space wraps
    if printable.all():
        return True
    odd = np.flatnonzero(~printable)
    c = u8[odd]
    if not ((c == _TAB) | (c == _LF) | (c == _CR)).all():
        return False
    cr = odd[c == _CR]
    return bool(len(cr) == 0 or (cr[-1] + 1 < len(u8) and (u8[cr + 1] == _LF).all()))


def _blank(u8: np.ndarray) -> np.ndarray:
    """Space, tab, ``\\r``, ``\\n``: in clean text, the bytes up to the space."""
    return u8 <= _SPACE


def parse_numbers(blob: np.ndarray, nl: np.ndarray, nfields: int):
    """``(values, rows)`` of a blob of clean lines (:func:`is_clean`), or None if a line
    is malformed.

    ``nl``: the positions of the blob's line breaks. ``values`` is float64
    ``(len(rows), nfields)``; ``rows`` the 0-based blob lines that hold tokens, each of
    which must hold exactly ``nfields`` numbers (finite, as Python's ``float`` reads
    them). The blob is parsed in pieces of whole lines of about ``_PIECE`` bytes: the
    temporaries then stay in the cache and in memory the allocator reuses, where
    whole-blob ones would cost page faults on every call.
    """
    cuts = np.unique(np.searchsorted(nl, np.arange(_PIECE, len(blob), _PIECE)))
    cuts = cuts[cuts < len(nl)]
    bounds = [0] + (nl[cuts] + 1).tolist() + [len(blob)]
    lines = [0] + (cuts + 1).tolist() + [len(nl)]
    values, rows = [], []
    for a, b, la, lb in zip(bounds, bounds[1:], lines, lines[1:]):
        piece = _parse_piece(blob[a:b], nl[la:lb] - a, nfields)
        if piece is None:
            return None
        values.append(piece[0])
        rows.append(piece[1] + la)
    return np.concatenate(values), np.concatenate(rows)


def _parse_piece(blob: np.ndarray, nl: np.ndarray, nfields: int):
    """``parse_numbers`` of one piece; ``nl`` its own line breaks."""
    solid = ~_blank(blob)
    edge = np.diff(solid.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    bounds = np.flatnonzero(edge.view(bool))       # as bool: NumPy's fast nonzero
    starts, ends = bounds[0::2], bounds[1::2]
    rows = _rows(nl, starts, ends, nfields)
    if rows is None:
        return None
    neg = blob[starts] == _MINUS
    ndig = ends - starts - neg
    special = _non_integer(blob, solid, edge, starts, neg) | (ndig == 0) | (ndig > _MAX_DIGITS)
    values = _integers(blob, ends, np.where(special, 1, ndig)).astype(np.float64)
    values *= 1.0 - 2.0 * neg                      # -0 stays -0.0, as float("-0")
    for t in np.flatnonzero(special).tolist():
        try:
            v = float(blob[starts[t]:ends[t]].tobytes())
        except ValueError:
            return None
        if not math.isfinite(v):
            return None
        values[t] = v
    return values.reshape(len(rows), nfields), rows


def _rows(nl, starts, ends, nfields):
    """The lines of each group of ``nfields`` consecutive tokens, or None unless every
    line holding a token holds exactly ``nfields``: a group's first and last token on
    one line, each group on a later line than the one before."""
    if len(starts) % nfields:
        return None
    first = np.searchsorted(nl, starts[::nfields])
    last = np.searchsorted(nl, ends[nfields - 1::nfields] - 1)
    if (first != last).any() or (np.diff(first) <= 0).any():
        return None
    return first


def _non_integer(blob, solid, edge, starts, neg) -> np.ndarray:
    """Tokens holding a character other than digits and one leading ``-``."""
    special = np.zeros(len(starts), dtype=bool)
    odd = solid & ((blob - _ZERO) > 9)                     # uint8: below "0" wraps
    if np.count_nonzero(odd) == np.count_nonzero(neg):
        return special      # each such character is a leading "-": no token is special
    odd = np.flatnonzero(odd)
    bad = odd[(blob[odd] != _MINUS) | (edge[odd] != 1)]
    if len(bad):
        special[np.searchsorted(starts, bad, side="right") - 1] = True
    return special


def _integers(blob, ends, ndig) -> np.ndarray:
    """int64 values of the digit strings of ``ndig`` (1..18) digits ending before
    ``ends``, as up to three chunks of eight."""
    pad = np.concatenate((np.full(8, _ZERO, dtype=np.uint8), blob))
    # every 8-byte window of pad, unaligned: window j holds blob[j - 8 : j]
    windows = np.ndarray((len(pad) - 7,), dtype="<u8", buffer=pad, strides=(1,))
    values = _eight(np.take(windows, ends), np.minimum(ndig, 8)).view(np.int64)
    for k in (1, 2):
        more = np.flatnonzero(ndig > 8 * k)
        if len(more) == 0:
            break
        chunk = _eight(np.take(windows, ends[more] - 8 * k), np.minimum(ndig[more] - 8 * k, 8))
        values[more] += chunk.astype(np.int64) * 10 ** (8 * k)
    return values


def _eight(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The numbers written by the last ``keep`` (1..8) ASCII digits of each 8-byte word
    (first character in the lowest byte), in place; the other bytes count as "0"."""
    x &= _KEEP[keep]
    x |= _FILL[keep]
    x -= _ZEROS
    t = np.right_shift(x, _U(8))
    x *= _U(10)
    x += t                                   # pairs of digits in the odd bytes
    np.right_shift(x, _U(16), out=t)
    t &= _PAIRS
    t *= _U(1 + (10000 << 32))
    x &= _PAIRS
    x *= _U(100 + (1000000 << 32))
    x += t
    x >>= _U(32)
    return x

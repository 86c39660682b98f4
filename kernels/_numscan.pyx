# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled tokenizer of whitespace-separated numeric text (private: used by
``fastsched.io.swfparse``, which states the rules).

Compiled ahead of time with the rest of the Cython core, so reading a trace never waits for
a JIT. One pass over the bytes (after counting the lines, for the output's size) converts
the tokens, checks that each line holding one holds exactly ``nfields`` and lists the
comment lines (first non-blank byte ``;``), which hold none. A token that is
not a plain integer (``-?[0-9]{1,18}``) is listed, not converted: the caller reads it with
Python's ``float``, the one definition of a number there.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint64_t

cnp.import_array()

cdef enum:
    TAB = 9
    LF = 10
    CR = 13
    SPACE = 32
    SEMI = 59
    DEL = 127
    MINUS = 45
    ZERO = 48
    MAX_DIGITS = 18


def is_clean(const uint8_t[::1] blob):
    """Printable ASCII, tabs, ``\\n``, and ``\\r`` only right before ``\\n``."""
    cdef Py_ssize_t i, n = blob.shape[0]
    cdef uint8_t b
    for i in range(n):
        b = blob[i]
        if SPACE <= b < DEL or b == TAB or b == LF:
            continue
        if b != CR or i + 1 == n or blob[i + 1] != LF:
            return False
    return True


def comment_lines(const uint8_t[::1] blob):
    """``(line, start, end)`` of each line of clean text whose first non-blank byte is
    ``;`` (0-based line; ``end``: its line break or the end of the text)."""
    cdef list out = []
    cdef Py_ssize_t i = 0, n = blob.shape[0], line = 0, s
    while i < n:
        s = i
        while i < n and blob[i] <= SPACE and blob[i] != LF:
            i += 1
        if i < n and blob[i] == SEMI:
            while i < n and blob[i] != LF:
                i += 1
            out.append((line, s, i))
        while i < n and blob[i] != LF:
            i += 1
        i += 1
        line += 1
    return out


cdef Py_ssize_t _count_lines(const uint8_t[::1] blob) noexcept nogil:
    """The lines of ``blob``: its line breaks, plus one (a loop the compiler vectorises)."""
    cdef Py_ssize_t i, lines = 1
    for i in range(blob.shape[0]):
        lines += blob[i] == LF
    return lines


def scan_numbers(const uint8_t[::1] blob, Py_ssize_t nfields):
    """``(values, rows, special, comments)`` of clean text (:func:`is_clean`), or None
    if the text is not clean or a line holding tokens does not hold exactly ``nfields``
    (:func:`is_clean` tells which).

    ``values``: float64 ``(len(rows), nfields)``, plain integers converted (``-0`` is
    ``-0.0``), the others 0, stored field by field (each column contiguous: the
    callers' checks and conversions go column by column); ``rows``: the 0-based lines
    holding tokens; ``special``: int64 ``(k, 3)`` of the other tokens: (row * nfields +
    field, start, end) in ``blob``; ``comments``: :func:`comment_lines`.
    """
    cdef Py_ssize_t cap = _count_lines(blob)
    columns = np.empty((nfields, cap), dtype=np.float64)
    rows_a = np.empty(cap, dtype=np.int64)
    cdef double[::1] values = columns.reshape(-1)
    cdef int64_t[::1] rows = rows_a
    cdef Py_ssize_t r = 0
    cdef list special = [], comments = []
    cdef Py_ssize_t i = 0, n = blob.shape[0], line = 0, t = 0, here = 0, s, ls = 0, digits
    cdef uint64_t v
    cdef uint8_t b, d
    cdef bint neg
    while i < n:
        b = blob[i]
        if b == SPACE:                  # most blanks: the cheapest test first
            i += 1
            continue
        if b < SPACE:
            if b == LF:
                if here:
                    if here != nfields:
                        return None
                    rows[r] = line
                    r += 1
                    here = 0
                line += 1
                ls = i + 1
            elif b != TAB and (b != CR or i + 1 == n or blob[i + 1] != LF):
                return None             # not clean
            i += 1
            continue
        if b == SEMI and not here:      # a comment line (comment_lines)
            while i < n and blob[i] != LF:
                if not SPACE <= blob[i] < DEL and blob[i] != TAB and \
                        (blob[i] != CR or i + 1 == n or blob[i + 1] != LF):
                    return None
                i += 1
            comments.append((line, ls, i))
            continue
        if here == nfields:
            return None
        s = i
        neg = b == MINUS
        i += neg
        v = 0                           # unsigned: wraps harmlessly past 18 digits
        while i < n:
            d = blob[i] - ZERO          # unsigned: below "0" wraps
            if d > 9:
                break
            v = v * 10 + d
            i += 1
        digits = i - s - neg
        if (i < n and blob[i] > SPACE) or digits == 0 or digits > MAX_DIGITS:
            while i < n and blob[i] > SPACE:
                if blob[i] >= DEL:
                    return None
                i += 1
            values[here * cap + r] = 0
            special.append((t, s, i))
        else:
            values[here * cap + r] = -<double>v if neg else <double>v
        t += 1
        here += 1
    if here:
        if here != nfields:
            return None
        rows[r] = line
        r += 1
    special_a = np.array(special, dtype=np.int64).reshape(-1, 3)
    return columns[:, :r].T, rows_a[:r], special_a, comments

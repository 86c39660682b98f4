"""A ``|``-separated text table (``sacct --parsable2``) read column by column from its
bytes with NumPy: no Python object per cell, so a million rows read in about a second.

Each field is a (start, end) byte range. A column is read as a padded byte matrix
(rows x longest field), from which integers, ISO times and distinct texts are
computed with vectorised operations; texts are grouped by a 64-bit hash and then
compared byte for byte, so equal codes always mean equal texts.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ByteTable"]

#: fields longer than this are grouped one by one in Python (a malformed line, not data)
_LONG = 256
_PIPE, _NL, _CR = ord("|"), ord("\n"), ord("\r")


class ByteTable:
    """The data lines of ``raw`` (after the header) with ``ncols`` fields each.

    ``lines``: file line (1-based) of each row; ``wrong``: (line, field count) of the
    lines with another number of fields. Blank lines are neither.
    """

    def __init__(self, raw: bytes, ncols: int):
        buf = np.frombuffer(raw, np.uint8)
        self.buf = buf
        nl = np.flatnonzero(buf == _NL)
        if len(buf) and buf[-1] != _NL:
            nl = np.append(nl, len(buf))
        start = np.r_[0, nl[:-1] + 1].astype(np.int64)
        end = nl.astype(np.int64)
        cr = (end > start) & (buf[np.maximum(end - 1, 0)] == _CR)
        end = end - cr
        start, end = start[1:], end[1:]                  # the header is line 1
        pipes = np.flatnonzero(buf == _PIPE)
        first = np.searchsorted(pipes, start)
        count = np.searchsorted(pipes, end) - first
        blank = end == start
        good = (count == ncols - 1) & ~blank
        line = np.arange(len(start), dtype=np.int64) + 2
        self.wrong = list(zip(line[~good & ~blank].tolist(),
                              (count[~good & ~blank] + 1).tolist()))
        self.lines = line[good]
        f = first[good]
        starts = np.empty((len(f), ncols), np.int64, order="F")   # columns contiguous
        ends = np.empty((len(f), ncols), np.int64, order="F")
        starts[:, 0] = start[good]
        ends[:, -1] = end[good]
        if ncols > 1:
            at = pipes[f[:, None] + np.arange(ncols - 1)]
            ends[:, :-1] = at
            starts[:, 1:] = at + 1
        self.starts, self.ends = starts, ends
        self._padded = None

    def __len__(self) -> int:
        return len(self.lines)

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` holds."""
        self.starts = self.starts.T[:, mask].T          # one copy, columns contiguous
        self.ends = self.ends.T[:, mask].T
        self.lines = self.lines[mask]

    def text(self, col: int, row: int) -> str:
        """One field as text."""
        return bytes(self.buf[self.starts[row, col]:self.ends[row, col]]).decode(
            "utf-8", "replace")

    def _range(self, col: int, rows):
        s, e = self.starts[:, col], self.ends[:, col]
        if rows is not None:
            s, e = s[rows], e[rows]
        return s, e - s

    def matrix(self, col: int, width: int | None = None, rows=None):
        """(uint8 rows x width matrix of the column's bytes, 0-padded; lengths). A
        row of the matrix is a copy of the bytes at the field's start (a strided view
        of the buffer, indexed by the starts), cleared past the field's end."""
        s, length = self._range(col, rows)
        w = int(length.max(initial=0)) if width is None else width
        w = max(8, -(-w // 8) * 8)                      # whole uint64 words
        if self._padded is None or len(self._padded) < len(self.buf) + w:
            self._padded = np.concatenate([self.buf, np.zeros(w + _LONG, np.uint8)])
        view = np.lib.stride_tricks.as_strided(self._padded, shape=(len(self.buf) + 1, w),
                                               strides=(1, 1), writeable=False)
        m = view[s]
        np.multiply(m, np.arange(w) < length[:, None], out=m)
        return m, length

    def strings(self, col: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The column (or ``rows`` of it) as an object array of str."""
        s, length = self._range(col, rows)
        w = min(int(length.max(initial=0)), _LONG)
        m, _ = self.matrix(col, w, rows)
        out = np.ascontiguousarray(m[:, :max(w, 1)]).view(f"S{max(w, 1)}").ravel()
        try:
            text = out.astype(f"U{max(w, 1)}").astype(object)      # ASCII: the usual case
        except UnicodeDecodeError:
            text = np.char.decode(out, "utf-8", "replace").astype(object)
        for i in np.flatnonzero(length > _LONG).tolist():
            text[i] = bytes(self.buf[s[i]:s[i] + length[i]]).decode("utf-8", "replace")
        return text

    def factorize(self, col: int, rows: np.ndarray | None = None
                  ) -> tuple[np.ndarray, list[str]]:
        """(int64 code per row, or per one of ``rows``; distinct texts): equal codes hold
        equal bytes."""
        import pandas as pd
        rows = np.arange(len(self)) if rows is None else rows
        n = len(rows)
        _, length = self._range(col, rows)
        short = np.flatnonzero(length <= _LONG)
        codes = np.full(n, -1, np.int64)
        uniques: list[str] = []
        if len(short):
            m, _ = self.matrix(col, int(length[short].max(initial=0)), rows[short])
            words = m.view(np.uint64)
            h = length[short].astype(np.uint64)
            with np.errstate(over="ignore"):
                for j in range(words.shape[1]):
                    h = (h ^ words[:, j]) * np.uint64(1099511628211) + np.uint64(j)
            c = pd.factorize(h)[0]
            first = _first_rows(c)
            if not (words == words[first[c]]).all():   # a hash collision: group exactly
                c = _exact_codes(m)
                first = np.unique(c, return_index=True)[1]
            codes[short] = c
            uniques = [self.text(col, int(rows[short[i]])) for i in first.tolist()]
        seen = {u: k for k, u in enumerate(uniques)}
        for i in np.flatnonzero(length > _LONG).tolist():
            t = self.text(col, int(rows[i]))
            codes[i] = seen.setdefault(t, len(uniques))
            if codes[i] == len(uniques):
                uniques.append(t)
        return codes, uniques

    def digits(self, col: int, maxlen: int = 18):
        """(int64 value, bool ok) of fields made only of 1..maxlen digits."""
        m, length = self.matrix(col, maxlen)
        value = np.zeros(len(length), np.int64)
        ok = (length > 0) & (length <= maxlen)
        for j in range(maxlen):
            inside = j < length
            d = m[:, j] - np.uint8(48)                  # wraps below '0': > 9
            ok &= (d <= 9) | ~inside
            value = np.where(inside, value * 10 + d, value)
        return np.where(ok, value, 0), ok

    def iso_times(self, col: int):
        """(int64 seconds since the epoch of naive ``YYYY-MM-DDTHH:MM:SS`` fields, bool
        per row: the field has that form)."""
        m, length = self.matrix(col, 19)
        d = m[:, :19] - np.uint8(48)                    # wraps below '0': > 9
        ok = (length == 19) & (d[:, [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]]
                               <= 9).all(axis=1)
        ok &= (m[:, 4] == 45) & (m[:, 7] == 45) & (m[:, 10] == 84) & (m[:, 13] == 58) \
            & (m[:, 16] == 58)

        def num(a, b):
            out = np.zeros(len(length), np.int64)
            for k in range(a, b):
                out = out * 10 + d[:, k]
            return out
        year, month, day = num(0, 4), num(5, 7), num(8, 10)
        hh, mm, ss = num(11, 13), num(14, 16), num(17, 19)
        ok &= (month >= 1) & (month <= 12) & (day >= 1) & (hh < 24) & (mm < 60) & (ss < 61)
        ok &= day <= _days_in_month(year, month)
        days = _days_from_civil(np.where(ok, year, 1970), np.where(ok, month, 1),
                                np.where(ok, day, 1))
        return np.where(ok, days * 86400 + hh * 3600 + mm * 60 + ss, -1), ok


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Row of the first appearance of each code, for codes numbered in order of first
    appearance (as pandas.factorize numbers them): a code appears first where it
    exceeds every code before it."""
    before = np.maximum.accumulate(np.r_[-1, codes[:-1]]) if len(codes) else codes
    return np.flatnonzero(codes > before)


def _exact_codes(m: np.ndarray) -> np.ndarray:
    _, codes = np.unique(m, axis=0, return_inverse=True)
    return codes.ravel().astype(np.int64)


def _days_in_month(year, month):
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    table = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    return table[np.clip(month, 1, 12) - 1] + ((month == 2) & leap)


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468

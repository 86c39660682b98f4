"""A ``|``-separated text table (``sacct --parsable2``) read column by column from its
bytes with NumPy: no Python object per cell.

The buffer is scanned once, in slices that stay in cache, for the positions of its
``|`` and newline bytes; a row is the index of its line's first delimiter in that
array, so a field is two look-ups and dropping rows moves one index per row. A column
is read as 64-bit words gathered from the buffer (rows x words, zeroed past each
field's end), from which integers, ISO times and distinct texts are computed with
vectorised operations; texts are grouped by a 64-bit hash and then compared word for
word, so equal codes always mean equal texts.

Large temporaries are few on purpose: a fresh array of hundreds of MB costs more in
page faults (huge pages on this kernel) than the arithmetic done on it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ByteTable"]

#: fields longer than this are grouped one by one in Python (a malformed line, not data)
_LONG = 256
_PIPE, _NL, _CR = ord("|"), ord("\n"), ord("\r")
#: bytes scanned per slice when looking for delimiters
_SLICE = 1 << 20
#: _MASKS[k]: the low k bytes of a little-endian word
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], np.uint64)


def delimiters(buf: np.ndarray) -> np.ndarray:
    """Sorted positions of every ``|`` and newline in ``buf``, then ``len(buf)`` when
    the buffer does not end with a newline (int32 when positions fit)."""
    dtype = np.int32 if len(buf) < 2**31 - 2**20 else np.int64   # room for word offsets
    found = np.empty(min(len(buf), _SLICE), bool)
    other = np.empty(min(len(buf), _SLICE), bool)
    parts = []
    for at in range(0, len(buf), _SLICE):
        piece = buf[at:at + _SLICE]
        f, o = found[:len(piece)], other[:len(piece)]
        np.equal(piece, _PIPE, out=f)
        np.equal(piece, _NL, out=o)
        np.logical_or(f, o, out=f)
        hits = np.flatnonzero(f)
        hits += at
        parts.append(hits.astype(dtype))
    if not len(buf) or buf[-1] != _NL:
        parts.append(np.array([len(buf)], dtype))
    return np.concatenate(parts)


class ByteTable:
    """The data lines of ``raw`` (after the header) with ``ncols`` fields each.

    ``lines``: file line (1-based) of each row; ``wrong``: (line, field count) of the
    lines with another number of fields. Blank lines are neither.
    """

    def __init__(self, raw: bytes, ncols: int):
        buf = np.frombuffer(raw, np.uint8)
        self.buf, self.ncols = buf, ncols
        delim = delimiters(buf)
        at_nl = np.ones(len(delim), bool)               # the last: a newline or the end
        np.equal(buf[delim[:-1]], _NL, out=at_nl[:-1])
        ends = np.flatnonzero(at_nl)                    # index in delim of each line's end
        prev, last = ends[:-1], ends[1:]                # data lines: the header is line 1
        start = delim[prev].astype(np.int64) + 1
        end = delim[last].astype(np.int64)
        end -= (end > start) & (buf[np.maximum(end - 1, 0)] == _CR)
        count = last - prev - 1                         # '|' in the line
        blank = end == start
        good = (count == ncols - 1) & ~blank
        line = np.arange(len(start), dtype=np.int64) + 2
        self.wrong = list(zip(line[~good & ~blank].tolist(),
                              (count[~good & ~blank] + 1).tolist()))
        self.lines = line[good]
        self.delim = delim
        self.row = prev[good]                           # the delimiter before field 0
        self._ranges: dict = {}
        self._u64 = None

    def __len__(self) -> int:
        return len(self.lines)

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` holds."""
        self.row = self.row[mask]
        self.lines = self.lines[mask]
        self._ranges.clear()

    def _delimiter(self, j: int) -> np.ndarray:
        """Position of every row's j-th delimiter (0: the one before its first field;
        field k lies between delimiters k and k + 1), read once per j."""
        key = ("delimiter", j)
        if key not in self._ranges:
            self._ranges[key] = self.delim[self.row + j]
        return self._ranges[key]

    def _column(self, col: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) of every row's field ``col`` (the delimiters' integer type:
        int32 below 2 GB)."""
        if col not in self._ranges:
            start = self._delimiter(col) + 1
            end = self._delimiter(col + 1)
            if col == self.ncols - 1:                   # a CR before the newline
                end = end - ((end > start) & (self.buf[np.maximum(end - 1, 0)] == _CR))
            self._ranges[col] = (start, end - start)
        return self._ranges[col]

    def _range(self, col: int, rows):
        s, length = self._column(col)
        if rows is not None:
            s, length = s[rows], length[rows]
        return s, length

    def lengths(self, col: int) -> np.ndarray:
        """Byte length of every row's field ``col``."""
        return self._column(col)[1]

    def text(self, col: int, row: int) -> str:
        """One field as text."""
        s, length = self._column(col)
        return bytes(self.buf[s[row]:s[row] + length[row]]).decode("utf-8", "replace")

    def words(self, col: int, width: int, rows=None):
        """(little-endian uint64 rows x ceil(width / 8) matrix of the column's first
        ``width`` bytes, zero past each field's end; lengths). The words most fields
        reach are gathered together (a row's words share its cache lines); a word few
        fields reach is read for those rows only."""
        s, length = self._range(col, rows)
        nwords = max(1, -(-width // 8))
        reach = [1.0] + [float((length > 8 * j).mean()) if len(s) else 0.0
                         for j in range(1, nwords)]
        common = sum(1 for r in reach if r >= 0.75)
        pos = np.empty((len(s), common), np.int64)
        for j in range(common):
            np.add(s, 8 * j, out=pos[:, j])
        first = self._word(pos, length, 0)
        if common == nwords:
            return first, length
        out = np.zeros((len(s), nwords), np.uint64)
        out[:, :common] = first
        for j in range(common, nwords):
            at = np.flatnonzero(length > 8 * j)
            out[at, j] = self._word(s[at] + 8 * j, length[at], 8 * j)
        return out, length

    def _word(self, pos: np.ndarray, length: np.ndarray, offset: int) -> np.ndarray:
        """The 8 bytes at each of ``pos`` (rows x words, or one word per row), of a field
        of ``length`` bytes (per row) read from byte ``offset`` on: bytes past the field's
        end are zeroed."""
        limit = len(self.buf) - 8
        if self._u64 is None and limit >= 0:            # a word at every byte offset
            self._u64 = np.ndarray((limit + 1,), dtype="<u8", buffer=self.buf,
                                   strides=(1,))
        late = np.flatnonzero(pos > limit)              # reading past the buffer's end
        if len(late):
            flat_pos = pos.reshape(-1)
            late_pos = flat_pos[late].copy()
            flat_pos[late] = max(limit, 0)
        word = self._u64[pos] if limit >= 0 else np.zeros(pos.shape, np.uint64)
        flat = word.reshape(-1)
        for i, p in zip(late.tolist(), late_pos.tolist() if len(late) else []):
            flat[i] = np.frombuffer(bytes(self.buf[p:p + 8]).ljust(8, b"\0"), "<u8")[0]
        if word.ndim == 1:
            word &= _MASKS[np.clip(length - offset, 0, 8)]
        else:                                           # one column at a time: less memory
            for j in range(word.shape[1]):
                word[:, j] &= _MASKS[np.clip(length - (offset + 8 * j), 0, 8)]
        return word

    def matrix(self, col: int, width: int | None = None, rows=None):
        """(uint8 rows x width matrix of the column's bytes, 0-padded; lengths); width
        is rounded up to whole words."""
        if width is None:
            width = int(self._range(col, rows)[1].max(initial=0))
        w, length = self.words(col, max(width, 1), rows)
        return w.view(np.uint8), length

    def strings(self, col: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The column (or ``rows`` of it) as an object array of str."""
        s, length = self._range(col, rows)
        w = max(min(int(length.max(initial=0)), _LONG), 1)
        m, _ = self.matrix(col, w, rows)
        out = np.ascontiguousarray(m[:, :w]).view(f"S{w}").ravel()
        try:
            text = out.astype(f"U{w}").astype(object)  # ASCII: the usual case
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
        _, length = self._range(col, rows)
        short = length <= _LONG
        every = bool(short.all())
        if not every:
            rows = np.arange(len(self)) if rows is None else rows
        sub = rows if every else rows[short]
        codes = np.full(len(length), -1, np.int64)
        uniques: list[str] = []
        if short.any():
            longest = length.max() if every else length[short].max()
            words, lens = self.words(col, int(longest), sub)
            h = lens.astype(np.uint64)
            with np.errstate(over="ignore"):
                for j in range(words.shape[1]):
                    h ^= words[:, j]
                    h *= np.uint64(1099511628211)
                    h += np.uint64(j)
            c = pd.factorize(h)[0]
            first = _first_rows(c)
            distinct = words[first]
            if not (words == distinct[c]).all():        # a hash collision: group exactly
                c = _exact_codes(words)
                first = np.unique(c, return_index=True)[1]
                distinct = words[first]
            uniques = _texts(distinct, lens[first])
            if every:
                return c.astype(np.int64, copy=False), uniques
            codes[short] = c
        seen = {u: k for k, u in enumerate(uniques)}
        for i in np.flatnonzero(~short).tolist():
            t = self.text(col, int(rows[i]))
            codes[i] = seen.setdefault(t, len(uniques))
            if codes[i] == len(uniques):
                uniques.append(t)
        return codes, uniques

    def digits(self, col: int, maxlen: int = 18):
        """(int64 value, bool ok) of fields made only of 1..maxlen digits."""
        longest = min(maxlen, int(self._range(col, None)[1].max(initial=0)))
        m, length = self.matrix(col, longest)
        value = np.zeros(len(length), np.int64)
        ok = (length > 0) & (length <= maxlen)
        for j in range(longest):
            inside = j < length
            d = m[:, j] - np.uint8(48)                  # wraps below '0': > 9
            ok &= (d <= 9) | ~inside
            value = np.where(inside, value * 10 + d, value)
        return np.where(ok, value, 0), ok

    def iso_times(self, col: int):
        """(int64 seconds since the epoch of naive ``YYYY-MM-DDTHH:MM:SS`` fields, bool
        per row: the field has that form)."""
        w, length = self.words(col, 19)
        return _iso_seconds(w, length)

    def iso_time_columns(self, cols: list[int]) -> dict:
        """:meth:`iso_times` of several adjacent columns (``cols`` consecutive): the
        rows where every one is 19 bytes long are read with one gather of their
        79-byte span, the others column by column."""
        if len(cols) < 2:
            return {c: self.iso_times(c) for c in cols}
        span = 20 * len(cols) - 1
        full = np.ones(len(self), bool)
        for c in cols:
            full &= self.lengths(c) == 19
        start = self._column(cols[0])[0][full]
        nwords = -(-span // 8)
        step = np.arange(0, 8 * nwords, 8)
        w = self._word(start[:, None] + step, np.full(1, 8 * nwords), 0)
        out = {}
        other = np.flatnonzero(~full)
        for k, c in enumerate(cols):
            secs = np.empty(len(self), np.int64)
            ok = np.empty(len(self), bool)
            secs[full], ok[full] = _iso_seconds(_shifted(w, 20 * k), np.full(len(start), 19))
            if len(other):
                secs[other], ok[other] = _iso_seconds(*self.words(c, 19, other))
            out[c] = (secs, ok)
        return out


def _shifted(w: np.ndarray, offset: int) -> np.ndarray:
    """The three words starting ``offset`` bytes into each row of ``w``, the third cut
    to its first 3 bytes (19 in all)."""
    q, r = divmod(offset, 8)
    part = w[:, q:q + 4] if r else w[:, q:q + 3]
    if r and part.shape[1] < 4:                         # the span's end: no fourth word
        part = np.concatenate([part, np.zeros((len(part), 4 - part.shape[1]), np.uint64)],
                              axis=1)
    if r:
        lo = part[:, :3] >> np.uint64(8 * r)
        hi = part[:, 1:4] << np.uint64(64 - 8 * r)
        part = lo | hi
    else:
        part = part.copy()
    part[:, 2] &= _MASKS[3]
    return part


def _texts(words: np.ndarray, lengths: np.ndarray) -> list[str]:
    """The text of each row of a word matrix (its first ``lengths`` bytes)."""
    raw = words.view(f"S{8 * words.shape[1]}").ravel().tolist()   # trailing NULs dropped
    out = []
    for b, n in zip(raw, lengths.tolist()):
        out.append((b[:n] if len(b) >= n else b.ljust(n, b"\0")).decode("utf-8", "replace"))
    return out


def _iso_seconds(w: np.ndarray, length: np.ndarray):
    """Seconds and validity of ``YYYY-MM-DDTHH:MM:SS`` held in three words per row:
    the bytes of each word are checked and turned into two-digit numbers eight at a
    time (no byte is 0x80 or above, so adding below 0x80 to each never carries into
    the next, and digits 0-9 times 10 stay below 256)."""
    ok = length == 19
    pairs = []
    for k in range(3):
        word = w[:, k]
        ok &= (word & _SEP_MASK[k]) == _SEP_WORD[k]
        ok &= (word & _HIGH) == 0
        at_least_0 = word + _PLUS_50                    # high bit: byte >= '0'
        above_9 = word + _PLUS_46                       # high bit: byte > '9'
        ok &= ((~at_least_0 | above_9) & _HIGH & _DIGIT_SLOTS[k]) == 0
        d = (word - _BIAS[k]) & _DIGIT_SLOTS[k]         # digit bytes -> 0..9, others 0
        pair = d * np.uint64(10)
        pair += d >> np.uint64(8)                       # byte i: 10 x digit i + digit i+1
        pairs.append(pair)

    def pair(k: int, b: int) -> np.ndarray:
        return ((pairs[k] >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.int32)
    year, month, day = pair(0, 0) * 100 + pair(0, 2), pair(0, 5), pair(1, 0)
    hh, mm, ss = pair(1, 3), pair(1, 6), pair(2, 1)
    ok &= (month >= 1) & (month <= 12) & (day >= 1) & (hh < 24) & (mm < 60) & (ss < 61)
    month_index = np.where(ok, year * 12 + month - 1, 0)
    first_day, days = _month_tables()
    ok &= day <= days[month_index]
    seconds = (first_day[month_index] + (day - 1)) * 86400 + (hh * 3600 + mm * 60 + ss)
    return np.where(ok, seconds, -1), ok


_MONTHS: tuple = ()


def _month_tables() -> tuple[np.ndarray, np.ndarray]:
    """(days since 1970-01-01 of the first of each month, days in it), indexed by
    year * 12 + month - 1 for years 0-9999 (proleptic Gregorian)."""
    global _MONTHS
    if not _MONTHS:
        year = np.repeat(np.arange(10000), 12)
        month = np.tile(np.arange(1, 13), 10000)
        _MONTHS = (_days_from_civil(year, month, 1).astype(np.int64),
                   _days_in_month(year, month).astype(np.int32))
    return _MONTHS


def _word(pattern: bytes) -> np.uint64:
    return np.frombuffer(pattern.ljust(8, b"\0"), "<u8")[0]


def _per_byte(pattern: bytes, digit: int, other) -> np.uint64:
    """A word with ``digit`` at the digit bytes (D) of ``pattern`` and ``other(c)`` at
    the rest (the bytes past its end are neither: 0)."""
    return _word(bytes(digit if c == 68 else other(c) for c in pattern))


# "YYYY-MM-DDTHH:MM:SS" as three words: digits (D) and separators at fixed bytes
_LAYOUT = (b"DDDD-DD-", b"DDTDD:DD", b":DD")
_SEP_MASK = [_per_byte(p, 0, lambda c: 0xFF) for p in _LAYOUT]
_SEP_WORD = [_per_byte(p, 0, lambda c: c) for p in _LAYOUT]
_DIGIT_SLOTS = [_per_byte(p, 0xFF, lambda c: 0) for p in _LAYOUT]
_BIAS = [_per_byte(p, 0x30, lambda c: 0) for p in _LAYOUT]
_PLUS_50, _PLUS_46, _HIGH = (_word(bytes([b] * 8)) for b in (0x50, 0x46, 0x80))


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

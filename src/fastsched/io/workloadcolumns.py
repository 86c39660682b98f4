"""Cells of a workload table's columns (:mod:`fastsched.io.workload`): integers, names,
``exclusive`` and sparse text, each bad cell an InputError naming the file, its line
(the header is line 1) and the column."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError


def parse_sparse(frame, col: str, parse, fname: str) -> dict:
    """row -> parse(text) for the non-empty cells of an optional text column
    (a Python loop over those rows only)."""
    if col not in frame.columns:
        return {}
    values = frame[col].to_numpy(dtype=object)
    out = {}
    for i in np.flatnonzero(values != "").tolist():
        text = str(values[i]).strip()
        if not text:
            continue
        try:
            out[i] = parse(text)
        except InputError as e:
            raise InputError(e.reason, file=fname, line=i + 2, field=col) from None
    return out


def exclusive_column(series, fname: str) -> np.ndarray:
    """Per row: ``exclusive`` is ``topo`` (True) or empty (False); else InputError."""
    text = series.astype(str).str.strip().to_numpy(dtype=object)
    bad = (text != "topo") & (text != "")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{series.iloc[i]!r}: exclusive must be 'topo' or empty "
                         "(--exclusive=topo; whole-node --exclusive is a request size)",
                         file=fname, line=i + 2, field="exclusive")
    return text == "topo"


def int_column(series, fname: str, col: str) -> np.ndarray:
    import pandas as pd
    if series.dtype == np.int64:
        return series.to_numpy()
    as_str = series.astype(str).str.strip()
    num = pd.to_numeric(as_str, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num) | (num != np.floor(num)) | (np.abs(num) > 2.0 ** 62)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw = series.iloc[i]
        shown = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else str(raw)
        what = ("is out of range" if np.isfinite(num[i]) and num[i] == np.floor(num[i])
                else "is not an integer")
        raise InputError(f"{shown[:30]!r} {what}" if shown != "" else "missing value",
                         file=fname, line=i + 2, field=col)
    return num.astype(np.int64)


def name_column(series, fname: str, col: str, default: str | None = None
                 ) -> tuple[np.ndarray, list[str]]:
    """(int32 codes, names): the distinct names stripped and sorted, codes index them.

    Factorizes first and strips only the distinct values (1M rows hold a few
    thousand names). An empty value is ``default``, or an error without one.
    """
    import pandas as pd
    # the Series itself, not an object array: Arrow-backed strings factorize natively
    codes, uniques = pd.factorize(series, sort=False)
    stripped = np.array([str(u).strip() for u in uniques] + [""], dtype=object)[:-1]
    if default is not None:
        stripped[stripped == ""] = default
        codes = np.where(codes < 0, len(stripped), codes)
        stripped = np.append(stripped, default)
    missing = codes < 0
    empty = np.flatnonzero(stripped == "")
    if len(empty):
        missing |= np.isin(codes, empty)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError("missing value", file=fname, line=i + 2, field=col)
    remap, names = pd.factorize(stripped, sort=True)
    return remap.astype(np.int32)[codes], [str(n) for n in names]


def check_range(values: np.ndarray, bad: np.ndarray, fname: str, col: str, what: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{values[i]} {what}", file=fname, line=i + 2, field=col)

"""Workload tables as Parquet: the columns of the workload CSV, typed.

A Parquet workload (``.parquet``, ``.pq``) holds the same columns as the CSV
(:mod:`fastsched.io.workload`) with integers as integers and names as strings or
dictionaries (pandas categoricals); a missing value is a null. pyarrow is the optional
extra ``fastsched[parquet]``: without it, reading or writing one is an
:class:`~fastsched.model.errors.UnsupportedError` that names the extra.

Errors name the row as the line it would have in the CSV (``line = row + 2``: the
header is line 1), so both forms report alike.
"""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError, UnsupportedError

__all__ = ["PARQUET_SUFFIXES", "is_parquet", "read_parquet_frame", "write_parquet_frame"]

#: the file name endings read and written as Parquet
PARQUET_SUFFIXES = (".parquet", ".pq")


def is_parquet(path) -> bool:
    """Whether ``path`` names a Parquet file (by its ending)."""
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UnsupportedError("Parquet workloads need pyarrow: pip install "
                               "'fastsched[parquet]' (or use .csv)") from None
    return pq


def write_parquet_frame(frame, path) -> None:
    """Write a workload DataFrame (categoricals become Parquet dictionaries)."""
    pq = _pyarrow_parquet()
    import pyarrow as pa
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), str(path))


def read_parquet_frame(path, fname: str, text_columns):
    """The table as the CSV reader's DataFrame would be: int64 integer columns, and in
    ``text_columns`` strings with ``""`` for a null; a null in an integer column makes it
    text (``""`` where null), which the column checks report as missing."""
    pq = _pyarrow_parquet()
    import pyarrow as pa
    try:
        frame = pq.read_table(str(path)).to_pandas()
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"cannot read Parquet: {e}", file=fname) from None
    for col in frame.columns:
        frame[col] = _plain_column(frame[col], col in text_columns)
    return frame


def _plain_column(series, text: bool):
    import pandas as pd
    if series.isna().any():
        return series.astype(object).where(series.notna(), "")
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else None
    if kind is None and pd.api.types.is_integer_dtype(series.dtype):
        kind = np.dtype(series.dtype.numpy_dtype).kind
    if text or kind not in ("i", "u"):
        return series
    values = series.to_numpy()
    if values.dtype == np.uint64 and len(values) and values.max() > np.iinfo(np.int64).max:
        return series.astype(str)       # out of range: the column check says so
    return values.astype(np.int64)

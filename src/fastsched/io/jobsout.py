"""Per-job records written in the format their file name asks for: CSV (``.csv``,
also ``.csv.gz``/``.csv.xz``/``.csv.bz2``), Parquet (``.parquet``) or Arrow IPC
(``.arrow``, ``.feather``).

Parquet and Arrow need pyarrow, an optional extra (``pip install
'fastsched[parquet]'``); without it, such a name is an
:class:`~fastsched.model.errors.UnsupportedError` that says so. Missing values
(a never-started job's times) stay missing: nullable integers in Parquet/Arrow, empty
cells in CSV.
"""
from __future__ import annotations

from ..model.errors import InputError, UnsupportedError

__all__ = ["JOB_FORMATS", "jobs_format", "write_jobs", "read_jobs_table"]

#: file name ending -> format
JOB_FORMATS = {".csv": "csv", ".csv.gz": "csv", ".csv.xz": "csv", ".csv.bz2": "csv",
               ".parquet": "parquet", ".arrow": "arrow", ".feather": "arrow"}


def jobs_format(path) -> str:
    """``csv``, ``parquet`` or ``arrow`` by the name's ending (InputError for another)."""
    name = str(path).lower()
    for ending, fmt in sorted(JOB_FORMATS.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(ending):
            return fmt
    raise InputError(f"cannot tell the format from the name: use one of "
                     f"{', '.join(JOB_FORMATS)}", file=str(path))


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.feather  # noqa: F401  (the IPC writer lives there)
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UnsupportedError("Parquet and Arrow output need pyarrow: pip install "
                               "'fastsched[parquet]' (or write .csv)") from None
    return pyarrow


def write_jobs(frame, path, fmt: str | None = None) -> None:
    """Write a DataFrame of job records (e.g. ``result.jobs``) to ``path`` in ``fmt``
    (default: by the name, :func:`jobs_format`)."""
    fmt = fmt or jobs_format(path)
    if fmt == "csv":
        frame.to_csv(path, index=False)
        return
    if fmt not in ("parquet", "arrow"):
        raise InputError(f"unknown jobs format {fmt!r}: csv, parquet or arrow", field="format")
    pa = _pyarrow()
    table = pa.Table.from_pandas(_plain(frame), preserve_index=False)
    if fmt == "parquet":
        pa.parquet.write_table(table, path)
    else:
        pa.feather.write_feather(table, path, compression="uncompressed")


def read_jobs_table(path):
    """A DataFrame of job records as :func:`write_jobs` wrote them: Parquet or Arrow by
    the name's ending, any other name as CSV. Missing times stay missing (the pandas
    types Parquet/Arrow files keep in their metadata come back)."""
    import pandas as pd
    name = str(path).lower()
    fmt = next((f for e, f in JOB_FORMATS.items() if name.endswith(e)), "csv")
    if fmt == "csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    _pyarrow()
    return pd.read_parquet(path) if fmt == "parquet" else pd.read_feather(path)


def _plain(frame):
    """Object columns of text as strings (pyarrow infers them), categories as their text."""
    out = frame.copy()
    for name in out.columns:
        if str(out[name].dtype) == "category":
            out[name] = out[name].astype(str)
    return out

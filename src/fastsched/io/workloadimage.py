"""A workload's one-word text columns: ``container_image`` (pyxis
``--container-image``: one image reference per row, "" for none;
:mod:`fastsched.model.images` models the pulls) and ``reservation`` (sbatch
``--reservation``)."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError

__all__ = ["read_image_column", "read_word_column"]


def read_image_column(series, fname: str) -> np.ndarray:
    """Container image names (str per row, "" = none); a name with a comma or blank
    inside is an InputError naming the line (pyxis takes one image reference)."""
    text = series.fillna("").astype(str).str.strip().to_numpy(dtype=object)
    bad = np.array([("," in v) or any(c.isspace() for c in v) for v in text.tolist()],
                   dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{text[i]!r} is not one image reference", file=fname, line=i + 2,
                         field="container_image")
    return text


def read_word_column(series, fname: str, col: str) -> np.ndarray:
    """Names (str per row, "" = none); one with a blank inside is an InputError naming
    the line and column."""
    text = series.fillna("").astype(str).str.strip().to_numpy(dtype=object)
    bad = np.array([any(c.isspace() for c in v) for v in text.tolist()], dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{text[i]!r} is not one name", file=fname, line=i + 2, field=col)
    return text

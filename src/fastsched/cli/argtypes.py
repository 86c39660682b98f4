"""argparse value types shared by the CLI's subcommands.

Every integer type has an upper bound (see :mod:`fastsched.model.validation`), so an
absurd value is a one-line usage error, never an OverflowError or a huge allocation.
"""
from __future__ import annotations

import argparse
import math

from ..model.validation import MAX_COUNT, MAX_NODES, MAX_SECONDS


def int_in(minimum: int, maximum: int):
    """An integer in ``minimum..maximum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:,}, got {_short(text)}")
        return value
    return parse


positive_int = int_in(1, MAX_COUNT)
non_negative_int = int_in(0, MAX_COUNT)
#: a number of seconds (a time or a duration)
seconds = int_in(0, MAX_SECONDS)
positive_seconds = int_in(1, MAX_SECONDS)
#: a machine size in nodes or processors
machine_size = int_in(1, MAX_NODES)
#: a random seed (what NumPy's generators accept)
seed = int_in(0, (1 << 64) - 1)


def duration(text: str) -> int:
    """Seconds, written ``90``, ``90s``, ``10m``, ``2h`` or ``1d``."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    unit = units.get(text[-1:].lower(), None)
    number = text[:-1] if unit else text
    value = seconds(number) * (unit or 1)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_SECONDS:,} s, got {_short(text)}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def comma_list(item):
    """A comma-separated list, each entry parsed by ``item`` (an argparse type)."""
    def parse(text: str) -> list:
        values = [item(part.strip()) for part in text.split(",") if part.strip()]
        if not values:
            _fail(f"empty list: {text!r}")
        return values
    return parse


def choice_of(names):
    """One of ``names`` (for lists: ``comma_list(choice_of(...))``)."""
    def parse(text: str) -> str:
        if text not in names:
            _fail(f"unknown {text!r} (choose from {', '.join(sorted(names))})")
        return text
    return parse


def _short(text: str) -> str:
    """``text`` cut to a readable length (a 10,000-digit number stays one line)."""
    text = text.strip()
    return text if len(text) <= 24 else f"{text[:10]}...{text[-6:]} ({len(text)} digits)"


def _fail(message: str):
    raise argparse.ArgumentTypeError(message)


def power_text(text: str) -> str:
    """The ``--power`` text, checked (the cluster's slurm.conf keys apply under it)."""
    from ..model.errors import InputError
    from ..model.power import PowerSaving
    try:
        PowerSaving.parse(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None
    return text


def image_pull(text: str):
    """A :class:`fastsched.model.images.ImagePull` from ``default=120s,cache=4,...``."""
    from ..model.errors import InputError
    from ..model.images import ImagePull
    try:
        return ImagePull.parse(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None


def failure_model(text: str):
    """A :class:`fastsched.model.failures.FailureModel` from ``mtbf=30d,repair=4h,...``."""
    from ..model.errors import InputError
    from ..model.failures import FailureModel
    try:
        return FailureModel.parse(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None

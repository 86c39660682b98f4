"""argparse value types shared by the CLI's subcommands."""
from __future__ import annotations

import argparse


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


positive_int = _int_at_least(1)
non_negative_int = _int_at_least(0)

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


def _fail(message: str):
    raise argparse.ArgumentTypeError(message)

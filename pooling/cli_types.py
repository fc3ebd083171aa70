"""Argument types of the command-line tools (argparse `type=`): a bad value is argparse's clear error
naming the option (`argument --bootstrap: must be at least 1, not 0`), never a traceback from deep inside.
No Django: `evaluate` reads files without it."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    """An integer of at least `low`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    return parse


#: A seed of a random generator (numpy's take 0 and up).
SEED = at_least(0)

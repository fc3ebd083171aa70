"""Charts and number formatting shared by the manager pages of every app (pooling, judgements, evaluation)."""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["decimals_apart"]


def decimals_apart(values: Iterable[float | None], *, least: int = 3, most: int = 8) -> int:
    """The fewest decimals (at least `least`, at most `most`) that print every value with two significant
    digits and tell every two different values apart: -0.0003 and -0.0002 are not both "0.000"."""
    numbers = sorted({v for v in values if v is not None and not math.isnan(v)})
    for decimals in range(least, most + 1):
        shown = [round(v, decimals) for v in numbers]
        distinct = len(set(shown)) == len(shown)
        readable = all(v == 0 or abs(v) >= 10 ** (1 - decimals) for v in numbers)
        if distinct and readable:
            return decimals
    return most

"""The numbers the charts take and write: a value that may be missing, and the decimals that tell values
apart."""

from __future__ import annotations

import math
from collections.abc import Iterable

Number = float | int | None


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


def _missing(value: Number) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))

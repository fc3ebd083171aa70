"""The scatter plot: one point per ``(x, y)`` pair, coloured by kind, with its coordinates in its tooltip."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.safestring import SafeString

from pooling.charts.numbers import Number, _missing
from pooling.charts.style import FONT_SIZE, SERIES, _figure, _frame, _label
from pooling.charts.svg import _Marks, _render


def scatter(
    points: Sequence[tuple[Number, Number]],
    *,
    labels: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    diagonal: bool = False,
    decimals: int = 2,
    annotate: bool = False,
    zero_lines: bool = False,
) -> SafeString:
    """A scatter plot of ``(x, y)`` points, one ``point`` each with a tooltip (its label, if given, and its
    coordinates); ``kinds`` colours the points by kind, with a legend. Axes from the data's range (or
    ``x_range`` / ``y_range``); ``diagonal`` draws y = x. Points with a missing coordinate are left out.
    ``annotate`` writes each label beside its point (a ``value`` text); ``zero_lines`` draws x = 0 and
    y = 0 (the quadrants where two deltas agree or disagree in sign)."""
    if labels is not None and len(labels) != len(points):
        raise ValueError("one label per point")
    if kinds is not None and len(kinds) != len(points):
        raise ValueError("one kind per point")
    marks = _Marks()
    figure = _figure(4.8)
    ax = figure.add_subplot()
    order = list(dict.fromkeys(kinds or [""]))
    seen: set[str] = set()
    for i, (x, y) in enumerate(points):
        if _missing(x) or _missing(y):
            continue
        kind = kinds[i] if kinds is not None else ""
        colour = SERIES[order.index(kind) % len(SERIES)]
        (point,) = ax.plot([float(x)], [float(y)], "o", color=colour, alpha=0.8, markersize=7,  # type: ignore[arg-type]  # not _missing
                           label=_label(kind) if kind and kind not in seen else None)  # fmt: skip
        seen.add(kind)
        tip = f"{labels[i]}: " if labels is not None else ""
        marks(point, "point", tip + f"({float(x):.{decimals}f}, {float(y):.{decimals}f})")  # type: ignore[arg-type]  # not _missing
        if annotate and labels is not None:
            text = ax.annotate(labels[i], (float(x), float(y)), xytext=(5, 4), textcoords="offset points",  # type: ignore[arg-type]  # not _missing
                               fontsize=FONT_SIZE - 2, color="#333333")  # fmt: skip
            marks(text, "value", labels[i])
    if x_range is not None:
        ax.set_xlim(*x_range)
    if y_range is not None:
        ax.set_ylim(*y_range)
    if zero_lines:
        ax.axhline(0.0, color="#bbbbbb", linewidth=1)
        ax.axvline(0.0, color="#bbbbbb", linewidth=1)
    if diagonal:
        low = min(ax.get_xlim()[0], ax.get_ylim()[0])
        high = max(ax.get_xlim()[1], ax.get_ylim()[1])
        ax.plot([low, high], [low, high], linestyle="--", color="#bbbbbb", linewidth=1)
    _frame(ax, grid="both", x_label=x_label, y_label=y_label, title=title)
    if seen - {""}:
        ax.legend(loc="best")
    return _render(figure, title=title, marks=marks)

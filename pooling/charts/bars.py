"""The bar charts: horizontal bars (``hbar_chart``), horizontal bars split into shares
(``stacked_shares``) and vertical bars in groups (``grouped_bars``), each value written by its bar."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.utils.safestring import SafeString
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle

from pooling.charts.numbers import Number, _missing
from pooling.charts.style import FONT_SIZE, SERIES, _figure, _frame, _ink, _label
from pooling.charts.svg import _Marks, _render


def hbar_chart(
    labels: Sequence[str],
    values: Sequence[Number],
    *,
    title: str = "",
    decimals: int = 0,
    vmax: float | None = None,
    x_label: str = "",
    legend: str = "",
    colour: str = SERIES[0],
) -> SafeString:
    """Horizontal bars, one ``bar`` per label from top to bottom, its value written after it (``decimals``
    places) and in its tooltip; the x axis from ``min(0, smallest)`` to ``vmax`` (default the largest value).
    A missing value draws no bar and is written "–". ``legend`` names the series."""
    if len(labels) != len(values):
        raise ValueError("one value per label")
    present = [float(v) for v in values if not _missing(v)]  # type: ignore[arg-type]  # not _missing: not None
    top = vmax if vmax is not None else max([*present, 0.0])
    low = min([0.0, *present])
    if top <= low:
        top = low + 1.0
    marks = _Marks()
    figure = _figure(0.36 * len(labels) + 1.3 + (0.3 if x_label else 0))
    ax = figure.add_subplot()
    span = top - low
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        if _missing(value):
            marks(ax.text(0, i, "–", va="center", ha="left"), "value")
            continue
        number = float(value)  # type: ignore[arg-type]  # not _missing: not None
        text = f"{number:,.{decimals}f}"
        (bar,) = ax.barh([i], [number], color=colour, height=0.7, label=_label(legend) if legend else None)
        marks(bar, "bar", f"{label}: {text}")
        x = max(number, 0.0) + span * 0.01
        marks(ax.text(x, i, text, va="center", ha="left", fontsize=FONT_SIZE - 1), "value")
    ax.set_yticks(range(len(labels)), list(labels))
    ax.set_ylim(max(len(labels), 1) - 0.5, -0.5)
    ax.set_xlim(low, top + span * 0.12)  # room for the value after the longest bar
    _frame(ax, grid="x", x_label=x_label, title=title)
    if legend and present:
        handles, names = ax.get_legend_handles_labels()
        ax.legend(handles[:1], names[:1], loc="lower right")
    return _render(figure, title=title, marks=marks)


def stacked_shares(
    labels: Sequence[str],
    parts: Sequence[tuple[str, str, Sequence[int]]],
    *,
    title: str = "",
    x_label: str = "share of the row's total",
) -> SafeString:
    """One horizontal ``bar`` per label (tooltip: its total), split into one ``segment`` per part with a
    count: ``parts`` are ``(name, colour, counts per label)``, stacked left to right as shares of the row's
    total. A segment shows its count when it is wide enough to hold it, and tells ``label: name × count
    (share%)`` in its tooltip; each row's total is written after it, and the legend names the parts."""
    for name, _colour, counts in parts:
        if len(counts) != len(labels):
            raise ValueError(f"part {name!r} needs one count per label")
    marks = _Marks()
    figure = _figure(0.42 * len(labels) + 1.5)
    ax = figure.add_subplot()
    for i, label in enumerate(labels):
        total = sum(counts[i] for _, _, counts in parts)
        outline = Rectangle(
            (0, i - 0.35), 1.0 if total else 0.0, 0.7, fill=False, edgecolor="#999999", linewidth=0.6
        )
        ax.add_patch(marks(outline, "bar", f"{label}: {total} judgement{'s' if total != 1 else ''}"))
        marks(ax.text(1.01, i, str(total), va="center", ha="left", color="#5b6570"), "value")
        left = 0.0
        for name, colour, counts in parts:
            count = counts[i]
            if not total or not count:
                continue
            share = count / total
            (segment,) = ax.barh([i], [share], left=left, color=colour, height=0.7)
            marks(segment, "segment", f"{label}: {name} × {count} ({100 * share:.0f}%)")
            if share >= 0.06:
                ink = _ink(to_rgb(colour))
                marks(ax.text(left + share / 2, i, str(count), ha="center", va="center", color=ink,
                              fontsize=FONT_SIZE - 2), "value")  # fmt: skip
            left += share
    for name, colour, _counts in parts:
        ax.barh([0], [0], color=colour, label=_label(name))  # legend entries only
    ax.set_yticks(range(len(labels)), list(labels))
    ax.set_ylim(max(len(labels), 1) - 0.5, -0.5)
    ax.set_xlim(0, 1.08)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    _frame(ax, x_label=x_label, title=title)
    if parts:
        figure.legend(loc="outside lower center", ncols=min(len(parts), 6))
    return _render(figure, title=title, marks=marks)


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[Number]],
    *,
    title: str = "",
    y_label: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    decimals: int = 3,
) -> SafeString:
    """Vertical bars in groups: for each group (x position) one ``bar`` per series, coloured by series with
    a legend, its value written above it and in its tooltip. The y axis runs from ``vmin`` (default
    ``min(0, smallest)``) to ``vmax`` (default the largest value). A missing value draws no bar."""
    names = list(series)
    for name in names:
        if len(series[name]) != len(groups):
            raise ValueError(f"series {name!r} needs one value per group")
    numbers = [float(v) for name in names for v in series[name] if not _missing(v)]  # type: ignore[arg-type]  # not _missing: not None
    lo = vmin if vmin is not None else min([0.0, *numbers])
    hi = vmax if vmax is not None else max([*numbers, lo + 1e-12]) if numbers else 1.0
    if hi <= lo:
        hi = lo + 1.0
    marks = _Marks()
    figure = _figure(4.2)
    ax = figure.add_subplot()
    width = 0.8 / max(len(names), 1)
    many = len(groups) * len(names) > 16
    for s, name in enumerate(names):
        drawn = False
        for g, value in enumerate(series[name]):
            if _missing(value):
                continue
            number = float(value)  # type: ignore[arg-type]  # not _missing: not None
            x = g - 0.4 + width * (s + 0.5)
            text = f"{number:.{decimals}f}"
            (bar,) = ax.bar([x], [number], width=width * 0.92, color=SERIES[s % len(SERIES)],
                            label=None if drawn else _label(name))  # fmt: skip
            drawn = True
            marks(bar, "bar", f"{groups[g]} · {name}: {text}")
            size = FONT_SIZE - 3 if many else FONT_SIZE - 2
            label = ax.text(x, max(number, 0.0) + (hi - lo) * 0.01, text, ha="center", va="bottom",
                            fontsize=size, rotation=90 if many else 0)  # fmt: skip
            marks(label, "value")
    ax.set_xticks(range(len(groups)), list(groups), rotation=30 if len(groups) > 6 else 0,
                  ha="right" if len(groups) > 6 else "center")  # fmt: skip
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(lo, hi + (hi - lo) * (0.18 if many else 0.1))
    ax.axhline(0.0, color="#999999", linewidth=0.8)
    _frame(ax, grid="y", y_label=y_label, title=title)
    if names and numbers:
        figure.legend(loc="outside lower center", ncols=min(len(names), 3))
    return _render(figure, title=title, marks=marks)

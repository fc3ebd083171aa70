"""Pure inline-SVG plots: a heatmap with a colour scale, horizontal bars, grouped bars with error bars and
a scatter plot.

Nothing here imports Django: each function takes plain numbers and strings and returns one ``<svg>``
element as a string, to be placed in a page as is (a template marks it safe). Every label, title and
tooltip passes through :func:`html.escape`, so a run or topic name such as ``<script>`` is shown, never
run. Numbers are written with a fixed number of decimals, so the output is deterministic. Missing values
(``None`` or NaN) are drawn as empty grey cells or left out, never as zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

__all__ = [
    "NO_DATA",
    "colour_scale",
    "grouped_bars",
    "hbar_chart",
    "heatmap",
    "scatter",
]

Number = float | int | None

FONT = 'font-family="system-ui, sans-serif"'
NO_DATA = "#eeeeee"
"""Fill of a cell whose value is missing."""
LOW = (255, 255, 255)
HIGH = (36, 88, 166)  # the stylesheet's accent colour
SERIES = ("#2458a6", "#d08c2e", "#2f7d4f", "#b3261e", "#6b4fa3", "#5b6570")
CHAR_WIDTH = 6.6  # a rough average glyph width at 11px, to size margins for labels


def _f(value: float) -> str:
    """A coordinate with at most two decimals, without trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _missing(value: Number) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text_width(text: str) -> float:
    return len(text) * CHAR_WIDTH


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    label = escape(title) if title else "chart"
    # the visible title is bold and a little larger than the labels: never let the picture clip it
    width = max(width, _text_width(title) * 1.2 + 16)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{label}" {FONT} font-size="11">'
    )
    parts = [head]
    if title:
        parts.append(f"<title>{escape(title)}</title>")
    parts.extend(body)
    parts.append("</svg>")
    return "".join(parts)


def colour_scale(value: float, vmin: float, vmax: float) -> str:
    """The fill of ``value`` on a linear white → blue scale over ``[vmin, vmax]`` (clamped), as ``#rrggbb``.

    ``vmin == vmax`` maps every value to the middle of the scale.
    """
    t = 0.5 if vmax == vmin else (value - vmin) / (vmax - vmin)
    t = min(max(t, 0.0), 1.0)
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(LOW, HIGH, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _ink(fill: str) -> str:
    """Black or white text, whichever reads better on ``fill`` (by relative luminance)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if luminance > 0.45 else "#ffffff"


def heatmap(
    matrix: Sequence[Sequence[Number]],
    row_labels: Sequence[str],
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    decimals: int = 2,
    cell: int = 34,
    show_values: bool = True,
    scale_label: str = "",
) -> str:
    """A heatmap of ``matrix[i][j]`` (row ``i``, column ``j``) with row and column labels, each cell's
    value written in it (``decimals`` places) and a colour scale beside it.

    The colour is linear from white at ``vmin`` to blue at ``vmax`` (defaults: the smallest and largest
    present values). Missing values are grey cells without text. Each cell carries a tooltip
    ``row × column: value``. Raises ``ValueError`` when the shape and the labels disagree.
    """
    cols = list(col_labels) if col_labels is not None else list(row_labels)
    rows = list(row_labels)
    if len(matrix) != len(rows) or any(len(line) != len(cols) for line in matrix):
        raise ValueError(f"matrix must be {len(rows)} x {len(cols)} to match the labels")
    present = [float(v) for line in matrix for v in line if not _missing(v)]  # type: ignore[arg-type]
    lo = vmin if vmin is not None else min(present, default=0.0)
    hi = vmax if vmax is not None else max(present, default=1.0)
    left = 8 + max((_text_width(label) for label in rows), default=0)
    top = 8 + max((_text_width(label) for label in cols), default=0) + (22 if title else 0)
    grid_w, grid_h = cell * len(cols), cell * len(rows)
    scale_x = left + grid_w + 16
    scale_h = max(grid_h, 80)
    width = scale_x + 16 + 8 + _text_width(f"{hi:.{decimals}f}") + 8
    height = top + scale_h + 10 + (16 if scale_label else 0)
    body: list[str] = []
    if title:
        body.append(f'<text x="8" y="16" font-size="13" font-weight="600">{escape(title)}</text>')
    for j, label in enumerate(cols):
        x = left + j * cell + cell / 2 + 4
        body.append(
            f'<text class="col-label" x="{_f(x)}" y="{_f(top - 6)}" '
            f'transform="rotate(-90 {_f(x)} {_f(top - 6)})">{escape(label)}</text>'
        )
    for i, label in enumerate(rows):
        y = top + i * cell + cell / 2 + 4
        body.append(
            f'<text class="row-label" x="{_f(left - 6)}" y="{_f(y)}" text-anchor="end">{escape(label)}</text>'
        )
        for j, value in enumerate(matrix[i]):
            x, y0 = left + j * cell, top + i * cell
            if _missing(value):
                tip = f"{rows[i]} × {cols[j]}: no data"
                body.append(
                    f'<rect class="cell" x="{_f(x)}" y="{_f(y0)}" width="{cell}" height="{cell}" '
                    f'fill="{NO_DATA}" stroke="#ffffff"><title>{escape(tip)}</title></rect>'
                )
                continue
            number = float(value)  # type: ignore[arg-type]
            fill = colour_scale(number, lo, hi)
            text = f"{number:.{decimals}f}"
            tip = f"{rows[i]} × {cols[j]}: {text}"
            body.append(
                f'<rect class="cell" x="{_f(x)}" y="{_f(y0)}" width="{cell}" height="{cell}" '
                f'fill="{fill}" stroke="#ffffff"><title>{escape(tip)}</title></rect>'
            )
            if show_values:
                body.append(
                    f'<text class="value" x="{_f(x + cell / 2)}" y="{_f(y0 + cell / 2 + 4)}" '
                    f'text-anchor="middle" font-size="10" fill="{_ink(fill)}">{escape(text)}</text>'
                )
    # The colour scale: a vertical gradient from vmax (top) to vmin (bottom), with both ends labelled.
    steps = 20
    for s in range(steps):
        value = hi - (hi - lo) * s / (steps - 1) if steps > 1 else hi
        y = top + scale_h * s / steps
        body.append(
            f'<rect class="scale" x="{_f(scale_x)}" y="{_f(y)}" width="16" '
            f'height="{_f(scale_h / steps + 0.5)}" fill="{colour_scale(value, lo, hi)}"/>'
        )
    body.append(
        f'<rect x="{_f(scale_x)}" y="{_f(top)}" width="16" height="{_f(scale_h)}" fill="none" '
        f'stroke="#999999"/>'
    )
    body.append(f'<text x="{_f(scale_x + 22)}" y="{_f(top + 10)}">{hi:.{decimals}f}</text>')
    body.append(f'<text x="{_f(scale_x + 22)}" y="{_f(top + scale_h)}">{lo:.{decimals}f}</text>')
    if scale_label:
        body.append(f'<text x="{_f(scale_x)}" y="{_f(top + scale_h + 16)}">{escape(scale_label)}</text>')
    return _svg(width, height, body, title)


def _axis_max(values: Sequence[float]) -> float:
    top = max(values, default=0.0)
    return top if top > 0 else 1.0


def hbar_chart(
    labels: Sequence[str],
    values: Sequence[Number],
    *,
    title: str = "",
    decimals: int = 0,
    bar_height: int = 18,
    width: int = 480,
    vmax: float | None = None,
    colour: str = SERIES[0],
) -> str:
    """Horizontal bars, one per label, length proportional to the value (0 at the left edge, ``vmax`` —
    default the largest value — at the right); the value is written after each bar. Negative values are
    drawn as zero-length bars with their value written; missing ones as "–"."""
    if len(labels) != len(values):
        raise ValueError("one value per label")
    present = [float(v) for v in values if not _missing(v)]  # type: ignore[arg-type]
    top_value = vmax if vmax is not None else _axis_max(present)
    left = 8 + max((_text_width(label) for label in labels), default=0)
    top = 30 if title else 8
    text_room = 8 + _text_width(f"{top_value:,.{decimals}f}") + 8
    span = max(width - left - text_room, 40)
    gap = 4
    height = top + len(labels) * (bar_height + gap) + 8
    body: list[str] = []
    if title:
        body.append(f'<text x="8" y="16" font-size="13" font-weight="600">{escape(title)}</text>')
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = top + i * (bar_height + gap)
        body.append(
            f'<text class="label" x="{_f(left - 6)}" y="{_f(y + bar_height / 2 + 4)}" '
            f'text-anchor="end">{escape(label)}</text>'
        )
        if _missing(value):
            body.append(f'<text x="{_f(left + 4)}" y="{_f(y + bar_height / 2 + 4)}">–</text>')
            continue
        number = float(value)  # type: ignore[arg-type]
        length = span * min(max(number, 0.0), top_value) / top_value
        text = f"{number:,.{decimals}f}"
        body.append(
            f'<rect class="bar" x="{_f(left)}" y="{_f(y)}" width="{_f(length)}" height="{bar_height}" '
            f'fill="{escape(colour)}"><title>{escape(label)}: {escape(text)}</title></rect>'
        )
        body.append(
            f'<text class="value" x="{_f(left + length + 4)}" y="{_f(y + bar_height / 2 + 4)}">'
            f"{escape(text)}</text>"
        )
    return _svg(left + span + text_room, height, body, title)


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[Number]],
    *,
    errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
    title: str = "",
    y_label: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    decimals: int = 3,
    height: int = 260,
    group_width: int = 0,
) -> str:
    """Vertical bars in groups: for each group (x position) one bar per series, with a legend.

    ``errors[series][g]`` is an interval ``(low, high)`` drawn as an error bar with caps (e.g. a bootstrap
    confidence interval), or None for none. The y axis runs from ``vmin`` (default ``min(0, smallest
    value or low)``) to ``vmax`` (default the largest value or high), with a line at zero when it is
    inside. Missing values draw no bar.
    """
    names = list(series)
    for name in names:
        if len(series[name]) != len(groups):
            raise ValueError(f"series {name!r} needs one value per group")
        if errors and name in errors and len(errors[name]) != len(groups):
            raise ValueError(f"errors of {name!r} need one interval (or None) per group")
    numbers: list[float] = [float(v) for name in names for v in series[name] if not _missing(v)]  # type: ignore[arg-type]
    for name in names:
        for interval in (errors or {}).get(name, []):
            if interval is not None:
                numbers.extend(float(x) for x in interval if not _missing(x))
    lo = vmin if vmin is not None else min([0.0, *numbers])
    hi = vmax if vmax is not None else max([*numbers, lo + 1e-12]) if numbers else 1.0
    if hi <= lo:
        hi = lo + 1.0
    bar_w = 14
    group_w = group_width or max(
        len(names) * bar_w + 16, 8 + max((_text_width(g) for g in groups), default=0)
    )
    left = 14 + max(_text_width(f"{hi:.{decimals}f}"), _text_width(f"{lo:.{decimals}f}")) + 8
    top = (30 if title else 10) + 16 * len(names)
    plot_h = height
    bottom = top + plot_h
    width = left + group_w * len(groups) + 10

    def y_of(value: float) -> float:
        return bottom - plot_h * (min(max(value, lo), hi) - lo) / (hi - lo)

    body: list[str] = []
    if title:
        body.append(f'<text x="8" y="16" font-size="13" font-weight="600">{escape(title)}</text>')
    for s, name in enumerate(names):
        y = (30 if title else 10) + 16 * s
        body.append(
            f'<rect class="legend" x="8" y="{_f(y - 9)}" width="10" height="10" '
            f'fill="{SERIES[s % len(SERIES)]}"/><text x="22" y="{_f(y)}">{escape(name)}</text>'
        )
    for tick in (lo, hi):
        body.append(
            f'<text class="tick" x="{_f(left - 6)}" y="{_f(y_of(tick) + 4)}" text-anchor="end">'
            f"{tick:.{decimals}f}</text>"
        )
    body.append(f'<line x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(bottom)}" stroke="#999999"/>')
    zero = y_of(0.0) if lo <= 0.0 <= hi else bottom
    body.append(
        f'<line x1="{_f(left)}" y1="{_f(zero)}" x2="{_f(width - 10)}" y2="{_f(zero)}" stroke="#999999"/>'
    )
    if y_label:
        body.append(
            f'<text x="10" y="{_f(top + plot_h / 2)}" transform="rotate(-90 10 {_f(top + plot_h / 2)})" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
    for g, group in enumerate(groups):
        x0 = left + g * group_w + (group_w - len(names) * bar_w) / 2
        body.append(
            f'<text class="group" x="{_f(left + g * group_w + group_w / 2)}" y="{_f(bottom + 14)}" '
            f'text-anchor="middle">{escape(group)}</text>'
        )
        for s, name in enumerate(names):
            value = series[name][g]
            x = x0 + s * bar_w
            if not _missing(value):
                number = float(value)  # type: ignore[arg-type]
                y1, y2 = sorted((y_of(number), zero))
                body.append(
                    f'<rect class="bar" x="{_f(x + 1)}" y="{_f(y1)}" width="{bar_w - 2}" '
                    f'height="{_f(y2 - y1)}" fill="{SERIES[s % len(SERIES)]}">'
                    f"<title>{escape(group)} · {escape(name)}: {number:.{decimals}f}</title></rect>"
                )
            interval = (errors or {}).get(name, [None] * len(groups))[g]
            if interval is not None and not any(_missing(v) for v in interval):
                low, high = sorted(float(v) for v in interval)
                cx = x + bar_w / 2
                ya, yb = y_of(low), y_of(high)
                body.append(
                    f'<path class="error" d="M{_f(cx)} {_f(ya)}V{_f(yb)}M{_f(cx - 3)} {_f(ya)}H{_f(cx + 3)}'
                    f'M{_f(cx - 3)} {_f(yb)}H{_f(cx + 3)}" stroke="#000000" fill="none">'
                    f"<title>{escape(group)} · {escape(name)}: [{low:.{decimals}f}, {high:.{decimals}f}]"
                    f"</title></path>"
                )
    return _svg(width, bottom + 24, body, title)


def scatter(
    points: Sequence[tuple[float, float]],
    *,
    labels: Sequence[str] | None = None,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    diagonal: bool = False,
    decimals: int = 2,
    size: int = 320,
) -> str:
    """A scatter plot of ``(x, y)`` points on a ``size`` × ``size`` plot area, axes from the data's range
    (or ``x_range`` / ``y_range``), each point with a tooltip (its label, if given, and coordinates).
    ``diagonal`` draws the line y = x (e.g. score on one qrels against another). Points with a missing
    coordinate are left out.
    """
    if labels is not None and len(labels) != len(points):
        raise ValueError("one label per point")
    kept = [
        (float(x), float(y), labels[i] if labels is not None else "")
        for i, (x, y) in enumerate(points)
        if not _missing(x) and not _missing(y)
    ]

    def span(values: list[float], given: tuple[float, float] | None) -> tuple[float, float]:
        if given is not None:
            low, high = given
        else:
            low, high = min(values, default=0.0), max(values, default=1.0)
        if high <= low:
            low, high = low - 0.5, high + 0.5
        return low, high

    x_lo, x_hi = span([p[0] for p in kept], x_range)
    y_lo, y_hi = span([p[1] for p in kept], y_range)
    if diagonal and x_range is None and y_range is None:
        x_lo = y_lo = min(x_lo, y_lo)
        x_hi = y_hi = max(x_hi, y_hi)
    left = 14 + max(_text_width(f"{y_hi:.{decimals}f}"), _text_width(f"{y_lo:.{decimals}f}")) + 8
    top = 30 if title else 10
    bottom = top + size

    def px(x: float) -> float:
        return left + size * (x - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return bottom - size * (y - y_lo) / (y_hi - y_lo)

    body: list[str] = []
    if title:
        body.append(f'<text x="8" y="16" font-size="13" font-weight="600">{escape(title)}</text>')
    body.append(
        f'<rect x="{_f(left)}" y="{_f(top)}" width="{size}" height="{size}" fill="none" stroke="#999999"/>'
    )
    if diagonal:
        lo_d, hi_d = max(x_lo, y_lo), min(x_hi, y_hi)
        if lo_d < hi_d:
            body.append(
                f'<line class="diagonal" x1="{_f(px(lo_d))}" y1="{_f(py(lo_d))}" x2="{_f(px(hi_d))}" '
                f'y2="{_f(py(hi_d))}" stroke="#bbbbbb" stroke-dasharray="4 3"/>'
            )
    ticks = [
        (px(x_lo), bottom + 14, "middle", x_lo),
        (px(x_hi), bottom + 14, "middle", x_hi),
        (left - 6, py(y_lo) + 4, "end", y_lo),
        (left - 6, py(y_hi) + 4, "end", y_hi),
    ]
    for x, y, anchor, value in ticks:
        body.append(
            f'<text class="tick" x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}">{value:.{decimals}f}</text>'
        )
    if x_label:
        body.append(
            f'<text x="{_f(left + size / 2)}" y="{_f(bottom + 30)}" text-anchor="middle">'
            f"{escape(x_label)}</text>"
        )
    if y_label:
        body.append(
            f'<text x="10" y="{_f(top + size / 2)}" transform="rotate(-90 10 {_f(top + size / 2)})" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
    for x, y, label in kept:
        tip = f"{label}: " if label else ""
        tip += f"({x:.{decimals}f}, {y:.{decimals}f})"
        body.append(
            f'<circle class="point" cx="{_f(px(x))}" cy="{_f(py(y))}" r="4" fill="{SERIES[0]}" '
            f'fill-opacity="0.75"><title>{escape(tip)}</title></circle>'
        )
    return _svg(left + size + 16, bottom + (40 if x_label else 24), body, title)

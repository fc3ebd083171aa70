"""The charts of the manager pages (pools, agreement, evaluation): matplotlib figures drawn on the server as
inline SVG, in one look, with every value written on the chart, and number formatting shared by them.

Why matplotlib, and why this post-processing: the pages are served with a strict Content-Security-Policy
(``style-src 'self'``, no inline script or style), under which a browser ignores ``style="..."``
attributes and ``<style>`` elements, and matplotlib writes its colours into exactly those. :func:`_inline`
therefore rewrites every ``style`` into SVG presentation attributes (``fill="#2458a6"``), which no CSP
governs, drops the ``<style>`` element and the metadata, keeps only the ids something refers to (so two
charts on one page never share an id), and turns our own markers (each bar, cell, point and value label
carries a gid ``chart:<class>:<n>``) into ``class`` attributes with a ``<title>`` tooltip. Text stays text
(``svg.fonttype = none``): the values can be read, selected and found by tests.

Drawing is done with the object API (:class:`matplotlib.figure.Figure`, never pyplot), on the Agg backend,
with no network: it is safe in any worker thread. Every label goes through matplotlib's XML escaping and
again through ElementTree's, and mathtext is off, so a run named ``<script>`` or ``$x$`` is shown as typed.
Missing values (None or NaN) are drawn as grey cells or left out, never as zero.

Over 400 lines on purpose: the five chart kinds share one look, one SVG post-processing and one number
format, and a change to any of those is checked against all of them here.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

import matplotlib

matplotlib.use("Agg")

from cycler import cycler  # noqa: E402 - matplotlib's own dependency
from django.utils.safestring import SafeString, mark_safe  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402 - after choosing the backend
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap, Normalize, to_rgb  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

__all__ = [
    "NO_DATA",
    "SERIES",
    "decimals_apart",
    "grouped_bars",
    "hbar_chart",
    "heatmap",
    "scatter",
    "stacked_shares",
]

Number = float | int | None

NO_DATA = "#eeeeee"
"""Fill of a heatmap cell whose value is missing."""
ACCENT = "#2458a6"  # the stylesheet's accent colour
SERIES = (ACCENT, "#d08c2e", "#2f7d4f", "#b3261e", "#6b4fa3", "#5b6570")
SCALE = LinearSegmentedColormap.from_list("accent", ["#ffffff", ACCENT])
WIDTH = 8.0  # inches at 72 pt: about 770 CSS pixels before the page scales it down to fit
FONT_SIZE = 11
STYLE = {
    "svg.fonttype": "none",  # text as <text>, not glyph paths
    "svg.hashsalt": "labeling",  # ids from content, not random: the same chart gives the same SVG
    "text.parse_math": False,  # "$" in a run name is a dollar, not mathtext
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": FONT_SIZE,
    "axes.titlesize": FONT_SIZE + 2,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": FONT_SIZE,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#999999",
    "axes.prop_cycle": cycler(color=list(SERIES)),
    "legend.fontsize": FONT_SIZE - 1,
    "legend.frameon": False,
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "xtick.labelsize": FONT_SIZE - 1,
    "ytick.labelsize": FONT_SIZE - 1,
    "grid.color": "#e5e5e5",
}
cast(Any, matplotlib.rcParams).update(STYLE)  # the stubs type each key; these are all valid

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)
#: Properties matplotlib writes in `style` that are not presentation attributes, and what they become.
ROOT_STYLE = {"stroke-linejoin": "round", "stroke-linecap": "butt"}
FONT_FAMILY = "DejaVu Sans, system-ui, sans-serif"


# ------------------------------------------------------------------------------------------- numbers


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


def _label(text: str) -> str:
    """A legend label as typed: matplotlib hides labels that start with "_"."""
    return f"\u200b{text}" if text.startswith("_") else text


# ----------------------------------------------------------------------------------------- rendering


class _Marks:
    """The tooltips of the marked artists of one chart: `mark(artist, "bar", "alpha: 0.5")`."""

    def __init__(self) -> None:
        self.tips: list[str] = []

    def __call__(self, artist: Any, cls: str, tip: str = "") -> Any:
        artist.set_gid(f"chart:{cls}:{len(self.tips)}")
        self.tips.append(tip)
        return artist


def _figure(height: float) -> Figure:
    return Figure(figsize=(WIDTH, max(height, 1.5)), layout="constrained")


def _style_attributes(element: ET.Element) -> None:
    style = element.attrib.pop("style", None)
    if not style:
        return
    for declaration in style.split(";"):
        if ":" not in declaration:
            continue
        name, value = (part.strip() for part in declaration.split(":", 1))
        if name == "font":
            # matplotlib writes the shorthand "[style] [weight] SIZEpx 'Family'"
            match = re.match(r"\s*(?:(italic|oblique|normal)\s+)?(?:(\w+)\s+)?([\d.]+)px\s+(.*)", value)
            if match:
                font_style, weight, size, _family = match.groups()
                if font_style and font_style != "normal":
                    element.set("font-style", font_style)
                if weight and weight != "normal":
                    element.set("font-weight", weight)
                element.set("font-size", size)
            continue
        element.set(name, value)


def _inline(svg: str, *, title: str, marks: _Marks) -> SafeString:
    """matplotlib's SVG document as one CSP-proof inline `<svg>` element (see the module docstring)."""
    root = ET.fromstring(svg)  # noqa: S314 - matplotlib's own output, not user input
    referenced = set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', svg))
    keep = {name for pair in referenced for name in pair if name}
    for parent in root.iter():
        for child in list(parent):
            if child.tag in (f"{{{SVG_NS}}}metadata", f"{{{SVG_NS}}}style"):
                parent.remove(child)
    for element in root.iter():
        _style_attributes(element)
        gid = element.get("id", "")
        if gid.startswith("chart:"):
            _, cls, number = gid.split(":")
            del element.attrib["id"]
            element.set("class", cls)
            tip = marks.tips[int(number)]
            if tip:
                tooltip = ET.Element(f"{{{SVG_NS}}}title")
                tooltip.text = tip
                element.insert(0, tooltip)
        elif gid and gid not in keep:
            del element.attrib["id"]
    root.attrib.pop("version", None)
    root.set("class", "chart")
    root.set("role", "img")
    root.set("aria-label", title or "chart")
    root.set("font-family", FONT_FAMILY)
    for name, value in ROOT_STYLE.items():
        root.set(name, value)
    if title:
        heading = ET.Element(f"{{{SVG_NS}}}title")
        heading.text = title
        root.insert(0, heading)
    markup = ET.tostring(root, encoding="unicode")
    return mark_safe(markup)  # noqa: S308 - every text node and attribute was escaped by ElementTree


def _render(figure: Figure, *, title: str, marks: _Marks) -> SafeString:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                   pad_inches=0.08)  # fmt: skip
    return _inline(buffer.getvalue(), title=title, marks=marks)


def _frame(
    ax: Axes,
    *,
    grid: Literal["x", "y", "both", ""] = "",
    x_label: str = "",
    y_label: str = "",
    title: str = "",
) -> None:
    """What every chart puts around its marks: gridlines along ``grid`` ("x", "y" or "both"; none when
    empty) behind them, the axis labels and the title, each left out when empty."""
    if grid:
        ax.grid(True, axis=grid)
        ax.set_axisbelow(True)
    if x_label:
        ax.set_xlabel(x_label)
    if y_label:
        ax.set_ylabel(y_label)
    if title:
        ax.set_title(title)


def _ink(fill: tuple[float, ...]) -> str:
    """Black or white text, whichever reads better on `fill` (by relative luminance)."""
    r, g, b = fill[:3]
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "#ffffff"


# ------------------------------------------------------------------------------------------- charts


def heatmap(
    matrix: Sequence[Sequence[Number]],
    row_labels: Sequence[str],
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    decimals: int = 2,
    show_values: bool = True,
    scale_label: str = "",
) -> SafeString:
    """A heatmap of ``matrix[i][j]`` (row ``i``, column ``j``): one ``cell`` per value, coloured on a white →
    accent scale from ``vmin`` to ``vmax`` (defaults: the smallest and largest present values), its value
    written in it (``decimals`` places, dark or light ink for contrast), a tooltip ``row × column: value``
    and a labelled colour bar. Missing values are grey cells without text. Raises ``ValueError`` when the
    shape and the labels disagree."""
    cols = list(col_labels) if col_labels is not None else list(row_labels)
    rows = list(row_labels)
    if len(matrix) != len(rows) or any(len(line) != len(cols) for line in matrix):
        raise ValueError(f"matrix must be {len(rows)} x {len(cols)} to match the labels")
    present = [float(v) for line in matrix for v in line if not _missing(v)]  # type: ignore[arg-type]  # not _missing: not None
    lo = vmin if vmin is not None else min(present, default=0.0)
    hi = vmax if vmax is not None else max(present, default=1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    norm = Normalize(lo, hi, clip=True)
    marks = _Marks()
    side = min(0.55, 6.0 / max(len(cols), 1))
    longest = max((len(label) for label in [*rows, *cols]), default=1)
    figure = _figure(len(rows) * side + 1.2 + 0.09 * min(longest, 40))
    ax = figure.add_subplot()
    for i, line in enumerate(matrix):
        for j, value in enumerate(line):
            if _missing(value):
                cell = Rectangle((j, i), 1, 1, facecolor=NO_DATA, edgecolor="#ffffff")
                ax.add_patch(marks(cell, "cell", f"{rows[i]} × {cols[j]}: no data"))
                continue
            number = float(value)  # type: ignore[arg-type]  # not _missing: not None
            fill = SCALE(norm(number))
            text = f"{number:.{decimals}f}"
            cell = Rectangle((j, i), 1, 1, facecolor=fill, edgecolor="#ffffff")
            ax.add_patch(marks(cell, "cell", f"{rows[i]} × {cols[j]}: {text}"))
            if show_values:
                label = ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", color=_ink(fill),
                                fontsize=FONT_SIZE - 2 if len(cols) > 12 else FONT_SIZE - 1)  # fmt: skip
                marks(label, "value")
    ax.set_xlim(0, max(len(cols), 1))
    ax.set_ylim(max(len(rows), 1), 0)
    ax.set_aspect("equal")
    ax.set_xticks([j + 0.5 for j in range(len(cols))], cols, rotation=90 if longest > 3 else 0)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    _frame(ax, title=title)
    scale = figure.colorbar(ScalarMappable(norm=norm, cmap=SCALE), ax=ax, shrink=0.8)
    if scale_label:
        scale.set_label(scale_label)
    return _render(figure, title=title, marks=marks)


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

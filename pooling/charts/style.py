"""The one look of the charts: the colours, the page width, the font and matplotlib's settings for them
(applied to ``matplotlib.rcParams`` on import), the figure every chart draws on and what it puts around
its marks, the ink for text on a fill, and legend labels shown as typed."""

from __future__ import annotations

from typing import Any, Literal, cast

import matplotlib
from cycler import cycler  # matplotlib's own dependency
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

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


def _figure(height: float) -> Figure:
    return Figure(figsize=(WIDTH, max(height, 1.5)), layout="constrained")


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


def _label(text: str) -> str:
    """A legend label as typed: matplotlib hides labels that start with "_"."""
    return f"\u200b{text}" if text.startswith("_") else text

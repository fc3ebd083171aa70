"""The one look of the charts: the colours, the page width, the font and matplotlib's settings for them
(applied to ``matplotlib.rcParams`` on import; its warnings of missing glyphs silenced at each drawing),
the figure every chart draws on and what it puts around its marks, the ink for text on a fill, and legend
labels shown as typed."""

from __future__ import annotations

import warnings
from typing import Any, Literal, cast

import matplotlib

matplotlib.use("Agg")  # before the imports below; no pyplot, no display, safe in any thread

from cycler import cycler  # noqa: E402 - after the backend (cycler: matplotlib's own dependency)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

NO_DATA = "#eeeeee"
"""Fill of a heatmap cell whose value is missing."""
ACCENT = "#2458a6"  # the stylesheet's accent colour
SERIES = (ACCENT, "#d08c2e", "#2f7d4f", "#b3261e", "#6b4fa3", "#5b6570")
SCALE = LinearSegmentedColormap.from_list("accent", ["#ffffff", ACCENT])
WIDTH = 8.0  # inches at 72 pt: about 770 CSS pixels before the page scales it down to fit
FONT = "DejaVu Sans"  # what matplotlib measures the text with (it ships with matplotlib)
FONT_SIZE = 11
#: The fonts of every text of a chart, as the browser reads them (the <svg> element's `font-family`): the
#: text is text (`svg.fonttype`), so a browser draws it in the first of these that has its glyphs, ending
#: in a generic family, so that a rater named 評価者 or Ωμέγα is drawn in a font that has them.
FONT_FAMILY = f"{FONT}, system-ui, sans-serif"
STYLE = {
    "svg.fonttype": "none",  # text as <text>, not glyph paths
    "svg.hashsalt": "labeling",  # ids from content, not random: the same chart gives the same SVG
    "text.parse_math": False,  # "$" in a run name is a dollar, not mathtext
    "font.family": "sans-serif",
    "font.sans-serif": [FONT],
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
MISSING_GLYPH = r"Glyph \d+ .* missing from font"


def _quiet_missing_glyphs() -> None:
    """Silence matplotlib's warning of each glyph FONT lacks (CJK, ...), which it gives for every chart
    drawn: the browser, not matplotlib, draws the text, in a font of FONT_FAMILY that has it. Called at
    every drawing, not once on import: a `warnings.catch_warnings` block around the import (a test
    runner's collection) would take the filter away on leaving. It is only added when missing, so the
    registry of warnings already shown stays as it is."""
    quiet = (f[0] == "ignore" and getattr(f[1], "pattern", None) == MISSING_GLYPH for f in warnings.filters)
    if not any(quiet):
        warnings.filterwarnings("ignore", message=MISSING_GLYPH, category=UserWarning)


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

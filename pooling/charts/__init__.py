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

The package, one concern a module; its public names are imported here on their first use (`_HOMES`):

- ``style``: the one look (colours ``ACCENT``, ``SERIES``, ``NO_DATA``, the heatmap scale, the font and
  matplotlib's ``rcParams``), the figure every chart draws on and the frame around its marks;
- ``numbers``: ``Number`` (a value that may be missing) and ``decimals_apart``;
- ``svg``: the marks (``_Marks``) and a figure rendered as CSP-proof inline SVG (``_render``, ``_inline``);
- ``heatmaps``: ``heatmap``;
- ``bars``: ``hbar_chart``, ``stacked_shares``, ``grouped_bars``;
- ``points``: ``scatter``.

A name is looked up in the module that defines it: to patch one, patch it there
(``pooling.charts.svg._inline``), not here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pooling.charts.bars import grouped_bars, hbar_chart, stacked_shares
    from pooling.charts.heatmaps import heatmap
    from pooling.charts.numbers import decimals_apart
    from pooling.charts.points import scatter
    from pooling.charts.style import ACCENT as ACCENT  # the tests compare fills with it
    from pooling.charts.style import NO_DATA, SERIES

#: Each public name and the module that defines it, imported on the name's first use: matplotlib takes
#: most of a second to import, and every page module imports this package, so a process that draws no
#: chart (a management command, a worker, a rater's request) does not pay for it.
_HOMES = {
    "grouped_bars": "bars",
    "hbar_chart": "bars",
    "stacked_shares": "bars",
    "heatmap": "heatmaps",
    "decimals_apart": "numbers",
    "scatter": "points",
    "ACCENT": "style",
    "NO_DATA": "style",
    "SERIES": "style",
}

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


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value

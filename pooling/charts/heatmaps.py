"""The heatmap: one coloured cell per value of a matrix, its value written in it."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.safestring import SafeString
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.patches import Rectangle

from pooling.charts.numbers import Number, _missing
from pooling.charts.style import FONT_SIZE, NO_DATA, SCALE, _figure, _frame, _ink
from pooling.charts.svg import _Marks, _render


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

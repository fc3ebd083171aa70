"""labeling.plots: inline SVG that parses, escapes every label and draws values to scale. No database."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from labeling import plots

NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert("x")</script> & co'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # noqa: S314 - our own output
    assert root.tag == f"{NS}svg"
    return root


def elements(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    found = root.iter(f"{NS}{tag}")
    return [e for e in found if cls is None or e.get("class") == cls]


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in elements(root, "text")]


# ------------------------------------------------------------------------------------------- heatmap


def test_it_draws_one_cell_per_value_with_its_label() -> None:
    svg = plots.heatmap([[1.0, 0.25], [0.25, 1.0], [0.0, 0.5]], ["a", "b", "c"], ["x", "y"])
    root = parse(svg)
    cells = elements(root, "rect", "cell")
    assert len(cells) == 6
    values = [e.text for e in elements(root, "text", "value")]
    assert values == ["1.00", "0.25", "0.25", "1.00", "0.00", "0.50"]
    assert [e.text for e in elements(root, "text", "row-label")] == ["a", "b", "c"]
    assert [e.text for e in elements(root, "text", "col-label")] == ["x", "y"]
    assert "".join(cells[1].find(f"{NS}title").itertext()) == "a × y: 0.25"


def test_it_colours_cells_on_the_scale_from_vmin_to_vmax() -> None:
    root = parse(plots.heatmap([[0.0, 0.5, 1.0, 2.0]], ["r"], ["a", "b", "c", "d"], vmin=0.0, vmax=1.0))
    fills = [e.get("fill") for e in elements(root, "rect", "cell")]
    assert fills[0] == "#ffffff"
    assert fills[2] == "#2458a6"
    assert fills[3] == "#2458a6"  # clamped above vmax
    assert fills[1] == plots.colour_scale(0.5, 0.0, 1.0)
    # The scale itself runs from vmax (top) to vmin (bottom) and its ends are labelled.
    scale = [e.get("fill") for e in elements(root, "rect", "scale")]
    assert scale[0] == "#2458a6" and scale[-1] == "#ffffff"
    assert "1.00" in texts(root) and "0.00" in texts(root)


def test_it_makes_the_colour_scale_monotone() -> None:
    blues = [int(plots.colour_scale(v / 10, 0, 1)[5:7], 16) for v in range(11)]
    reds = [int(plots.colour_scale(v / 10, 0, 1)[1:3], 16) for v in range(11)]
    assert reds == sorted(reds, reverse=True)
    assert blues == sorted(blues, reverse=True)
    assert plots.colour_scale(3.0, 3.0, 3.0) == plots.colour_scale(0.5, 0.0, 1.0)


def test_it_writes_dark_text_on_light_cells_and_light_text_on_dark_cells() -> None:
    root = parse(plots.heatmap([[0.0, 1.0]], ["r"], ["a", "b"], vmin=0, vmax=1))
    inks = [e.get("fill") for e in elements(root, "text", "value")]
    assert inks == ["#000000", "#ffffff"]


def test_it_draws_missing_values_grey_and_without_text() -> None:
    root = parse(plots.heatmap([[None, math.nan], [0.5, 1.0]], ["a", "b"]))
    cells = elements(root, "rect", "cell")
    assert [c.get("fill") for c in cells[:2]] == [plots.NO_DATA, plots.NO_DATA]
    assert len(elements(root, "text", "value")) == 2
    assert "no data" in "".join(cells[0].itertext())


def test_it_escapes_heatmap_labels_and_title() -> None:
    svg = plots.heatmap([[1.0]], [EVIL], title=EVIL, scale_label=EVIL)
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    root = parse(svg)
    assert EVIL in texts(root)
    assert root.get("aria-label") == EVIL


def test_it_refuses_a_matrix_that_does_not_fit_the_labels() -> None:
    with pytest.raises(ValueError, match="2 x 2"):
        plots.heatmap([[1.0, 0.0]], ["a", "b"])


def test_it_can_leave_out_the_cell_values() -> None:
    root = parse(plots.heatmap([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], show_values=False))
    assert elements(root, "text", "value") == []
    assert len(elements(root, "rect", "cell")) == 4


# -------------------------------------------------------------------------------------- bar charts


def test_it_draws_horizontal_bars_proportional_to_the_values() -> None:
    root = parse(plots.hbar_chart(["a", "b", "c"], [10, 5, 2.5], title="Items"))
    widths = [float(e.get("width")) for e in elements(root, "rect", "bar")]
    assert widths[0] > 0
    assert widths[1] / widths[0] == pytest.approx(0.5, abs=0.01)
    assert widths[2] / widths[0] == pytest.approx(0.25, abs=0.01)
    assert [e.text for e in elements(root, "text", "value")] == ["10", "5", "2"]  # 2.5 at 0 decimals
    assert [e.text for e in elements(root, "text", "label")] == ["a", "b", "c"]


def test_it_draws_negative_bars_empty_and_missing_ones_as_a_dash() -> None:
    root = parse(plots.hbar_chart(["a", "b", "c"], [4, -2, None], decimals=1))
    bars = elements(root, "rect", "bar")
    assert [float(e.get("width")) for e in bars][1] == 0
    assert len(bars) == 2
    assert "–" in texts(root)
    assert [e.text for e in elements(root, "text", "value")] == ["4.0", "-2.0"]


def test_it_escapes_bar_labels() -> None:
    svg = plots.hbar_chart([EVIL], [1])
    assert "<script>" not in svg
    assert EVIL in texts(parse(svg))


def test_it_draws_grouped_bars_with_error_bars_around_their_values() -> None:
    svg = plots.grouped_bars(
        ["t1", "t2"],
        {"bm25": [0.4, 0.2], "dense": [0.6, None]},
        errors={"bm25": [(0.3, 0.5), None], "dense": [(0.5, 0.7), (0.1, 0.2)]},
        vmin=0.0,
        vmax=1.0,
    )
    root = parse(svg)
    bars = elements(root, "rect", "bar")
    assert len(bars) == 3  # the missing value draws nothing
    heights = [float(e.get("height")) for e in bars]
    assert heights[1] / heights[0] == pytest.approx(1.5, abs=0.01)  # 0.6 / 0.4
    assert heights[2] / heights[0] == pytest.approx(0.5, abs=0.01)  # 0.2 / 0.4
    errors = elements(root, "path", "error")
    assert len(errors) == 3
    # The first error bar spans 0.3..0.5: its vertical segment brackets the top of the 0.4 bar.
    start, end = errors[0].get("d").split("V")[0], errors[0].get("d").split("V")[1].split("M")[0]
    y_low, y_high = float(start.split(" ")[1]), float(end)
    bar_top = float(bars[0].get("y"))
    assert y_high < bar_top < y_low
    assert [e.text for e in elements(root, "text", "group")] == ["t1", "t2"]
    assert "bm25" in texts(root) and "dense" in texts(root)


def test_it_draws_negative_grouped_bars_below_the_zero_line() -> None:
    root = parse(plots.grouped_bars(["g"], {"a": [-0.5], "b": [0.5]}))
    low, high = elements(root, "rect", "bar")
    assert float(low.get("y")) == pytest.approx(float(high.get("y")) + float(high.get("height")), abs=0.02)


def test_it_refuses_series_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="one value per group"):
        plots.grouped_bars(["a", "b"], {"s": [1.0]})


def test_it_escapes_grouped_bar_labels() -> None:
    svg = plots.grouped_bars([EVIL], {EVIL: [1.0]}, title=EVIL, y_label=EVIL)
    assert "<script>" not in svg
    parse(svg)


# ----------------------------------------------------------------------------------------- scatter


def test_it_places_scatter_points_by_their_coordinates() -> None:
    root = parse(plots.scatter([(0, 0), (1, 1), (0.5, 0.25), (None, 1)], labels=["a", "b", "c", "d"]))
    points = elements(root, "circle", "point")
    assert len(points) == 3  # the point with a missing coordinate is left out
    (x0, y0), (x1, y1), (x2, y2) = [(float(p.get("cx")), float(p.get("cy"))) for p in points]
    assert (x2 - x0) / (x1 - x0) == pytest.approx(0.5, abs=0.01)
    assert (y2 - y0) / (y1 - y0) == pytest.approx(0.25, abs=0.01)  # y grows upwards: both negative
    assert "".join(points[2].itertext()) == "c: (0.50, 0.25)"


def test_it_draws_the_diagonal_when_asked() -> None:
    root = parse(plots.scatter([(0.1, 0.2), (0.8, 0.6)], diagonal=True, x_label="old", y_label="new"))
    assert len(elements(root, "line", "diagonal")) == 1
    assert "old" in texts(root) and "new" in texts(root)


def test_it_escapes_scatter_labels() -> None:
    svg = plots.scatter([(1, 2)], labels=[EVIL], title=EVIL, x_label=EVIL, y_label=EVIL)
    assert "<script>" not in svg
    parse(svg)


def test_it_draws_empty_plots_without_failing() -> None:
    for svg in (
        plots.heatmap([], []),
        plots.hbar_chart([], []),
        plots.grouped_bars([], {}),
        plots.scatter([]),
    ):
        parse(svg)

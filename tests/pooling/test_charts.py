"""pooling.charts: matplotlib's SVG made inline and CSP-proof, one element per cell, bar and point, every
value written on the chart, every label escaped. No database."""

from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET

import pytest

from pooling import charts
from pooling.charts.style import FONT_FAMILY

NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert("x")</script> & co $x$'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # noqa: S314 - our own output
    assert root.tag == f"{NS}svg"
    return root


def marked(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}g") if e.get("class") == cls]


def text_of(element: ET.Element) -> str:
    return "".join("".join(t.itertext()) for t in element.iter(f"{NS}text"))


def child(element: ET.Element, path: str) -> ET.Element:
    """The first element at ``path`` under ``element``, which the caller expects to be there."""
    found = element.find(path)
    assert found is not None, path
    return found


def tip(element: ET.Element) -> str:
    return "".join(child(element, f"{NS}title").itertext())


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter(f"{NS}text")]


def box(element: ET.Element) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of the first path of a marked element."""
    d = child(element, f"{NS}path").get("d")
    assert d is not None
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d)]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def fill(element: ET.Element) -> str | None:
    return child(element, f"{NS}path").get("fill")


ALL = [
    lambda: charts.heatmap([[1.0, 0.25], [0.25, None]], ["a", "b"], title="h", scale_label="J"),
    lambda: charts.hbar_chart(["a", "b"], [2, None], title="b", legend="items"),
    lambda: charts.grouped_bars(["g1", "g2"], {"s": [0.1, 0.2], "t": [0.3, None]}, title="g"),
    lambda: charts.scatter([(0.1, 0.2), (0.3, 0.4)], kinds=["x", "y"], title="s"),
]


# ------------------------------------------------------------------------------------- for every chart


@pytest.mark.parametrize("draw", ALL)
def test_it_uses_no_inline_style_the_csp_would_block(draw) -> None:
    svg = draw()
    assert "style=" not in svg and "<style" not in svg and "<script" not in svg
    root = parse(svg)
    assert root.get("class") == "chart" and root.get("role") == "img"
    assert all(e.get("fill") or e.get("stroke") for e in root.iter(f"{NS}path") if e.get("d"))


@pytest.mark.parametrize("draw", ALL)
def test_it_keeps_only_the_ids_something_refers_to(draw) -> None:
    svg = draw()
    ids = re.findall(r' id="([^"]+)"', svg)
    assert ids, "clip paths and markers keep theirs"
    for name in ids:
        assert f"#{name}" in svg


def test_it_draws_the_same_chart_the_same_way() -> None:
    assert ALL[0]() == ALL[0]()


# ------------------------------------------------------------------------------------------- heatmap


def test_it_draws_one_cell_per_value_with_its_value_written_in_it() -> None:
    root = parse(charts.heatmap([[1.0, 0.25], [0.25, 1.0], [0.0, 0.5]], ["a", "b", "c"], ["x", "y"]))
    cells = marked(root, "cell")
    assert len(cells) == 6
    assert [text_of(e) for e in marked(root, "value")] == ["1.00", "0.25", "0.25", "1.00", "0.00", "0.50"]
    assert tip(cells[1]) == "a × y: 0.25"
    assert {"a", "b", "c", "x", "y"} <= set(texts(root))


def test_it_colours_cells_on_the_scale_from_vmin_to_vmax_with_a_colour_bar() -> None:
    root = parse(charts.heatmap([[0.0, 0.5, 1.0, 2.0]], ["r"], ["a", "b", "c", "d"], vmin=0.0, vmax=1.0,
                                scale_label="Jaccard"))  # fmt: skip
    fills = [fill(e) for e in marked(root, "cell")]
    assert fills[0] == "#ffffff"
    assert fills[2] == charts.ACCENT == fills[3]  # clamped above vmax
    assert fills[1] not in ("#ffffff", charts.ACCENT)
    assert "Jaccard" in texts(root)
    assert texts(root).count("1.00") == 2 and texts(root).count("0.00") == 2  # a cell and the colour bar


def test_it_writes_dark_text_on_light_cells_and_light_text_on_dark_cells() -> None:
    root = parse(charts.heatmap([[0.0, 1.0]], ["r"], ["a", "b"], vmin=0, vmax=1))
    inks = [child(e, f"{NS}text").get("fill", "#000000") for e in marked(root, "value")]
    assert inks == ["#000000", "#ffffff"]


def test_it_draws_missing_values_grey_and_without_text() -> None:
    root = parse(charts.heatmap([[None, math.nan], [0.5, 1.0]], ["a", "b"]))
    cells = marked(root, "cell")
    assert [fill(c) for c in cells[:2]] == [charts.NO_DATA, charts.NO_DATA]
    assert len(marked(root, "value")) == 2
    assert tip(cells[0]) == "a × a: no data"


def test_it_escapes_heatmap_labels_and_title() -> None:
    svg = charts.heatmap([[1.0]], [EVIL], title=EVIL, scale_label=EVIL)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    root = parse(svg)
    assert EVIL in texts(root)  # shown as typed: no markup, no mathtext
    assert root.get("aria-label") == EVIL


def test_it_refuses_a_matrix_that_does_not_fit_the_labels() -> None:
    with pytest.raises(ValueError, match="2 x 2"):
        charts.heatmap([[1.0, 0.0]], ["a", "b"])


def test_it_can_leave_out_the_cell_values() -> None:
    root = parse(charts.heatmap([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], show_values=False))
    assert marked(root, "value") == []
    assert len(marked(root, "cell")) == 4


# -------------------------------------------------------------------------------------- bar charts


def test_it_draws_horizontal_bars_proportional_to_the_values_with_the_values_written() -> None:
    root = parse(charts.hbar_chart(["a", "b", "c"], [10, 5, 2.5], title="Items", legend="items"))
    bars = marked(root, "bar")
    widths = [box(e)[2] - box(e)[0] for e in bars]
    assert widths[1] / widths[0] == pytest.approx(0.5, abs=0.01)
    assert widths[2] / widths[0] == pytest.approx(0.25, abs=0.01)
    assert [text_of(e) for e in marked(root, "value")] == ["10", "5", "2"]  # 2.5 at 0 decimals
    assert [tip(e) for e in bars] == ["a: 10", "b: 5", "c: 2"]
    tops = [box(e)[1] for e in bars]
    assert tops == sorted(tops)  # the first label on top
    assert {"a", "b", "c", "Items", "items"} <= set(texts(root))


def test_it_draws_negative_bars_left_of_zero_and_missing_ones_as_a_dash() -> None:
    root = parse(charts.hbar_chart(["a", "b", "c"], [4, -2, None], decimals=1))
    bars = marked(root, "bar")
    assert len(bars) == 2
    assert box(bars[1])[0] < box(bars[0])[0]  # -2 reaches left of the zero where 4 starts
    assert [text_of(e) for e in marked(root, "value")] == ["4.0", "-2.0", "–"]


def test_it_tells_small_values_apart_with_enough_decimals() -> None:
    values = [0.0003, 0.0002]
    root = parse(charts.hbar_chart(["a", "b"], values, decimals=charts.decimals_apart(values)))
    assert [text_of(e) for e in marked(root, "value")] == ["0.00030", "0.00020"]


def test_it_escapes_bar_labels() -> None:
    svg = charts.hbar_chart([EVIL], [1])
    assert "<script>" not in svg
    assert EVIL in texts(parse(svg))


def test_it_draws_grouped_bars_with_their_values_and_a_legend() -> None:
    root = parse(charts.grouped_bars(["t1", "t2"], {"bm25": [0.4, 0.2], "dense": [0.6, None]},
                                     vmin=0.0, vmax=1.0, title="Runs"))  # fmt: skip
    bars = marked(root, "bar")
    assert len(bars) == 3  # the missing value draws nothing
    heights = [box(e)[3] - box(e)[1] for e in bars]
    assert heights[1] / heights[0] == pytest.approx(0.5, abs=0.01)  # bm25 t2 0.2 / bm25 t1 0.4
    assert heights[2] / heights[0] == pytest.approx(1.5, abs=0.01)  # dense t1 0.6 / 0.4
    assert [text_of(e) for e in marked(root, "value")] == ["0.400", "0.200", "0.600"]
    assert tip(bars[2]) == "t1 · dense: 0.600"
    assert fill(bars[0]) == fill(bars[1]) != fill(bars[2])
    assert {"bm25", "dense", "t1", "t2"} <= set(texts(root))


def test_it_refuses_a_series_without_one_value_per_group() -> None:
    with pytest.raises(ValueError):
        charts.grouped_bars(["a", "b"], {"s": [1.0]})


def test_it_escapes_grouped_bar_labels() -> None:
    svg = charts.grouped_bars([EVIL], {EVIL: [1.0]}, title=EVIL, y_label=EVIL)
    assert "<script>" not in svg
    assert texts(parse(svg)).count(EVIL) >= 3


# ---------------------------------------------------------------------------------------- scatter


def test_it_draws_one_point_per_complete_pair_with_a_tooltip_and_a_legend_of_kinds() -> None:
    root = parse(charts.scatter([(0, 0), (1, 1), (0.5, 0.25), (None, 1)], labels=["a", "b", "c", "d"],
                                kinds=["fine", "fine", "ranking problem", "fine"]))  # fmt: skip
    points = marked(root, "point")
    assert [tip(p) for p in points] == ["a: (0.00, 0.00)", "b: (1.00, 1.00)", "c: (0.50, 0.25)"]
    assert {"fine", "ranking problem"} <= set(texts(root))
    colours = [child(p, f".//{NS}use").get("fill") for p in points]
    assert colours[0] == colours[1] != colours[2]


def test_it_escapes_scatter_labels() -> None:
    svg = charts.scatter([(1, 2)], labels=[EVIL], title=EVIL, x_label=EVIL, y_label=EVIL)
    assert "<script>" not in svg
    root = parse(svg)
    assert tip(marked(root, "point")[0]).startswith(EVIL)


GENERIC_FAMILIES = ("serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui")


def font_family(root: ET.Element, element: ET.Element) -> str:
    """The font-family a browser draws `element` in: its own, else the nearest ancestor's."""
    parents = {kid: parent for parent in root.iter() for kid in parent}
    node: ET.Element | None = element
    while node is not None and node.get("font-family") is None:
        node = parents.get(node)
    assert node is not None, "no font-family at all"
    return node.get("font-family", "")


@pytest.mark.parametrize("name", ["評価者", "Ωμέγα"])
def test_it_writes_a_non_latin_name_as_text_in_fonts_ending_in_a_generic_family(name: str) -> None:
    """The browser draws the text (`svg.fonttype` none): in the first font of the family list that has the
    glyphs, a generic family last so that one does. matplotlib's measuring font lacks them: it does not
    warn of it for every chart."""
    with warnings.catch_warnings(record=True) as caught:
        svg = charts.hbar_chart([name, "alice"], [0.5, 0.25], title=f"κ of {name}", decimals=2)
    assert [str(w.message) for w in caught if "missing from font" in str(w.message)] == []
    root = parse(svg)
    named = [text for text in root.iter(f"{NS}text") if name in "".join(text.itertext())]
    assert len(named) == 2  # the bar's label and the title
    for text in root.iter(f"{NS}text"):
        assert text.get("font-family") is None  # the chart's one family, not one per text
        assert font_family(root, text) == FONT_FAMILY
    assert [part.strip() for part in FONT_FAMILY.split(",")][-1] in GENERIC_FAMILIES


def test_it_draws_empty_charts_without_failing() -> None:
    for svg in (charts.heatmap([], []), charts.hbar_chart([], []), charts.grouped_bars([], {}),
                charts.scatter([])):  # fmt: skip
        parse(svg)


def test_decimals_apart_tells_values_apart_with_two_significant_digits() -> None:
    assert charts.decimals_apart([-0.0003, -0.0002]) == 5
    assert charts.decimals_apart([0.5, 0.25, None, math.nan]) == 3
    assert charts.decimals_apart([0.12345, 0.12346]) == 5
    assert charts.decimals_apart([]) == 3

"""A matplotlib figure rendered as one CSP-proof inline ``<svg>`` element: every ``style`` attribute
rewritten as presentation attributes, the ``<style>`` element and the metadata dropped, only the ids
something refers to kept, and the gid markers ``chart:<class>:<n>`` turned into ``class`` attributes with
a ``<title>`` tooltip (see the docstring of :mod:`pooling.charts`)."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from matplotlib.figure import Figure

from pooling.charts.style import FONT_FAMILY, _quiet_missing_glyphs

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)
#: Properties matplotlib writes in `style` that are not presentation attributes, and what they become.
ROOT_STYLE = {"stroke-linejoin": "round", "stroke-linecap": "butt"}


class _Marks:
    """The tooltips of the marked artists of one chart: `mark(artist, "bar", "alpha: 0.5")`."""

    def __init__(self) -> None:
        self.tips: list[str] = []

    def __call__(self, artist: Any, cls: str, tip: str = "") -> Any:
        artist.set_gid(f"chart:{cls}:{len(self.tips)}")
        self.tips.append(tip)
        return artist


def _style_attributes(element: ET.Element) -> None:
    style = element.attrib.pop("style", None)
    if not style:
        return
    for declaration in style.split(";"):
        if ":" not in declaration:
            continue
        name, value = (part.strip() for part in declaration.split(":", 1))
        if name == "font-family":
            continue  # every text's is the chart's own (FONT_FAMILY, on the <svg> element), not matplotlib's
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
    _quiet_missing_glyphs()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                   pad_inches=0.08)  # fmt: skip
    return _inline(buffer.getvalue(), title=title, marks=marks)

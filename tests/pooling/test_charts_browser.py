"""The charts in Chromium under the pages' strict Content-Security-Policy: no violation, and the colours
and values still show (a `style` attribute would be dropped by the CSP and leave every shape black)."""

from __future__ import annotations

import pytest

from labeling.middleware import CONTENT_SECURITY_POLICY
from pooling import charts

pytestmark = [pytest.mark.browser]

# A <meta> policy cannot carry frame-ancestors; the rest is the header the pages send.
POLICY = "; ".join(p for p in CONTENT_SECURITY_POLICY.split("; ") if not p.startswith("frame-ancestors"))


def test_every_chart_keeps_its_colours_and_values_under_the_csp(browser):  # noqa: F811
    figures = [
        charts.heatmap([[0.0, 1.0], [1.0, None]], ["alpha", "beta"], vmin=0, vmax=1, title="Overlap"),
        charts.hbar_chart(["a", "b"], [0.0003, 0.0002], decimals=5, legend="loss"),
        charts.grouped_bars(["bm25"], {"nDCG@10": [0.5], "judged@10": [0.9]}),
        charts.scatter([(0.2, 0.4)], labels=["q1"], kinds=["fine"]),
        charts.stacked_shares(["rater"], [("3", "#2f7d4f", [2]), ("0", "#b3261e", [1])]),
    ]
    html = (
        f'<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="{POLICY}"></head>'
        f"<body>{''.join(str(f) for f in figures)}</body></html>"
    )
    page = browser.new_page()
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    page.set_content(html)
    assert not [m for m in messages if "Content Security Policy" in m]
    fill = page.evaluate("getComputedStyle(document.querySelectorAll('g.cell path')[1]).fill")
    assert fill == "rgb(36, 88, 166)"  # the accent colour of a 1.0 cell, not black
    grey = page.evaluate("getComputedStyle(document.querySelectorAll('g.cell path')[3]).fill")
    assert grey == "rgb(238, 238, 238)"  # the missing value
    values = page.evaluate("[...document.querySelectorAll('g.value text')].map(t => t.textContent)")
    assert values[:3] == ["0.00", "1.00", "1.00"] and "0.00030" in values and "0.00020" in values
    assert page.evaluate("document.querySelectorAll('svg.chart').length") == len(figures)
    page.close()

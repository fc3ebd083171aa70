"""The click-labels page shows at most LABELS_SHOWN labels and, when it cuts, says how many there are and
where all of them are (the API's paginated list)."""

from __future__ import annotations

import pytest
from django.test import Client

from online import services, views
from tests.online.helpers import judged_pool, pool_log

pytestmark = pytest.mark.django_db

PAGES = [
    {"session": f"s{i}", "qid": q, "docids": ["d001", "d002", "d003"], "clicks": [1]}
    for i in range(4)
    for q in ("q1", "q2")
]


def labels_page(manager, tmp_path, monkeypatch, shown: int) -> tuple[str, int, Client]:
    pool = judged_pool(grades={"d001": 3}, managers=[manager])
    log = pool_log(tmp_path, pool, PAGES)
    label_set = services.derive_click_labels(
        log=log, estimator="coec", propensity_estimate=None, thresholds=""
    )
    monkeypatch.setattr(views, "LABELS_SHOWN", shown)
    client = Client()
    client.force_login(manager)
    return client.get(f"/online/labels/{label_set.pk}/").content.decode(), label_set.pk, client


def test_a_cut_list_says_how_many_labels_there_are_and_links_to_all(manager, tmp_path, monkeypatch) -> None:
    page, pk, client = labels_page(manager, tmp_path, monkeypatch, shown=4)
    assert "the first 4 of 6 labels" in page and "all 6 labels</a>" in page
    assert f'href="/api/click-labels/{pk}/labels/"' in page
    assert page.count("<tr><td>q") == 4
    assert "the first 4" not in client.get("/online/logs/").content.decode()  # said once, where it applies


def test_a_whole_list_says_nothing_of_a_cut(manager, tmp_path, monkeypatch) -> None:
    page, _, _ = labels_page(manager, tmp_path, monkeypatch, shown=500)
    assert "labels</a>" not in page and "the first" not in page
    assert page.count("<tr><td>q") == 6

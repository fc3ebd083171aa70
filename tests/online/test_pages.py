"""The manager pages: the propensity curve with its intervention counts, click labels beside the human
grades with the agreement gate, and the release from the page."""

from __future__ import annotations

import pytest
from django.test import Client

from online import services
from online.models import ClickRelease
from tests.online.helpers import judged_pool, pool_log

pytestmark = pytest.mark.django_db

PAGES = [
    {"session": f"s{i}", "qid": "q1", "ranker": ranker, "docids": docs, "clicks": [1, 2] if i % 3 else [1]}
    for i in range(10)
    for ranker, docs in (("alpha", ["d001", "d002", "d003"]), ("beta", ["d002", "d001", "d004"]))
]


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_propensity_page_draws_the_curve_and_the_pairs_and_warns(manager, tmp_path) -> None:
    pool = judged_pool(grades={"d001": 3}, managers=[manager])
    log = pool_log(tmp_path, pool, PAGES)
    estimate = services.estimate_propensity(log=log, method="harvest")
    page = client_of(manager).get(f"/online/propensities/{estimate.pk}/").content.decode()
    assert "Examination propensity" in page and "<svg" in page
    assert "Interventions per position pair" in page
    assert "position 3: no document was ever shown there and at another position" in page


def test_the_labels_page_shows_the_gate_and_human_grades_and_releases(manager, tmp_path) -> None:
    pool = judged_pool(grades={"d001": 3, "d002": 1}, managers=[manager])
    log = pool_log(tmp_path, pool, PAGES)
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": [1, 0.5, 0.3]})
    label_set = services.derive_click_labels(
        log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.3:1,0.8:3"
    )
    client = client_of(manager)
    page = client.get(f"/online/labels/{label_set.pk}/").content.decode()
    assert label_set.agreement is not None
    assert "Cohen&#x27;s κ" in page or "Cohen's κ" in page
    assert f"Over {label_set.agreement['n']} judged pairs" in page
    response = client.post(f"/online/labels/{label_set.pk}/release/")
    assert response.status_code == 302
    release = ClickRelease.objects.get(label_set=label_set)
    said = client.get(response["Location"]).content.decode()  # named, not where the server keeps it
    assert f"click-label release {release.pk} written" in said and release.directory not in said
    assert f"release {release.pk} · " in said and all(name in said for name in release.files)
    # d003 and d004, never clicked at position 3 in 10 pages, are not seen enough to grade: two pairs left
    assert ClickRelease.objects.get(label_set=label_set).manifest["agreement_with_humans"]["n"] == 2

"""Click-derived relevance: the estimators' definitions, clipping, bootstrap, grades, the agreement gate
against the human judgements and the click-label release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from judgements import agreement
from judgements.models import Release
from online import relevance, services
from online.models import ClickLabel
from online.propensity import Counts
from pooling.errors import Refused
from tests.online.helpers import judged_pool, pool_log

pytestmark = pytest.mark.django_db

THETA5 = [1.0, 0.5, 0.3, 0.2, 0.16]


def test_ips_counts_a_click_at_position_5_as_6_25() -> None:
    counts = Counts.from_cells([0, 1], [1, 5], [1, 1], [1, 1])
    scores = relevance.score(counts, THETA5, "ips")
    assert scores.score.tolist() == pytest.approx([1.0, 6.25])


def test_ips_clipping_caps_the_weight_and_reports_the_share_it_touched() -> None:
    counts = Counts.from_cells([0, 1, 1], [1, 5, 4], [3, 1, 1], [1, 1, 0])
    scores = relevance.score(counts, THETA5, "ips", tau=4.0)
    assert scores.score[1] == pytest.approx(4.0 / 2)
    assert scores.clipped_share == pytest.approx(2 / 5)  # positions 4 (1/.2=5) and 5 clipped


def test_ratio_and_coec_follow_their_definitions() -> None:
    counts = Counts.from_cells([0, 0, 1], [1, 2, 2], [10, 10, 10], [5, 2, 4])
    ratio = relevance.score(counts, THETA5, "ratio")
    assert ratio.score[0] == pytest.approx(7 / (10 * 1.0 + 10 * 0.5))
    coec = relevance.score(counts, None, "coec")
    ctr1, ctr2 = 5 / 10, 6 / 20
    assert coec.score.tolist() == pytest.approx([7 / (10 * ctr1 + 10 * ctr2), 4 / (10 * ctr2)])


def test_grades_by_thresholds() -> None:
    grades = relevance.grade(np.array([0.05, 0.2, 0.5, 0.9]), [[0.2, 1], [0.5, 2], [0.8, 3]], 0)
    assert grades.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="not a grade of the rubric"):
        relevance.parse_thresholds("0.2:7", [0, 1, 2, 3])


def pages_for(pool_docs: dict[str, list[str]], clicks: dict[str, list[int]], repeat: int) -> list[dict]:
    out = []
    for i in range(repeat):
        for qid, docs in pool_docs.items():
            out.append(
                {
                    "session": f"s{i}-{qid}",
                    "qid": qid,
                    "ranker": "alpha",
                    "docids": docs,
                    "clicks": clicks[qid] if i % 2 == 0 else clicks[qid][:1],
                }
            )
    return out


def test_the_agreement_gate_is_the_house_kappa_on_the_same_pairs_and_goes_into_the_release(tmp_path) -> None:
    pool = judged_pool(grades={"d001": 3, "d003": 2, "d010": 1})
    docs = {"q1": ["d001", "d003", "d002", "d004"], "q2": ["d010", "d011", "d013"]}
    log = pool_log(tmp_path, pool, pages_for(docs, {"q1": [1, 2], "q2": [1]}, repeat=100))  # all seen enough
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": THETA5})
    with pytest.raises(Refused):
        services.release_click_labels(
            label_set=services.derive_click_labels(log=log, estimator="ips", propensity_estimate=estimate)
        )
    label_set = services.derive_click_labels(
        log=log,
        estimator="ips",
        propensity_estimate=estimate,
        thresholds="0.2:1,0.6:2,0.9:3",
        replicates=30,
    )
    gate = label_set.agreement
    assert gate is not None
    assert gate["n"] == 7
    labels = ClickLabel.objects.filter(label_set=label_set).select_related("topic", "document")
    human = {"d001": 3, "d003": 2, "d010": 1}
    a = [human.get(lab.document.docid, 0) for lab in labels]
    b = cast(list[int], [lab.grade for lab in labels])  # thresholds given: every label has a grade
    assert gate["kappa"] == pytest.approx(agreement.cohen_kappa(a, b, labels=[0, 1, 2, 3]))
    assert gate["alpha_ordinal"] is not None
    first = labels.get(topic__qid="q1", document__docid="d001")
    assert first.high is not None
    assert first.low is not None and first.low <= first.score <= first.high
    releases_before = Release.objects.count()
    release = services.release_click_labels(label_set=label_set)
    manifest = json.loads(
        (
            Path(release.manifest and __import__("django.conf").conf.settings.MEDIA_ROOT)
            / release.directory
            / "manifest.json"
        ).read_text()
    )
    assert manifest["agreement_with_humans"]["kappa"] == gate["kappa"]
    assert manifest["source"].startswith("clicks")
    assert Release.objects.count() == releases_before  # never a human release


def test_bootstrap_re_estimates_theta_and_its_interval_covers_the_truth(tmp_path) -> None:
    from online.simulate import gamma_from_grades, simulate

    rng = np.random.default_rng(5)
    grades = rng.integers(0, 5, (4, 6))
    rankings = [np.argsort(-grades, axis=1), np.argsort(rng.random(grades.shape), axis=1)]
    sim = simulate(rng, rankings=rankings, gamma=gamma_from_grades(grades), sessions=20000)

    def chunks():
        length = np.full(len(sim.query), 6, dtype=np.int32)
        yield {
            "topic": sim.query,
            "logger": sim.logger,
            "session": np.arange(len(sim.query), dtype=np.uint32),
            "length": length,
            "doc": sim.shown.ravel(),
            "click": sim.clicks.ravel(),
        }

    from online import propensity

    pairs, low, high, warnings = relevance.bootstrap(
        chunks,
        n_docs=6,
        n_loggers=int(sim.logger.max()) + 1,
        theta_of=lambda c: propensity.em(c).theta,
        estimator="ips",
        replicates=40,
    )
    truth = gamma_from_grades(grades).ravel()[pairs] * 0.68  # with θ_1 = 1, IPS estimates θ_1·γ
    covered = np.mean((low <= truth) & (truth <= high))
    assert covered >= 0.8 and not warnings
    assert (high - low).min() > 0


def test_it_refuses_an_estimator_without_propensities(tmp_path) -> None:
    pool = judged_pool(grades={})
    log = pool_log(tmp_path, pool, [{"qid": "q1", "docids": ["d001"], "clicks": [1]}])
    with pytest.raises(Refused, match="needs a propensity"):
        services.derive_click_labels(log=log, estimator="ips")
    with pytest.raises(Refused, match="outside"):
        services.estimate_propensity(log=log, method="given", params={"theta": [1, 1.2]})


@pytest.mark.parametrize(
    ("estimator", "thresholds", "pooled", "message"),
    [
        ("magic", "", True, "unknown estimator 'magic'"),
        ("ips", "", True, "the ips estimator needs a propensity estimate"),
        ("coec", "0.5:9", True, "not a grade of the rubric"),
        ("coec", "0.5:1", False, "thresholds map to a rubric's grades"),
    ],
)
def test_starting_the_job_refuses_what_the_derivation_refuses_with_the_same_words(
    tmp_path, estimator, thresholds, pooled, message
) -> None:
    from online import jobs
    from online.clicklogs import import_click_log
    from pooling.models import Job
    from tests.online.helpers import write_log

    pool = judged_pool(grades={})
    pages = [{"qid": "q1", "docids": ["d001"], "clicks": [1]}]
    log = (
        pool_log(tmp_path, pool, pages)
        if pooled
        else import_click_log(
            collection=pool.collection, name="no-pool", format="jsonl", paths=[write_log(tmp_path, pages)]
        )
    )
    with pytest.raises(Refused) as derived:
        services.derive_click_labels(log=log, estimator=estimator, thresholds=thresholds)
    with pytest.raises(Refused) as started:
        jobs.start_click_labels(
            log=log, estimator=estimator, propensity_estimate=None, options={"thresholds": thresholds}
        )
    assert message in str(derived.value) and str(started.value) == str(derived.value)
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()


def test_the_log_page_refuses_more_replicates_than_the_api_allows(client, manager, tmp_path) -> None:
    """The bound on bootstrap replicates is the derivation's own check: a page post over it goes back to
    the log with the reason and queues nothing (before, the page queued a job that then failed)."""
    from pooling.models import Job

    pool = judged_pool(grades={}, managers=[manager])
    pool.collection.managers.set([manager])
    log = pool_log(tmp_path, pool, [{"qid": "q1", "docids": ["d001"], "clicks": [1]}])
    client.force_login(manager)
    over = services.MAX_REPLICATES + 1
    answer = client.post(f"/online/logs/{log.pk}/labels/", {"estimator": "coec", "replicates": str(over)})
    assert answer.status_code == 400  # the log's page again, the refusal beside the field, as sent
    form = answer.content.decode().split('id="derive"')[1].split("</form>")[0]
    beside = form.split('name="replicates"')[1]
    assert f'value="{over}"' in beside[:40]
    assert f"replicates must be between 0 and {services.MAX_REPLICATES}" in beside
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()


def test_a_document_never_clicked_is_graded_only_once_seen_enough(tmp_path) -> None:
    # An audit found unclicked documents graded 0 with an interval of 0 to 0 after a handful of views
    # at low positions: 0 clicks say little when few examinations were expected.
    pool = judged_pool(grades={"d001": 3})
    docs = {"q1": ["d001", "d003", "d002", "d004"]}  # d002 at position 3 (θ 0.3), d004 at 4 (θ 0.2)
    for repeat, graded in ((5, False), (400, True)):
        log = pool_log(tmp_path, pool, pages_for(docs, {"q1": [1]}, repeat=repeat), name=f"seen-{repeat}")
        estimate = services.estimate_propensity(log=log, method="given", params={"theta": THETA5})
        label_set = services.derive_click_labels(
            log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.2:1,0.6:2", replicates=20
        )
        label = ClickLabel.objects.get(label_set=label_set, document__docid="d004")
        assert (label.clicks, label.score) == (0, 0.0)
        bound = relevance.unclicked_upper(np.array([repeat * 0.2]), 0.95)[0]  # Poisson: 3.69 / (n θ)
        assert label.high == pytest.approx(bound) and label.low == 0.0
        assert (label.grade is not None) is graded  # 0 only when the bound is under the first threshold
        assert (label.grade == 0) is graded

"""Which topics are judged has one home (`judgements.release_topics`), called by every form of the rule:
`metrics.split_judged` (the reports), `metrics.evaluate(skip_unjudged_topics=True)` (the evaluate
command, the online tracker), `resample` (the noise floor's variants) and the release's per-topic pass
(`release_files.QrelsFiles`). The agreed answers: a topic whose only lines are negative (-1: pending or
unrateable; any other negative grade) is one nobody judged, left out and named apart; a topic with judged
documents none of them relevant is judged (it counts, scoring 0)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from evaluation import metrics, noise_pool, services
from evaluation.resample import Items, Scorer
from judgements import release_topics, releases
from judgements.release_topics import judged_topics, topic_is_judged
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

#: q1 judged with a relevant document; q2 judged, nothing relevant; q3 only -1; q4 only another negative.
QRELS = {
    "q1": {"d1": 2, "d2": 0, "d3": -1},
    "q2": {"d4": 0, "d5": -1},
    "q3": {"d6": -1, "d7": -1},
    "q4": {"d8": -2},
}
RUN = {q: {d: 10.0 - i for i, d in enumerate(docs)} for q, docs in QRELS.items()}
JUDGED = ("q1", "q2")
NOT_JUDGED = ("q3", "q4")


def test_the_home_says_which_topics_are_judged():
    assert [topic_is_judged(docs.values()) for docs in QRELS.values()] == [True, True, False, False]
    assert not topic_is_judged([])
    topic = np.array([0, 0, 1, 2, 2, 3])
    grade = np.array([-1, 0, 3, -1, -1, -2])
    assert judged_topics(topic, grade, 5).tolist() == [True, True, False, False, False]  # 4: no line


def test_split_judged_agrees():
    split = metrics.split_judged(QRELS, topics=["q5"])
    assert split.judged == JUDGED and split.not_judged == (*NOT_JUDGED, "q5")


def test_evaluate_skipping_unjudged_topics_agrees():
    result = metrics.evaluate(QRELS, RUN, ["ndcg_cut_10"], skip_unjudged_topics=True, average="all")
    assert result.topics == JUDGED and result.unjudged_topics == NOT_JUDGED
    assert "q3, q4" in result.warnings[0]  # named apart
    assert result.topic_values("ndcg_cut_10")["q2"] == 0.0  # judged, nothing relevant: a 0 that counts


def test_resample_agrees():
    items = Items.of(QRELS)
    labels = items.labels(QRELS)
    assert items.topics == ("q1", "q2", "q3", "q4")
    assert items.judged_topics(labels).tolist() == [True, True, False, False]
    scores = Scorer({"run": RUN}, items, ["ndcg_cut_10"]).score(labels)[0, 0]
    assert scores[1] == 0.0 and [math.isnan(v) for v in scores] == [False, False, True, True]


@pytest.mark.django_db
def test_the_release_and_the_reports_agree(manager):
    """q1 judged relevant, q2 judged not relevant, q3 nobody judged (one item unrateable, one pending)."""
    collection = make_collection(topics=("q1", "q2", "q3"), managers=[manager])
    lists = {"q1": ["d001", "d002"], "q2": ["d003", "d004"], "q3": ["d005", "d006"]}
    run = make_run(collection=collection, name="alpha", lists=lists)
    alice = make_user("alice")
    pool = make_pool(collection=collection, runs=[run], name="three", raters=[alice], managers=[manager])
    judge(pool, alice, {("q1", "d001"): 2, ("q2", "d003"): 0, ("q3", "d005"): None})

    release = releases.create_release(pool=pool)
    root = Path(settings.MEDIA_ROOT) / release.directory
    in_qrels = {line.split()[0] for line in (root / "qrels.txt").read_text().splitlines()}
    in_unjudged = {line.split()[0] for line in (root / "qrels.unjudged.txt").read_text().splitlines()}
    assert (in_qrels, in_unjudged) == ({"q1", "q2"}, {"q3"})
    assert (release.manifest["topics"]["judged"], release.manifest["topics"]["not_judged"]) == (2, 1)

    report = services.pool_report(pool=pool)
    assert (report["judged_topics"], report["not_judged_topics"]) == (2, ["q3"])
    floor = noise_pool.pool_noise_floor(pool=pool, topic_samples=10, label_samples=2, splits=2)
    assert (floor["judged_topics"], floor["not_judged_topics"]) == (2, ["q3"])


@pytest.mark.django_db
def test_every_entry_point_follows_the_one_home(monkeypatch, manager):
    """Were the rule changed in its home (here: a grade must be 1 or more to count as judged), every form
    would follow: none keeps a copy of its own."""
    monkeypatch.setattr(release_topics, "LOWEST_JUDGED_GRADE", 1)
    assert metrics.split_judged(QRELS).judged == ("q1",)
    result = metrics.evaluate(QRELS, RUN, ["P_10"], skip_unjudged_topics=True, average="all")
    assert result.topics == ("q1",)
    items = Items.of(QRELS)
    assert items.judged_topics(items.labels(QRELS)).tolist() == [True, False, False, False]
    scores = Scorer({"run": RUN}, items, ["P_10"]).score(items.labels(QRELS))[0, 0]
    assert [math.isnan(v) for v in scores] == [False, True, True, True]

    collection = make_collection(topics=("q1", "q2"), managers=[manager])
    run = make_run(collection=collection, name="alpha", lists={"q1": ["d001"], "q2": ["d003"]})
    alice = make_user("alice")
    pool = make_pool(collection=collection, runs=[run], name="two", raters=[alice], managers=[manager])
    judge(pool, alice, {("q1", "d001"): 2, ("q2", "d003"): 0})
    release = releases.create_release(pool=pool)
    assert (release.manifest["topics"]["judged"], release.manifest["topics"]["not_judged"]) == (1, 1)

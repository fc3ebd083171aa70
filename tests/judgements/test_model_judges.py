"""Model judges in a pool: labels of their own kind, never counted as people's, and the gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluation.judge_gate import MIN_ITEMS, measure_gate
from judgements import stats
from judgements.adaptive_selection import consensus_outcomes
from judgements.errors import JudgingError
from judgements.judges import create_judge, human_grades, model_grades, run_judge, start_judge_run
from judgements.models import Judge, Judgement, Judging
from judgements.queries import agreement_records, pool_agreement
from pooling.models import JUDGED, NEEDS_JUDGEMENT, Job, Pool, PoolItem
from tests.factories import make_user
from tests.judgements.judge_factories import copy_judge, make_judged_pool, random_judge


@pytest.fixture
def pool(db: None, rater: Any, second_rater: Any, manager: Any) -> Pool:
    return make_judged_pool(raters=[rater, second_rater], managers=[manager])


def test_it_admits_a_judge_that_copies_the_human_labels_with_kappa_one(pool: Pool, tmp_path: Path) -> None:
    judge = copy_judge(pool, tmp_path)
    counts = run_judge(judge=judge)
    assert counts["graded"] == 40 and counts["failed"] == 0
    gate = measure_gate(judge=judge)
    judge.refresh_from_db()
    assert gate["items"] == 40 and gate["kappa"] == 1.0 and gate["kappa_quadratic"] == 1.0
    assert gate["alpha_ordinal"] == 1.0 and gate["ranking"]["kendall_tau"] == 1.0
    assert 0.5 < gate["human_kappa"] < 1.0 and gate["threshold"] == gate["human_kappa"]
    assert judge.admitted and gate["reason"].startswith(
        "Admitted: its κ against the human labels is 1.000 on 40"
    )
    assert sum(map(sum, gate["confusion"])) == 40


def test_it_refuses_a_judge_answering_at_random(pool: Pool) -> None:
    judge = random_judge(pool)
    run_judge(judge=judge)
    gate = measure_gate(judge=judge)
    judge.refresh_from_db()
    assert not judge.admitted and gate["kappa"] < 0.3
    assert gate["reason"].startswith("Refused: its κ against the human labels is")
    assert "below the threshold" in gate["reason"] and "the raters' own agreement" in gate["reason"]


def test_it_never_counts_model_labels_as_peoples(pool: Pool, tmp_path: Path) -> None:
    items = PoolItem.objects.filter(pool=pool)
    before = {
        "judgements": Judgement.objects.filter(item__pool=pool).count(),
        "counters": sorted(items.values_list("id", "num_judgements")),
        "records": agreement_records(pool=pool),
        "outcomes": consensus_outcomes(pool=pool, items=items),
        "humans": human_grades(pool=pool),
        "raters": [s.as_dict() for s in stats.rater_statistics(pool=pool)],
        "agreement": pool_agreement(pool=pool, n_bootstrap=10),
    }
    for judge in (copy_judge(pool, tmp_path), random_judge(pool)):  # the dice would move any consensus
        run_judge(judge=judge)
    assert Judgement.all_kinds.filter(item__pool=pool, kind="model").count() == 80
    after = {
        "judgements": Judgement.objects.filter(item__pool=pool).count(),
        "counters": sorted(items.values_list("id", "num_judgements")),
        "records": agreement_records(pool=pool),
        "outcomes": consensus_outcomes(pool=pool, items=items),
        "humans": human_grades(pool=pool),
        "raters": [s.as_dict() for s in stats.rater_statistics(pool=pool)],
        "agreement": pool_agreement(pool=pool, n_bootstrap=10),
    }
    assert after == before


def test_it_leaves_an_item_judged_only_by_a_model_unjudged_by_people(
    db: None, rater: Any, manager: Any, tmp_path: Path
) -> None:
    pool = make_judged_pool(raters=[rater], managers=[manager])  # one rater: every item still needs one more
    judge = copy_judge(pool, tmp_path)
    run_judge(judge=judge)
    item = PoolItem.objects.filter(pool=pool).first()
    assert item is not None and model_grades(judge=judge)[item.pk] >= 0
    assert not PoolItem.objects.filter(JUDGED, pk=item.pk).exists()
    assert PoolItem.objects.filter(NEEDS_JUDGEMENT, pk=item.pk).exists()
    assert item.judgements.count() == 1  # the person's; the model's label is not among them


def test_it_trains_a_learned_judge_on_the_people_and_never_grades_its_own_training_items(pool: Pool) -> None:
    judge = create_judge(pool=pool, name="learner", method="learned", seed=3, folds=4)
    counts = run_judge(judge=judge)
    assert counts == {"items": 40, "trained_on": 40, "folds": 4, "graded": 40}
    gate = measure_gate(judge=judge)
    assert gate["items"] == 40 and gate["kappa"] is not None
    assert set(gate["ranking"]["runs"]) == {"alpha", "beta", "gamma"}
    again = create_judge(pool=pool, name="learner-2", method="learned", seed=3, folds=4)
    run_judge(judge=again)
    assert model_grades(judge=again) == model_grades(judge=judge)  # seeded: reproducible


def test_it_takes_the_pools_own_threshold_when_set(pool: Pool, tmp_path: Path) -> None:
    Judging.objects.filter(pool=pool).update(gate_kappa=0.05)
    judge = random_judge(pool)
    run_judge(judge=judge)
    gate = measure_gate(judge=judge)
    assert gate["threshold"] == 0.05 and gate["threshold_source"] == "pool"
    assert ("the pool's gate κ" in gate["reason"]) and (gate["admitted"] == (gate["kappa"] >= 0.05))


def test_it_refuses_a_judge_measured_on_too_few_items(pool: Pool, tmp_path: Path) -> None:
    judge = copy_judge(pool, tmp_path)
    run_judge(judge=judge)
    keep = list(Judgement.all_kinds.filter(rater=judge.user_id).values_list("pk", flat=True)[: MIN_ITEMS - 1])
    Judgement.all_kinds.filter(rater=judge.user_id).exclude(pk__in=keep).delete()
    gate = measure_gate(judge=judge)
    assert not gate["admitted"] and gate["reason"].startswith(f"Refused: only {MIN_ITEMS - 1} items")


def test_it_runs_a_judge_as_a_job_and_clears_the_verdict_when_labels_change(
    pool: Pool, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    judge = copy_judge(pool, tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        job = start_judge_run(judge=judge)
    job.refresh_from_db()
    judge.refresh_from_db()
    assert job.status == Job.Status.DONE and job.kind == "judge" and job.counts["graded"] == 40
    assert job.result["admitted"] is True and judge.admitted
    run_judge(judge=judge)
    judge.refresh_from_db()
    assert not judge.admitted and judge.gate == {}


def test_it_refuses_bad_judges_and_stores_nothing(pool: Pool) -> None:
    for kwargs, field in (
        ({"name": "bad name!", "method": "learned"}, "name"),
        ({"name": "x", "method": "oracle"}, "method"),
        ({"name": "x", "method": "external"}, "program"),
        ({"name": "x", "method": "external", "program": "nope"}, "program"),
        ({"name": "x", "method": "learned", "folds": 1}, "folds"),
        ({"name": "x", "method": "learned", "seed": -1}, "seed"),  # was stored; running it then crashed
        ({"name": "x", "method": "learned", "seed": 2**31}, "seed"),
        ({"name": "threshold", "method": "learned"}, "name"),  # a route of the judges API
    ):
        with pytest.raises(JudgingError, match=f"^{field}"):
            create_judge(pool=pool, **kwargs)
    assert not Judge.objects.exists()
    make_user("judge-1-x")  # an account name in the way is no reason for a half-made judge
    create_judge(pool=pool, name="ok", method="learned")
    with pytest.raises(JudgingError, match="already has a judge"):
        create_judge(pool=pool, name="ok", method="learned")


def test_every_route_beside_a_judges_name_is_reserved() -> None:
    from evaluation.judge_api import JudgeViewSet
    from judgements.judges import RESERVED_NAMES

    beside_names = {a.url_path for a in JudgeViewSet.get_extra_actions() if not a.detail}
    assert beside_names and beside_names <= RESERVED_NAMES


def test_it_names_a_judges_account_around_an_account_that_has_its_name(pool: Pool) -> None:
    """A person (or a crowd worker) named like the judge's account: the judge gets the next free name and
    the person keeps theirs; before, the duplicate username was an IntegrityError (a 500 from the API)."""
    person = make_user(f"judge-{pool.pk}-learner")
    make_user(f"judge-{pool.pk}-learner-2")
    judge = create_judge(pool=pool, name="learner", method="learned")
    assert judge.user.username == f"judge-{pool.pk}-learner-3"
    assert judge.user_id != person.pk and not judge.user.is_active

"""Judging services: leases, skips, J judgements per item, gold, revisions, rubric versions, adjudication,
facets — and the defects found in them (each now fixed)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judgements import adjudication, errors, imports, labels, lease_ends, membership, rubrics
from judgements.models import Adjudication, Assignment, Judgement, JudgementRevision, Judging, Rubric
from pooling.models import Pool, PoolItem
from tests.factories import lease_for, make_pool, make_user, submit_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


FACETS = [
    {"name": "freshness", "label": "Freshness", "choices": ["fresh", "stale"], "required": True},
    {"name": "authority", "label": "Authority", "choices": ["high", "low"]},
]


def judge_all(pool, rater, grade=1) -> list[int]:
    """Let `rater` judge everything they are offered; the item ids, in order."""
    seen = []
    while (assignment := lease_for(pool=pool, rater=rater)) is not None:
        seen.append(assignment.item_id)
        submit_for(assignment=assignment, grade=grade)
    return seen


def item_of(assignment: Assignment) -> PoolItem:
    return PoolItem.objects.get(pk=assignment.item_id)


# ---------------------------------------------------------------------------------------------- leases


def test_it_expires_and_sweeps_leases_and_gives_the_item_to_another_rater(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater])
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    lease = lease_for(pool=pool, rater=rater)
    assert item_of(lease).active_leases == 1
    assert lease_for(pool=pool, rater=second_rater) is None  # the only item is taken

    assert lease_ends.sweep_expired_leases(now=lease.expires_at - timedelta(seconds=1)) == 0
    assert lease_ends.sweep_expired_leases(now=lease.expires_at + timedelta(seconds=1)) == 1
    lease.refresh_from_db()
    assert lease.state == Assignment.State.EXPIRED
    assert item_of(lease).active_leases == 0
    other = lease_for(pool=pool, rater=second_rater)
    assert other is not None and other.item_id == lease.item_id


def test_it_leases_for_the_pools_lease_minutes(rater):
    pool = make_pool(raters=[rater])
    membership.setup_judging(pool=pool, lease_minutes=3)
    lease = lease_for(pool=pool, rater=rater)
    assert lease.expires_at - lease.leased_at == timedelta(minutes=3)


def test_it_resumes_the_live_lease_instead_of_leasing_another(rater):
    pool = make_pool(raters=[rater])
    first = lease_for(pool=pool, rater=rater)
    again = lease_for(pool=pool, rater=rater)
    assert again.pk == first.pk
    assert Assignment.objects.filter(rater=rater, state=Assignment.State.ACTIVE).count() == 1


def test_it_does_not_resume_an_expired_lease(rater):
    pool = make_pool(raters=[rater])
    first = lease_for(pool=pool, rater=rater)
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    second = lease_for(pool=pool, rater=rater)
    assert second.pk != first.pk and second.item_id != first.item_id


def test_it_releases_the_item_on_skip_and_never_offers_it_again_to_that_rater(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater])
    lease = lease_for(pool=pool, rater=rater)
    lease_ends.skip_item(assignment=lease)
    lease.refresh_from_db()
    assert lease.state == Assignment.State.SKIPPED
    assert item_of(lease).active_leases == 0
    offered = judge_all(pool, rater)
    assert lease.item_id not in offered
    assert len(offered) == PoolItem.objects.filter(pool=pool).count() - 1
    assert lease_for(pool=pool, rater=second_rater).item_id == lease.item_id


def test_it_refuses_to_skip_twice(rater):
    pool = make_pool(raters=[rater])
    lease = lease_for(pool=pool, rater=rater)
    lease_ends.skip_item(assignment=lease)
    with pytest.raises(errors.JudgingError, match="no longer leased"):
        lease_ends.skip_item(assignment=lease)


def test_it_never_gives_a_rater_the_same_item_twice(rater):
    pool = make_pool(raters=[rater], judgements_per_item=3)
    offered = judge_all(pool, rater)
    assert len(offered) == len(set(offered)) == PoolItem.objects.filter(pool=pool).count()
    assert lease_for(pool=pool, rater=rater) is None


def test_it_gives_every_item_j_judgements_from_j_different_raters(rater, second_rater):
    third = make_user("rater3")
    pool = make_pool(raters=[rater, second_rater, third], judgements_per_item=2)
    items = PoolItem.objects.filter(pool=pool).count()
    counts = [len(judge_all(pool, user)) for user in (rater, second_rater, third)]
    assert counts == [items, items, 0]
    for item in PoolItem.objects.filter(pool=pool):
        raters = list(Judgement.objects.filter(item=item).values_list("rater_id", flat=True))
        assert len(raters) == len(set(raters)) == 2
        assert item.num_judgements == 2 and item.active_leases == 0


def test_it_never_leases_an_item_beyond_what_it_still_needs(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater])
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    assert lease_for(pool=pool, rater=rater) is not None
    assert lease_for(pool=pool, rater=second_rater) is None


def test_it_refuses_a_lease_to_someone_not_a_rater_of_the_pool(rater, outsider):
    pool = make_pool(raters=[rater])
    with pytest.raises(errors.JudgingError, match="not a rater"):
        lease_for(pool=pool, rater=outsider)


def test_it_releases_the_leases_of_a_removed_rater_and_keeps_their_judgements(rater):
    pool = make_pool(raters=[rater])
    done = lease_for(pool=pool, rater=rater)
    submit_for(assignment=done, grade=2)
    live = lease_for(pool=pool, rater=rater)
    membership.remove_rater(pool=pool, rater=rater)
    live.refresh_from_db()
    assert live.state == Assignment.State.EXPIRED
    assert item_of(live).active_leases == 0
    assert Judgement.objects.filter(rater=rater).count() == 1
    assert not Judging.objects.filter(pool=pool, raters=rater).exists()


# ------------------------------------------------------------------------------- expired leases honoured


def test_it_honours_an_expired_lease_when_the_item_still_has_room(rater):
    pool = make_pool(raters=[rater])
    lease = lease_for(pool=pool, rater=rater)
    lease_ends.sweep_expired_leases(now=lease.expires_at + timedelta(minutes=1))
    judgement = submit_for(assignment=lease, grade=2)
    assert judgement.grade == 2
    item = item_of(lease)
    assert (item.num_judgements, item.active_leases) == (1, 0)


def test_it_refuses_an_expired_lease_when_the_item_went_to_another_rater(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater])
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    lease = lease_for(pool=pool, rater=rater)
    lease_ends.sweep_expired_leases(now=lease.expires_at + timedelta(minutes=1))
    taken = lease_for(pool=pool, rater=second_rater)
    assert taken.item_id == lease.item_id
    with pytest.raises(errors.JudgingError, match="went to another rater"):
        submit_for(assignment=lease, grade=2)
    submit_for(assignment=taken, grade=1)
    with pytest.raises(errors.JudgingError, match="went to another rater"):
        submit_for(assignment=lease, grade=2)
    assert item_of(lease).num_judgements == 1


def test_it_refuses_a_second_submit_and_a_submit_after_skip(rater):
    pool = make_pool(raters=[rater])
    lease = lease_for(pool=pool, rater=rater)
    submit_for(assignment=lease, grade=1)
    with pytest.raises(errors.JudgingError, match="judged this item already"):
        submit_for(assignment=lease, grade=2)
    skipped = lease_for(pool=pool, rater=rater)
    lease_ends.skip_item(assignment=skipped)
    with pytest.raises(errors.JudgingError, match="skipped"):
        submit_for(assignment=skipped, grade=2)


# ------------------------------------------------------------------------------------------------ gold


def test_it_serves_gold_items_to_every_rater(rater, second_rater, manager):
    third = make_user("rater3")
    pool = make_pool(raters=[rater, second_rater, third])
    gold_item = PoolItem.objects.filter(pool=pool).order_by("id")[3]
    adjudication.set_gold(item=gold_item, grade=2, by=manager)
    items = PoolItem.objects.filter(pool=pool).count()
    first = judge_all(pool, rater)
    assert gold_item.pk in first and len(first) == items
    assert judge_all(pool, second_rater) == [gold_item.pk]
    assert judge_all(pool, third) == [gold_item.pk]
    assert Judgement.objects.filter(item=gold_item).count() == 3


def test_it_refuses_a_gold_grade_off_the_rubric_and_removes_gold(manager):
    pool = make_pool()
    item = PoolItem.objects.filter(pool=pool).first()
    with pytest.raises(errors.JudgingError, match="not on the rubric"):
        adjudication.set_gold(item=item, grade=7, by=manager)
    adjudication.set_gold(item=item, grade=3, by=manager)
    assert PoolItem.objects.get(pk=item.pk).gold
    adjudication.remove_gold(item=item)
    assert not PoolItem.objects.get(pk=item.pk).gold
    assert not hasattr(PoolItem.objects.get(pk=item.pk), "gold_label")


# ------------------------------------------------------------------------------------------- revisions


def test_it_keeps_every_revision_with_who_when_old_and_new(rater, manager):
    pool = make_pool(raters=[rater])
    judgement = submit_for(assignment=lease_for(pool=pool, rater=rater), grade=1, note="first look")
    before = timezone.now()
    labels.revise_judgement(judgement=judgement, by=rater, grade=3, note="read it again")
    labels.revise_judgement(judgement=judgement, by=manager, grade=None, unrateable=True)
    revisions = list(JudgementRevision.objects.filter(judgement=judgement).order_by("changed_at", "id"))
    assert [(r.changed_by, r.old_grade, r.new_grade, r.new_unrateable) for r in revisions] == [
        (rater, 1, 3, False),
        (manager, 3, None, True),
    ]
    assert [(r.old_note, r.new_note) for r in revisions] == [("first look", "read it again")] * 1 + [
        ("read it again", "read it again")
    ]
    assert all(r.changed_at >= before for r in revisions)
    judgement.refresh_from_db()
    assert (judgement.grade, judgement.unrateable) == (None, True)
    assert judgement.updated_at >= before


def test_it_records_no_revision_when_nothing_changes(rater):
    pool = make_pool(raters=[rater])
    judgement = submit_for(assignment=lease_for(pool=pool, rater=rater), grade=2)
    labels.revise_judgement(judgement=judgement, by=rater, grade=2)
    assert not JudgementRevision.objects.exists()


# --------------------------------------------------------------------------------------------- rubrics


def test_it_makes_the_default_rubric_with_the_four_grade_scale():
    rubric = rubrics.default_rubric()
    assert list(rubric.grades.values_list("value", "label", "key")) == [
        (3, "Perfect", "3"), (2, "Good", "2"), (1, "Marginal", "1"), (0, "Not relevant", "0"),
    ]  # fmt: skip
    assert rubric.allow_unrateable and rubric.unrateable_key == "x"
    assert rubrics.default_rubric().pk == rubric.pk


def test_it_edits_an_unjudged_rubric_in_place():
    rubric = rubrics.create_rubric(name="r")
    grades = [{"value": 1, "label": "yes", "key": "y"}, {"value": 0, "label": "no", "key": "0"}]
    same = rubrics.update_rubric(rubric=rubric, grades=grades)
    assert same.pk == rubric.pk and same.version == 1
    assert sorted(same.labels) == [0, 1]
    assert Rubric.objects.filter(name="r").count() == 1


def test_it_versions_a_judged_rubric_instead_of_editing_it(rater):
    pool = make_pool(raters=[rater])
    rubric = Judging.objects.get(pool=pool).rubric
    submit_for(assignment=lease_for(pool=pool, rater=rater), grade=3)
    new = rubrics.update_rubric(rubric=rubric, facets=FACETS, description="with facets")
    assert new.pk != rubric.pk and new.name == rubric.name and new.version == rubric.version + 1
    assert list(new.facets.values_list("name", flat=True)) == ["freshness", "authority"]
    assert not rubric.facets.exists() and rubric.description != "with facets"
    assert new.labels == rubric.labels
    assert Judging.objects.get(pool=pool).rubric_id == rubric.pk  # moved on purpose only


def test_it_refuses_bad_grade_scales():
    with pytest.raises(errors.JudgingError, match="distinct"):
        rubrics.create_rubric(name="r", grades=[{"value": 1, "label": "a", "key": "a"},
                                                 {"value": 1, "label": "b", "key": "b"}])  # fmt: skip
    with pytest.raises(errors.JudgingError, match="unrateable key"):
        rubrics.create_rubric(name="r", grades=[{"value": 1, "label": "a", "key": "x"}])
    with pytest.raises(errors.JudgingError, match="reserved"):
        rubrics.create_rubric(name="r", grades=[{"value": 1, "label": "a", "key": "s"}])
    assert not Rubric.objects.filter(name="r").exists()


# ---------------------------------------------------------------------------------------------- facets


def facet_pool(rater):
    pool = make_pool(raters=[rater])
    membership.setup_judging(pool=pool, rubric=rubrics.create_rubric(name="faceted", facets=FACETS))
    return pool


@pytest.mark.parametrize(
    ("facets", "message"),
    [
        ({}, "'Freshness' is required"),
        ({"freshness": "old"}, "'old' is not a choice of facet 'Freshness'"),
        ({"freshness": "fresh", "colour": "red"}, "unknown facets: colour"),
        ({"freshness": "fresh", "authority": "medium"}, "not a choice of facet 'Authority'"),
    ],
)
def test_it_validates_facets(rater, facets, message):
    pool = facet_pool(rater)
    lease = lease_for(pool=pool, rater=rater)
    with pytest.raises(errors.JudgingError, match=message):
        submit_for(assignment=lease, grade=2, facets=facets)
    assert not Judgement.objects.exists()
    lease.refresh_from_db()
    assert lease.state == Assignment.State.ACTIVE


def test_it_stores_valid_facets_and_drops_empty_optional_ones(rater):
    pool = facet_pool(rater)
    judgement = submit_for(
        assignment=lease_for(pool=pool, rater=rater), grade=2,
        facets={"freshness": "stale", "authority": ""},
    )  # fmt: skip
    assert judgement.facets == {"freshness": "stale"}


def test_it_does_not_require_facets_of_an_unrateable_judgement(rater):
    pool = facet_pool(rater)
    judgement = submit_for(assignment=lease_for(pool=pool, rater=rater), grade=None, unrateable=True)
    assert judgement.unrateable and judgement.grade is None


@pytest.mark.parametrize(
    ("grade", "unrateable", "message"),
    [(None, False, "choose a grade"), (5, False, "not on the rubric"), (2, True, "has no grade")],
)
def test_it_validates_the_grade(rater, grade, unrateable, message):
    pool = make_pool(raters=[rater])
    with pytest.raises(errors.JudgingError, match=message):
        submit_for(assignment=lease_for(pool=pool, rater=rater), grade=grade, unrateable=unrateable)


# ---------------------------------------------------------------------------------------- adjudication


def two_opinions(pool, first, second, grades) -> list[PoolItem]:
    """`first` then `second` judge the next item with each pair of `grades` (None = unrateable)."""
    items = []
    for a, b in grades:
        lease_a = lease_for(pool=pool, rater=first)
        assert lease_a is not None
        submit_for(assignment=lease_a, grade=a, unrateable=a is None, note=f"{first} says {a}")
        lease_b = lease_for(pool=pool, rater=second)
        assert lease_b is not None
        assert lease_b.item_id == lease_a.item_id
        submit_for(assignment=lease_b, grade=b, unrateable=b is None)
        items.append(item_of(lease_a))
    return items


def test_it_queues_items_whose_grades_differ_by_the_gap_default_two(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater], judgements_per_item=2)
    assert Judging.objects.get(pool=pool).adjudication_gap == 2
    far, near, same, mixed = two_opinions(pool, rater, second_rater, [(3, 1), (2, 1), (0, 0), (2, None)])
    queue = list(adjudication.queue_rows(pool=pool))
    assert [row["item_id"] for row in queue] == [far.pk, mixed.pk]
    assert queue[0]["spread"] == 2 and queue[1]["unrateable_votes"] == 1
    assert [row["item_id"] for row in list(adjudication.queue_rows(pool=pool, gap=1))] == [
        far.pk,
        near.pk,
        mixed.pk,
    ]
    assert same.pk in [row["item_id"] for row in list(adjudication.queue_rows(pool=pool, gap=0))]


def test_it_follows_the_pools_gap_setting(rater, second_rater):
    pool = make_pool(raters=[rater, second_rater], judgements_per_item=2)
    far, near = two_opinions(pool, rater, second_rater, [(3, 0), (3, 1)])
    membership.setup_judging(pool=pool, adjudication_gap=3)
    pool = Pool.objects.get(pk=pool.pk)  # `pool.judging` was cached by make_pool
    assert [row["item_id"] for row in list(adjudication.queue_rows(pool=pool))] == [far.pk]


def test_it_records_the_adjudication_and_takes_the_item_off_the_queue(rater, second_rater, manager):
    pool = make_pool(raters=[rater, second_rater], judgements_per_item=2)
    (far,) = two_opinions(pool, rater, second_rater, [(3, 0)])
    decision = adjudication.adjudicate(item=far, adjudicator=manager, grade=2, note="  partly relevant ")
    assert Adjudication.objects.get(item=far) == decision
    assert (decision.grade, decision.unrateable, decision.note, decision.adjudicator) == (
        2, False, "partly relevant", manager,
    )  # fmt: skip
    assert list(adjudication.queue_rows(pool=pool)) == []
    again = adjudication.adjudicate(item=far, adjudicator=manager, grade=None, unrateable=True)
    assert Adjudication.objects.filter(item=far).count() == 1 and again.unrateable and again.grade is None
    with pytest.raises(errors.JudgingError):
        adjudication.adjudicate(item=far, adjudicator=manager, grade=9)


# -------------------------------------------------------------------------------------------- defects


def test_it_keeps_the_adjudication_gap_when_raters_are_added(rater, second_rater):
    pool = make_pool(raters=[rater])
    membership.setup_judging(pool=pool, adjudication_gap=3)
    membership.setup_judging(pool=pool, raters=[second_rater])
    assert Judging.objects.get(pool=pool).adjudication_gap == 3


def test_it_adjudicates_on_a_rubric_with_a_required_facet(rater, manager):
    pool = facet_pool(rater)
    item = PoolItem.objects.filter(pool=pool).first()
    decision = adjudication.adjudicate(item=item, adjudicator=manager, grade=2)
    assert decision.grade == 2


def test_it_refuses_a_judgement_from_a_removed_rater(rater):
    pool = make_pool(raters=[rater])
    lease = lease_for(pool=pool, rater=rater)
    membership.remove_rater(pool=pool, rater=rater)
    with pytest.raises(errors.JudgingError):
        submit_for(assignment=lease, grade=2)


def test_it_keeps_the_facets_when_a_revision_does_not_name_them(rater):
    pool = make_pool(raters=[rater])
    membership.setup_judging(pool=pool, rubric=rubrics.create_rubric(name="optional", facets=FACETS[1:]))
    judgement = submit_for(
        assignment=lease_for(pool=pool, rater=rater), grade=2, facets={"authority": "high"}
    )
    revised = labels.revise_judgement(judgement=judgement, by=rater, grade=3)
    assert revised.facets == {"authority": "high"}


def test_it_refuses_cleanly_a_lease_on_an_item_the_rater_has_an_imported_label_for(rater, tmp_path):
    pool = make_pool(raters=[rater])
    lease = lease_for(pool=pool, rater=rater)
    item = PoolItem.objects.select_related("topic", "document").get(pk=lease.item_id)
    qrels = tmp_path / "earlier.qrels"
    qrels.write_text(f"{item.topic.qid} 0 {item.document.docid} 2\n")
    imports.import_judgements(pool=pool, path=qrels, rater=rater)
    with pytest.raises(errors.JudgingError):
        submit_for(assignment=lease, grade=1)
    item.refresh_from_db()
    assert item.active_leases == 0 and item.num_judgements == 1

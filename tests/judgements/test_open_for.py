"""`PoolItem.objects.open_for(rater)`: the one rule "this item needs one more judgement, from this rater",
and every reader of it (the lease, the judging page's progress, the API's progress) giving its answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judgements import lease_ends, leasing, pool_progress
from judgements.models import Assignment, Judging
from judgements.progress import progress
from pooling.models import PoolItem
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def test_it_is_the_items_the_rater_may_still_be_given():
    rater, other = make_user("rater"), make_user("other")
    pool = make_pool(raters=[rater, other], name="open", judgements_per_item=1)
    items = list(PoolItem.objects.filter(pool=pool).order_by("pk"))
    held, skipped, judged, expired, full, gold, unselected, *rest = items
    now = timezone.now()

    def assign(item, who, state):
        Assignment.objects.create(item=item, pool=pool, rater=who, state=state, leased_at=now,
                                  expires_at=now + timedelta(minutes=10))  # fmt: skip

    assign(held, rater, Assignment.State.ACTIVE)
    assign(skipped, rater, Assignment.State.SKIPPED)
    PoolItem.objects.filter(pk=held.pk).update(active_leases=1)
    assign(judged, rater, Assignment.State.DONE)
    judged.judgements.create(rater=rater, rubric=pool.judging.rubric, grade=1)
    PoolItem.objects.filter(pk=judged.pk).update(num_judgements=1)
    assign(expired, rater, Assignment.State.EXPIRED)  # a lapsed lease of theirs: open again
    PoolItem.objects.filter(pk__in=[full.pk, gold.pk]).update(num_judgements=1)
    PoolItem.objects.filter(pk=gold.pk).update(gold=True)  # gold: served to every rater, full or not
    PoolItem.objects.filter(pk=unselected.pk).update(selected=False)

    open_items = set(PoolItem.objects.filter(pool=pool).open_for(rater).values_list("pk", flat=True))
    assert open_items == {expired.pk, gold.pk, *(item.pk for item in rest)}
    # for the other rater the same items are full, held or judged by someone else, or open
    theirs = set(PoolItem.objects.filter(pool=pool).open_for(other).values_list("pk", flat=True))
    assert theirs == {expired.pk, skipped.pk, gold.pk, *(item.pk for item in rest)}

    # every reader counts the same items
    judging = Judging.objects.get(pool=pool)
    assert progress(judging=judging, user=rater, topic_id=None)["open"] == len(open_items)
    left = pool_progress.pool_progress(judging=judging, user=rater).left_for_me
    assert left == len(open_items) + 1  # + live one

    # and the lease gives exactly them, then nothing: the held one first (a rater resumes), then the rest
    Assignment.objects.filter(rater=rater, item=held).update(expires_at=now - timedelta(minutes=1))
    lease_ends.sweep_expired_leases()
    leased = set()
    while (found := leasing.lease_next(pool=pool, rater=rater)) is not None:
        assignment = Assignment.objects.get(pk=found.assignment)
        leased.add(assignment.item_id)
        lease_ends.skip_item(assignment=assignment)
    assert leased == open_items | {held.pk}
    assert not PoolItem.objects.filter(pool=pool).open_for(rater).exists()

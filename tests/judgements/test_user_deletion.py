"""Deleting a user account keeps the judging counters true: a user who has judged (or revised a
judgement) is never deleted, and the admin says to deactivate the account instead, nothing changed; a
user holding a live lease is deleted with the lease given back (`lease_ends.end_lease`), so the item is
leasable again with the right `active_leases` and, on PostgreSQL, the right progress tallies."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db.models import ProtectedError
from django.test import Client

from judgements import adjudication, labels, leasing, submission, user_admin
from judgements.models import Assignment, Judgement, JudgementRevision
from pooling.models import PoolItem
from tests.factories import make_pool, make_user
from tests.judgements.test_progress_tally import same_progress

pytestmark = pytest.mark.django_db


def admin_client(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def delete_one(client: Client, user: User):
    return client.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})


def delete_selected(client: Client, users: list[User]):
    return client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [u.pk for u in users], "post": "yes"},
    )


def judge_one(pool, rater) -> None:
    lease = leasing.lease_next(pool=pool, rater=rater)
    assert lease is not None
    submission.submit_label(assignment=lease.assignment, rater=rater, grade=2)


def counters(pool) -> list[tuple[int, int, int, bool]]:
    return list(
        PoolItem.objects.filter(pool=pool)
        .order_by("pk")
        .values_list("pk", "num_judgements", "active_leases", "leasable")
    )


def test_it_refuses_to_delete_a_rater_who_has_judged_and_changes_nothing(admin_user):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(raters=[alice, bob], name="evidence")
    judge_one(pool, alice)
    leasing.lease_next(pool=pool, rater=alice)  # and a live lease
    before = (counters(pool), Judgement.objects.count(), Assignment.objects.count())
    client = admin_client(admin_user)

    page = client.get(f"/admin/auth/user/{alice.pk}/delete/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cannot be deleted: alice has judged (1 judgement)" in html and "Deactivate it instead" in html
    assert "protected related objects" in html and "/admin/judgements/judgement/" in html
    assert "permission to delete" not in html
    for refused in (delete_one(client, alice), delete_selected(client, [alice, bob])):
        assert refused.status_code == 200 and "Deactivate it instead" in refused.content.decode()
    assert User.objects.filter(username__in=["alice", "bob"]).count() == 2
    assert (counters(pool), Judgement.objects.count(), Assignment.objects.count()) == before
    with pytest.raises(ProtectedError):
        alice.delete()  # the shell's path too


def test_it_refuses_to_delete_a_user_who_revised_a_judgement(admin_user, manager):
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="revised")
    judge_one(pool, alice)
    labels.revise_judgement(judgement=Judgement.objects.get(rater=alice), by=manager, grade=1)
    response = delete_one(admin_client(admin_user), manager)
    assert response.status_code == 200 and "manager has judged (1 revision)" in response.content.decode()
    assert User.objects.filter(pk=manager.pk).exists() and JudgementRevision.objects.count() == 1


@pytest.mark.parametrize("path", [delete_one, delete_selected])
def test_it_deletes_a_rater_holding_a_live_lease_and_gives_the_item_back(admin_user, path):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(raters=[alice, bob, carol], name="leased", judgements_per_item=1)
    lease = leasing.lease_next(pool=pool, rater=bob)
    assert lease is not None
    item = Assignment.objects.get(pk=lease.assignment).item
    other = leasing.lease_next(pool=pool, rater=carol)  # a lease that stays
    assert other is not None
    item.refresh_from_db()
    assert (item.active_leases, item.leasable) == (1, False)

    response = path(admin_client(admin_user), [bob] if path is delete_selected else bob)
    assert response.status_code == 302
    assert not User.objects.filter(pk=bob.pk).exists()
    assert not Assignment.objects.filter(rater_id=bob.pk).exists()
    item.refresh_from_db()
    assert (item.num_judgements, item.active_leases, item.leasable) == (0, 0, True)
    held = Assignment.objects.get(pk=other.assignment)
    assert held.state == Assignment.State.ACTIVE and held.item.active_leases == 1
    assert sum(row[2] for row in counters(pool)) == 1  # carol's lease only
    same_progress(pool, [alice, carol])  # the PostgreSQL tallies are the pass over the items
    # nobody else may hold it now: alice, who has nothing open but what bob and carol held, gets it
    for row in PoolItem.objects.filter(pool=pool).exclude(pk__in=[item.pk, held.item_id]):
        PoolItem.objects.filter(pk=row.pk).update(num_judgements=1)
    again = leasing.lease_next(pool=pool, rater=alice)
    assert again is not None and Assignment.objects.get(pk=again.assignment).item_id == item.pk


def test_it_lists_a_raters_judgements_as_one_counted_link_not_one_line_each(admin_user):
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="many", judgements_per_item=1)
    while (lease := leasing.lease_next(pool=pool, rater=alice)) is not None:
        submission.submit_label(assignment=lease.assignment, rater=alice, grade=1)
    judged = Judgement.objects.filter(rater=alice).count()
    assert judged > 3
    html = admin_client(admin_user).get(f"/admin/auth/user/{alice.pk}/delete/").content.decode()
    assert html.count('href="/admin/judgements/judgement/?') == 1  # the sidebar's link has no query
    assert f'href="/admin/judgements/judgement/?q=alice">{judged} judgements</a>' in html


def test_it_refuses_with_a_403_not_a_500_a_rater_who_judged_after_the_confirmation(admin_user, monkeypatch):
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="race")
    judge_one(pool, alice)
    # the confirmation found nothing in the way (alice judged between its check and the delete)
    monkeypatch.setattr(user_admin.AccountAdmin, "get_deleted_objects", lambda *args: ([], {}, set(), []))
    client = admin_client(admin_user)
    client.raise_request_exception = False
    response = delete_one(client, alice)
    assert response.status_code == 403  # the house's 403 page, not a 500
    assert User.objects.filter(pk=alice.pk).exists() and Judgement.objects.filter(rater=alice).count() == 1


@pytest.mark.parametrize("bulk", [False, True])
def test_a_deleted_rater_no_longer_counts_in_what_a_gold_item_needs(admin_user, bulk):
    """A gold item needs a judgement of every rater of its pool (`pooling.models.NEED`): one rater fewer
    once an account is deleted, as when a rater is taken off the pool."""
    raters = [make_user(f"goner{n}") for n in range(3)]
    pool = make_pool(raters=raters, name="gold-goner")
    item = PoolItem.objects.filter(pool=pool).first()
    adjudication.set_gold(item=item, grade=1, by=admin_user)
    assert PoolItem.objects.get(pk=item.pk).need == 3
    client = admin_client(admin_user)
    delete_selected(client, [raters[2]]) if bulk else delete_one(client, raters[2])
    assert not User.objects.filter(pk=raters[2].pk).exists()
    assert PoolItem.objects.get(pk=item.pk).need == 2
    same_progress(pool, raters[:2])

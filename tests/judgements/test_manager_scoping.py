"""What a manager's tools reach, per role: the judging page's "add existing users" offers only the raters of
the manager's own pools (others by exact username only, never listed), and the admin's "sweep expired
leases" sweeps only the pools its user manages (an admin: every pool)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judgements import lease_ends, leasing
from judgements.models import Assignment, Judging
from pooling.models import Pool
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def manager(username: str, *, staff: bool = False) -> User:
    user = make_user(username, is_staff=staff)
    user.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    if staff:
        user.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label__in=["pooling", "judgements"], codename__startswith="view"
            )
        )
    return user


@pytest.fixture
def people(db):
    return {
        "a": manager("manager-a", staff=True),
        "b": manager("manager-b", staff=True),
        "rater_a": make_user("rater-of-a"),
        "rater_b": make_user("rater-of-b"),
        "loner": make_user("rates-nothing"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def pools(people):
    """Manager A: pool `a-old` (rated by rater-of-a) and `a-new` (no raters yet); manager B: `b-pool`."""
    old = make_pool(name="a-old", managers=[people["a"]], raters=[people["rater_a"]])
    new = make_pool(name="a-new", managers=[people["a"]])
    Judging.objects.get(pool=new).raters.clear()
    other = make_pool(name="b-pool", managers=[people["b"]], raters=[people["rater_b"]])
    return {"old": old, "new": new, "other": other}


def as_user(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def setup_url(pool: Pool) -> str:
    return reverse("judging-setup:judging", kwargs={"name": pool.name})


def offered(client: Client, pool: Pool) -> set[str]:
    page = client.get(setup_url(pool))
    assert page.status_code == 200
    return {user.username for user in page.context["add"].fields["users"].queryset}


# ------------------------------------------------------------------------------ add existing users


def test_a_manager_is_offered_only_the_raters_of_their_own_pools(people, pools):
    page = as_user(people["a"]).get(setup_url(pools["new"]))
    assert offered(as_user(people["a"]), pools["new"]) == {"rater-of-a"}
    body = page.content.decode()
    for name in ("rater-of-b", "rates-nothing", "manager-b", "root"):
        assert name not in body  # nobody else's people, no list of every account
    assert offered(as_user(people["b"]), pools["other"]) == set()  # B's only rater rates it already


def test_an_admin_is_offered_the_raters_of_every_pool_but_admins(people, pools):
    assert offered(as_user(people["admin"]), pools["new"]) == {"rater-of-a", "rater-of-b"}


def test_a_manager_adds_an_offered_rater_and_anyone_by_exact_username(people, pools):
    client = as_user(people["a"])
    url = setup_url(pools["new"])
    assert client.post(url, {"action": "add", "users": [people["rater_a"].pk]}).status_code == 302
    assert client.post(url, {"action": "add", "username": "rates-nothing"}).status_code == 302
    judging = Judging.objects.get(pool=pools["new"])
    assert set(judging.raters.values_list("username", flat=True)) == {"rater-of-a", "rates-nothing"}


def test_a_user_not_offered_cannot_be_added_by_id(people, pools):
    body = {"action": "add", "users": [people["rater_b"].pk]}
    response = as_user(people["a"]).post(setup_url(pools["new"]), body)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Judging.objects.get(pool=pools["new"]).raters.exists()


@pytest.mark.parametrize("name", ["no-such-user", "root", "inactive-one"])
def test_an_unknown_or_unfit_username_is_a_clear_error_that_reveals_nobody(people, pools, name):
    make_user("inactive-one", is_active=False)
    response = as_user(people["a"]).post(setup_url(pools["new"]), {"action": "add", "username": name})
    body = response.content.decode()
    assert response.status_code == 200
    assert f"No user named &#x27;{name}&#x27; can be added as a rater" in body
    assert "rater-of-b" not in body and "rates-nothing" not in body
    assert not Judging.objects.get(pool=pools["new"]).raters.exists()


def test_adding_nobody_asks_for_someone(people, pools):
    response = as_user(people["a"]).post(setup_url(pools["new"]), {"action": "add"})
    assert response.status_code == 200 and "Choose raters, or give a username." in response.content.decode()


def test_another_manager_or_a_rater_cannot_add_raters(people, pools):
    url = setup_url(pools["new"])
    assert as_user(people["b"]).post(url, {"action": "add", "username": "rater-of-b"}).status_code == 404
    rater = as_user(people["rater_a"])
    assert rater.post(url, {"action": "add", "username": "rater-of-a"}).status_code == 403
    assert not Judging.objects.get(pool=pools["new"]).raters.exists()


# ---------------------------------------------------------------------- the admin's sweep of leases


def lapsed_lease(pool: Pool, rater: User) -> Assignment:
    lease = leasing.lease_next(pool=pool, rater=rater)
    assert lease is not None
    Assignment.objects.filter(pk=lease.assignment).update(expires_at=timezone.now() - timedelta(minutes=1))
    return Assignment.objects.get(pk=lease.assignment)


def sweep_as(user: User, selected: Assignment) -> int:
    response = as_user(user).post(
        "/admin/judgements/assignment/", {"action": "sweep_expired", "_selected_action": [selected.pk]}
    )
    return response.status_code


@pytest.mark.parametrize(
    ("who", "swept"), [("a", {"a-old"}), ("b", {"b-pool"}), ("admin", {"a-old", "b-pool"})]
)
def test_the_sweep_action_sweeps_only_the_pools_its_user_manages(people, pools, who, swept):
    leases = {"a-old": lapsed_lease(pools["old"], people["rater_a"]),
              "b-pool": lapsed_lease(pools["other"], people["rater_b"])}  # fmt: skip
    mine = leases["b-pool" if who == "b" else "a-old"]
    assert sweep_as(people[who], mine) == 302
    states = {name: Assignment.objects.get(pk=lease.pk).state for name, lease in leases.items()}
    assert {name for name, state in states.items() if state == Assignment.State.EXPIRED} == swept
    assert {name for name, state in states.items() if state == Assignment.State.ACTIVE} == set(leases) - swept


def test_a_rater_has_no_sweep_action(people, pools):
    lease = lapsed_lease(pools["old"], people["rater_a"])
    response = as_user(people["rater_a"]).post(
        "/admin/judgements/assignment/", {"action": "sweep_expired", "_selected_action": [lease.pk]}
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert Assignment.objects.get(pk=lease.pk).state == Assignment.State.ACTIVE


def test_the_service_sweeps_the_pools_it_is_given(people, pools):
    first = lapsed_lease(pools["old"], people["rater_a"])
    second = lapsed_lease(pools["other"], people["rater_b"])
    assert lease_ends.sweep_expired_leases(pools=Pool.objects.filter(name="b-pool")) == 1
    assert Assignment.objects.get(pk=first.pk).state == Assignment.State.ACTIVE
    assert Assignment.objects.get(pk=second.pk).state == Assignment.State.EXPIRED
    assert lease_ends.sweep_expired_leases() == 1

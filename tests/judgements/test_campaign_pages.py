"""The manager's judging page of a pool (set-up, raters, new accounts) and the page that stands in for
the raters, gold, adjudication and agreement pages until judging is set up. Tried by an anonymous
visitor, a rater, a manager of another pool, the pool's manager and an admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judgements.models import Judging
from judgements.rubrics import create_rubric
from pooling.models import Pool
from tests.factories import make_manager, make_pool, make_user


@pytest.fixture
def people(db):
    return {
        "owner": make_manager("owner"),
        "other": make_manager("other-manager"),
        "rater": make_user("a-rater"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def bare_pool(people):
    """A built pool of `owner` with no judging set up (make_pool always sets it up: undone here)."""
    pool = make_pool(name="bare", managers=[people["owner"]])
    Judging.objects.filter(pool=pool).delete()
    make_pool(name="elsewhere", managers=[people["other"]])
    return pool


def client_as(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("who", "expected"), [(None, 302), ("rater", 403), ("other", 404), ("owner", 200), ("admin", 200)]
)
def test_it_lets_only_the_pools_manager_see_the_judging_page(bare_pool, people, who, expected):
    response = client_as(people.get(who)).get(reverse("judging-setup:judging", kwargs={"name": "bare"}))
    assert response.status_code == expected


@pytest.mark.parametrize(
    "url",
    [
        reverse("judging-manage:stats", kwargs={"pool": "bare"}),
        reverse("judging-manage:gold", kwargs={"pool": "bare"}),
        reverse("judging-manage:adjudication", kwargs={"pool": "bare"}),
        reverse("campaigns:agreement", kwargs={"name": "bare"}),
    ],
)
def test_it_says_what_to_do_next_until_judging_is_set_up(bare_pool, people, url):
    response = client_as(people["owner"]).get(url)
    assert response.status_code == 200
    assert reverse("judging-setup:judging", kwargs={"name": "bare"}) in response.content.decode()
    # someone who does not manage the pool learns nothing about it
    assert client_as(people["other"]).get(url).status_code == 404


def test_it_sets_up_judging_and_the_judgement_plan_of_an_unbuilt_pool(people):
    pool = make_pool(name="draft", managers=[people["owner"]], build=False)
    Judging.objects.filter(pool=pool).delete()
    rubric = create_rubric(
        name="binary",
        grades=[{"value": 0, "label": "No", "key": "0"}, {"value": 1, "label": "Yes", "key": "1"}],
    )
    fields = {"action": "setup", "rubric": rubric.pk, "judgements_per_item": 3,
              "double_judge_fraction": "0.25", "lease_minutes": 15, "adjudication_gap": 1}  # fmt: skip
    response = client_as(people["owner"]).post(
        reverse("judging-setup:judging", kwargs={"name": "draft"}), fields
    )
    assert response.status_code == 302
    judging = Judging.objects.get(pool=pool)
    assert (judging.rubric, judging.lease_minutes, judging.adjudication_gap) == (rubric, 15, 1)
    pool.refresh_from_db()
    assert (pool.judgements_per_item, pool.double_judge_fraction) == (3, 0.25)


def test_it_keeps_the_judgement_plan_of_a_built_pool(bare_pool, people):
    fields = {"action": "setup", "rubric": Judging._meta.get_field("rubric").related_model.objects.first().pk,
              "judgements_per_item": 5, "lease_minutes": 10, "adjudication_gap": 2}  # fmt: skip
    response = client_as(people["owner"]).post(
        reverse("judging-setup:judging", kwargs={"name": "bare"}), fields
    )
    assert response.status_code == 302
    bare_pool.refresh_from_db()
    assert bare_pool.judgements_per_item == 1  # disabled field: the built pool's plan stays
    assert Judging.objects.filter(pool=bare_pool).exists()


def test_it_adds_existing_users_and_creates_accounts_that_can_log_in(bare_pool, people, settings):
    owner = client_as(people["owner"])
    url = reverse("judging-setup:judging", kwargs={"name": "bare"})
    other = make_pool(name="owners-other", managers=[people["owner"]], raters=[people["rater"]])
    other.judging.raters.add(people["admin"])  # made a rater before admins were refused (membership.may_rate)
    page = owner.get(url)
    offered = {user.username for user in page.context["add"].fields["users"].queryset}
    assert "a-rater" in offered and "root" not in offered  # no admins offered as raters (raters of
    # the owner's other pools are offered: tests/judgements/test_manager_scoping.py)
    assert owner.post(url, {"action": "add", "users": [people["rater"].pk]}).status_code == 302
    judging = Judging.objects.get(pool=bare_pool)
    assert list(judging.raters.all()) == [people["rater"]]
    created = owner.post(
        url, {"action": "create", "username": "newbie", "password": "a-long-pass-9"}, follow=True
    )
    body = created.content.decode()
    assert "newbie" in body and reverse("login") in body
    assert set(judging.raters.values_list("username", flat=True)) == {"a-rater", "newbie"}
    assert Client().login(username="newbie", password="a-long-pass-9")
    # a weak password and a taken name are refused, naming why; nothing is created
    weak = owner.post(url, {"action": "create", "username": "weak", "password": "123"})
    assert "password refused" in weak.content.decode() and not User.objects.filter(username="weak").exists()
    taken = owner.post(url, {"action": "create", "username": "a-rater", "password": "a-long-pass-9"})
    assert "exists already" in taken.content.decode()


def test_it_does_not_let_another_manager_add_raters(bare_pool, people):
    url = reverse("judging-setup:judging", kwargs={"name": "bare"})
    response = client_as(people["other"]).post(
        url, {"action": "create", "username": "sneaky", "password": "a-long-pass-9"}
    )
    assert response.status_code == 404
    assert not User.objects.filter(username="sneaky").exists()
    assert (
        client_as(people["rater"]).post(url, {"action": "add", "users": [people["rater"].pk]}).status_code
        == 403
    )
    assert not Judging.objects.filter(pool=bare_pool).exists()
    assert Pool.objects.get(name="bare").status == "built"


def test_one_rule_says_who_may_rate_on_the_page_the_api_and_the_command(bare_pool, people):
    """An inactive account (a model judge's is one) or a crowd worker's (which never logs in) may not rate
    (`membership.may_rate`), whoever asks; a manager may not add an admin either, on the page or through
    the API (`membership.managers_may_add`). The page applied both, while the API and `add_raters` added
    any account, a judge's too."""
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from judgements.errors import JudgingError
    from judgements.membership import create_worker_account, setup_judging
    from tests.conftest import client_for

    gone = make_user("gone", is_active=False)
    worker = create_worker_account(worker_id="w-17")
    api = client_for(people["owner"])
    body = {"pool": "bare", "raters": ["a-rater"]}
    assert api.post("/api/judging/", body, format="json").status_code in (200, 201)
    for name in ("root", "gone", worker.username):
        answer = api.post("/api/judging/bare/raters/", {"usernames": [name]}, format="json")
        assert answer.status_code == 400 and "can be a rater" in answer.json()["usernames"][0], name
        page = client_as(people["owner"]).post(
            reverse("judging-setup:judging", kwargs={"name": "bare"}), {"action": "add", "username": name}
        )
        assert "can be added as a rater" in page.content.decode()
    with pytest.raises(CommandError, match="'gone' cannot rate"):
        call_command("add_raters", "bare", "gone", stdout=io.StringIO())
    with pytest.raises(CommandError, match="'w-17' cannot rate: .* a crowd worker's"):
        call_command("add_raters", "bare", worker.username, stdout=io.StringIO())
    with pytest.raises(JudgingError, match="'gone' cannot rate"):
        setup_judging(pool=bare_pool, raters=[people["admin"], gone])
    with pytest.raises(JudgingError, match="'w-17' cannot rate"):
        setup_judging(pool=bare_pool, raters=[worker])
    assert list(Judging.objects.get(pool=bare_pool).raters.values_list("username", flat=True)) == ["a-rater"]
    call_command("add_raters", "bare", "root", stdout=io.StringIO())  # an admin who wants to rate: the shell
    assert Judging.objects.get(pool=bare_pool).raters.filter(username="root").exists()


def test_it_holds_the_judgement_plan_to_the_rules_of_a_new_pool_beside_each_field(people):
    """The plan an unbuilt pool's judging set-up changes obeys the rules a new pool's does
    (`pool_build.pool_problems`, with the column's range): each message beside its field, as the new-pool
    page shows it, and nothing changed; a value past the column is refused, not a server error."""
    pool = make_pool(name="draft", managers=[people["owner"]], build=False)
    url = reverse("judging-setup:judging", kwargs={"name": "draft"})
    new_pool_url = reverse("setup:pool-create", kwargs={"name": pool.collection.name})
    rubric = Judging.objects.get(pool=pool).rubric
    fields = {"action": "setup", "rubric": rubric.pk, "lease_minutes": 15, "adjudication_gap": 1}
    owner = client_as(people["owner"])
    for field, value in (
        ("judgements_per_item", 0),
        ("judgements_per_item", 40_000),
        ("double_judge_fraction", 2),
    ):
        response = owner.post(url, {**fields, "judgements_per_item": 2, field: value})
        assert response.status_code == 200, (field, value)
        shown = response.context["setup"].errors[field]
        on_new_pool = owner.post(new_pool_url, {"name": "n", "strategy": "depth", "depth": 3, field: value})
        assert shown == on_new_pool.context["form"].errors[field], (field, value)
    pool.refresh_from_db()
    assert (pool.judgements_per_item, pool.double_judge_fraction) == (1, None)


def test_the_lease_and_the_adjudication_gap_have_the_columns_bounds_everywhere(people):
    """One rule for the bounds of a lease and of the adjudication gap (`Judging.MAX_*`, the columns'
    validators, run by `membership.setup_judging`): the set-up page shows the message beside the field and
    changes nothing, not even the judgement plan it was given with them; the API answers it on the field;
    the service refuses a 0 it once replaced silently with the default."""
    from judgements import membership
    from judgements.errors import JudgingError
    from tests.conftest import client_for

    pool = make_pool(name="draft", managers=[people["owner"]], build=False)
    url = reverse("judging-setup:judging", kwargs={"name": "draft"})
    rubric = Judging.objects.get(pool=pool).rubric
    owner = client_as(people["owner"])
    for field, value, message in (
        ("lease_minutes", 0, "Ensure this value is greater than or equal to 1."),
        ("lease_minutes", Judging.MAX_LEASE_MINUTES + 1, "Ensure this value is less than or equal to 1440."),
        (
            "adjudication_gap",
            Judging.MAX_ADJUDICATION_GAP + 1,
            "Ensure this value is less than or equal to 1000.",
        ),
    ):
        fields = {"action": "setup", "rubric": rubric.pk, "judgements_per_item": 3, "lease_minutes": 15}
        response = owner.post(url, {**fields, "adjudication_gap": 1, field: value})
        assert response.status_code == 200 and response.context["setup"].errors[field] == [message], field
        answer = client_for(people["owner"]).patch(
            f"/api/judging/{pool.name}/", {field: value}, format="json"
        )
        assert answer.status_code == 400 and answer.json() == {field: [message]}, field
        with pytest.raises(JudgingError) as refused:
            membership.setup_judging(pool=pool, **{field: value})
        assert refused.value.field == field
    pool.refresh_from_db()
    assert pool.judgements_per_item == 1  # the plan posted beside a refused lease was not kept
    judging = Judging.objects.get(pool=pool)
    assert (judging.lease_minutes, judging.adjudication_gap) != (0, Judging.MAX_ADJUDICATION_GAP + 1)

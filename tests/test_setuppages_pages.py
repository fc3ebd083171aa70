"""Every set-up step a pool manager who is not staff takes in the browser, not only through the API:
taking a run out of a pool, deleting a run of a collection, sharing a collection, taking oneself off a
pool's managers, a pool form's preview that says what to fix, and the runs table's row of the items kept
for their judgements. Each new page is tried by who may not: another manager (404), a rater (403), an
anonymous visitor (the login page)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from pooling import ownership, pool_build, stats
from pooling.models import PoolItem, PoolRun, Provenance, Run
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge


@pytest.fixture
def people(db):
    return {
        "owner": make_manager("owner"),
        "second": make_manager("second-manager"),
        "other": make_manager("other-manager"),
        "rater": make_user("a-rater"),
    }


@pytest.fixture
def pool(people):
    """The default two runs to depth 5 (q1: d001-d006, q2: d010-d013; beta alone brought d005, d006 and
    d013), a third run gamma in no pool; `other` manages a pool of their own."""
    collection = make_collection(name="news", managers=[people["owner"]])
    pool = make_pool(
        collection=collection, name="news-pool", managers=[people["owner"]], raters=[people["rater"]]
    )
    make_run(collection=collection, name="gamma", lists={"q1": ["d001", "d007"]})
    make_pool(name="elsewhere", managers=[people["other"]])
    return pool


def client_as(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def body(response) -> str:
    return response.content.decode()


# ---------------------------------------------------------------------------- 1. a run out of a pool


def test_it_offers_a_remove_button_per_run_on_the_pool_page(pool, people):
    page = body(client_as(people["owner"]).get(reverse("pooling:pool-detail", args=["news-pool"])))
    for run in ("alpha", "beta"):
        assert reverse("setup:remove-run", kwargs={"name": "news-pool", "run": run}) in page


def test_it_asks_before_taking_a_run_out_and_says_judged_items_stay(pool, people):
    url = reverse("setup:remove-run", kwargs={"name": "news-pool", "run": "beta"})
    page = client_as(people["owner"]).get(url)
    assert page.status_code == 200
    text = body(page)
    assert "judged items stay" in text and 'name="csrfmiddlewaretoken"' in text
    assert page.context["contribution"].unique == 3
    assert PoolRun.objects.filter(pool=pool, run__name="beta").exists()  # looking removed nothing


def test_it_takes_a_run_out_through_the_service_keeping_its_judged_items(pool, people):
    judge(pool, people["rater"], {("q1", "d005"): 2})  # beta alone brought d005, d006, d013
    response = client_as(people["owner"]).post(
        reverse("setup:remove-run", kwargs={"name": "news-pool", "run": "beta"}), follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("pooling:pool-detail", args=["news-pool"])
    assert "2 unjudged items only it contributed removed; judged items stay" in body(response)
    assert list(pool.pool_runs.values_list("run__name", flat=True)) == ["alpha"]
    docids = set(PoolItem.objects.filter(pool=pool).values_list("document__docid", flat=True))
    assert "d005" in docids and not {"d006", "d013"} & docids


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(("who", "expected"), [("other", 404), ("rater", 403), (None, 302)])
def test_it_lets_no_one_else_take_a_run_out(pool, people, method, who, expected):
    url = reverse("setup:remove-run", kwargs={"name": "news-pool", "run": "beta"})
    response = getattr(client_as(people.get(who)), method)(url)
    assert response.status_code == expected
    if who is None:
        assert response["Location"].startswith(reverse("login"))
    assert PoolRun.objects.filter(pool=pool, run__name="beta").exists()


def test_it_answers_404_for_a_run_not_in_the_pool(pool, people):
    url = reverse("setup:remove-run", kwargs={"name": "news-pool", "run": "gamma"})
    assert client_as(people["owner"]).post(url).status_code == 404


# ------------------------------------------------------------------------ 2. a run out of a collection


def test_it_deletes_a_run_of_the_collection_after_asking(pool, people):
    owner = client_as(people["owner"])
    page = body(owner.get(reverse("setup:collection", args=["news"])))
    url = reverse("setup:delete-run", kwargs={"name": "news", "run": "beta"})
    assert url in page
    asked = owner.get(url)
    assert asked.status_code == 200 and "1 pool uses it" in body(asked) and "news-pool" in body(asked)
    # what deleting does to the pools (`deletion.delete_run` takes the run out of each as `remove_run` does)
    assert "the items it alone contributed go if nobody judged them" in body(asked)
    assert Run.objects.filter(collection=pool.collection, name="beta").exists()
    deleted = owner.post(url, follow=True)
    assert deleted.redirect_chain[-1][0] == reverse("setup:collection", args=["news"])
    assert "Run beta deleted from collection news." in body(deleted)
    assert not Run.objects.filter(collection=pool.collection, name="beta").exists()


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(("who", "expected"), [("other", 404), ("second", 404), ("rater", 403), (None, 302)])
def test_it_lets_only_the_collections_managers_delete_a_run(pool, people, method, who, expected):
    """The API's rule (`RunViewSet`: destroy is for the collection's managers): a manager the pool is
    shared with, who reads the collection, may not delete its runs."""
    ownership.add_managers(owned=pool, users=[people["second"]])
    url = reverse("setup:delete-run", kwargs={"name": "news", "run": "gamma"})
    response = getattr(client_as(people.get(who)), method)(url)
    assert response.status_code == expected
    assert Run.objects.filter(collection=pool.collection, name="gamma").exists()


# ------------------------------------------------------------------------ 3. sharing a collection


def test_it_shares_a_collection_from_its_page(pool, people):
    owner = client_as(people["owner"])
    url = reverse("setup:collection-managers", args=["news"])
    assert url in body(owner.get(reverse("setup:collection", args=["news"])))
    added = owner.post(url, {"username": "second-manager"}, follow=True)
    assert "second-manager manages collection news now." in body(added)
    assert ownership.manager_names(owned=pool.collection) == ["owner", "second-manager"]
    # ownership's rules, not a second copy: a rater is not a manager; the last manager stays
    refused = owner.post(url, {"username": "a-rater"}, follow=True)
    assert "not a pool manager: &#x27;a-rater&#x27;" in body(refused)
    unknown = owner.post(url, {"username": "nobody"}, follow=True)
    assert "no user named &#x27;nobody&#x27;" in body(unknown)
    owner.post(url, {"username": "second-manager", "remove": "1"})
    last = owner.post(url, {"username": "owner", "remove": "1"}, follow=True)
    assert "the last manager" in body(last)
    assert ownership.manager_names(owned=pool.collection) == ["owner"]


def test_a_manager_who_leaves_a_collection_lands_on_the_list(pool, people):
    ownership.add_managers(owned=pool.collection, users=[people["second"]])
    response = client_as(people["owner"]).post(
        reverse("setup:collection-managers", args=["news"]), {"username": "owner", "remove": "1"}, follow=True
    )
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("setup:collections")
    assert "owner no longer manages collection news." in body(response)


@pytest.mark.parametrize(("who", "expected"), [("other", 404), ("rater", 403), (None, 302)])
def test_it_lets_no_one_else_change_a_collections_managers(pool, people, who, expected):
    response = client_as(people.get(who)).post(
        reverse("setup:collection-managers", args=["news"]), {"username": "other-manager"}
    )
    assert response.status_code == expected
    assert ownership.manager_names(owned=pool.collection) == ["owner"]


# ------------------------------------------------------------------------ 4. leaving a pool


def test_a_manager_who_leaves_a_pool_lands_on_the_pool_list(pool, people):
    ownership.add_managers(owned=pool, users=[people["second"]])
    response = client_as(people["owner"]).post(
        reverse("pooling:pool-managers", args=["news-pool"]),
        {"username": "owner", "remove": "1"},
        follow=True,
    )
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("pooling:pool-list")
    assert "owner no longer manages pool news-pool." in body(response)
    # taking another off still leads back to the pool's page
    back = client_as(people["second"]).post(
        reverse("pooling:pool-managers", args=["news-pool"]), {"username": "owner"}
    )
    assert back["Location"] == reverse("pooling:pool-detail", args=["news-pool"])


# ------------------------------------------------------------------------ 5. the pool form's preview


def _fields(collection, **fields) -> dict:
    runs = [run.pk for run in Run.objects.filter(collection=collection, name__in=["alpha", "beta"])]
    return {"name": "fresh-pool", "runs": runs, "strategy": "depth", "depth": "3", "judgements_per_item": "1",
            "price_per_judgement": "1", **fields}  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"budget": "5"}, "a budget is for the adaptive strategies"),  # depth strategy with a budget
        ({"strategy": "mtf"}, "needs a judgement budget"),  # move-to-front without one
        ({"depth": "abc"}, "Depth: Enter a whole number."),  # not previewed as the default depth 10
    ],
)
def test_the_preview_says_what_to_fix_instead_of_figures(pool, people, fields, says):
    preview = client_as(people["owner"]).get(
        reverse("setup:pool-preview", args=["news"]), _fields(pool.collection, **fields)
    )
    assert preview.status_code == 200
    assert preview.context["estimate"] is None
    text = body(preview)
    assert says in text and 'class="num items"' not in text


def test_the_preview_shows_figures_for_a_form_that_would_be_created(pool, people):
    owner = client_as(people["owner"])
    good = owner.get(reverse("setup:pool-preview", args=["news"]), _fields(pool.collection))
    assert good.context["estimate"]["items"] > 0 and good.context["problems"] == []
    # a name already taken does not change the figures: they show, and so does what to fix
    taken = owner.get(
        reverse("setup:pool-preview", args=["news"]), _fields(pool.collection, name="news-pool")
    )
    assert taken.context["estimate"] == good.context["estimate"]
    assert "already exists" in body(taken)


# ------------------------------------------------------------------------ 6. items no run contributed


def test_the_runs_table_counts_the_items_kept_for_their_judgements(pool, people):
    judge(pool, people["rater"], {("q1", "d005"): 2, ("q2", "d013"): 0})
    pool_build.remove_run(pool=pool, run=Run.objects.get(collection=pool.collection, name="beta"))
    page = client_as(people["owner"]).get(reverse("pooling:pool-detail", args=["news-pool"]))
    items = PoolItem.objects.filter(pool=pool)
    without_provenance = items.exclude(pk__in=Provenance.objects.values("item_id")).count()
    assert page.context["kept_items"] == without_provenance == stats.kept_items(pool) == 2
    assert '<td class="num kept-items">2</td>' in body(page) and "kept for their judgements" in body(page)
    # the runs' items and the kept ones account for every item (alpha is the only run now)
    alpha = page.context["stats"].runs[0]
    assert alpha.contributed + page.context["kept_items"] == page.context["stats"].items == items.count()


def test_the_runs_table_has_no_kept_row_while_every_item_has_a_run(pool, people):
    page = client_as(people["owner"]).get(reverse("pooling:pool-detail", args=["news-pool"]))
    assert page.context["kept_items"] == 0 and "kept for their judgements" not in body(page)


def test_it_takes_out_and_deletes_a_run_whose_name_has_a_slash(people):
    """A run stored under any name (the admin, the factories) still has its Remove and Delete pages."""
    collection = make_collection(name="odd", managers=[people["owner"]])
    odd = make_run(collection=collection, name="<i>a/b</i>", lists={"q1": ["d001"]})
    make_pool(collection=collection, runs=[odd], name="odd-pool", managers=[people["owner"]])
    owner = client_as(people["owner"])
    page = body(owner.get(reverse("pooling:pool-detail", args=["odd-pool"])))
    remove = reverse("setup:remove-run", kwargs={"name": "odd-pool", "run": odd.name})
    assert remove in page and owner.get(remove).status_code == 200
    assert owner.post(remove).status_code == 302 and not PoolRun.objects.filter(run=odd).exists()
    delete = reverse("setup:delete-run", kwargs={"name": "odd", "run": odd.name})
    assert owner.post(delete).status_code == 302 and not Run.objects.filter(pk=odd.pk).exists()

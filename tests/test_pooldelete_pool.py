"""Deleting a pool nobody has judged: the service (`deletion.delete_pool`), the API's DELETE and the pool's
page with its confirmation. A pool that holds people's work (a judgement, a gold label, an adjudication,
a release) or is being built is refused, and nothing changes."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from judgements import adjudication, releases
from judgements.models import Adjudication, Judging
from pooling import deletion
from pooling.errors import PoolError
from pooling.models import Job, Pool, PoolItem, PoolRun, Provenance, Run
from tests.conftest import client_for
from tests.factories import lease_for, make_collection, make_manager, make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db):
    return {
        "owner": make_manager("owner"),
        "other": make_manager("other-manager"),
        "rater": make_user("a-rater"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def pool(people):
    """A built pool of `owner` over two runs, with judging set up for `rater`, that nobody has judged."""
    collection = make_collection(name="news", managers=[people["owner"]])
    return make_pool(
        collection=collection, name="news-pool", managers=[people["owner"]], raters=[people["rater"]]
    )


def item_of(pool: Pool) -> PoolItem:
    item = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    assert item is not None  # the pool is built
    return item


def building(pool: Pool) -> Job:
    return Job.objects.create(
        kind=Job.Kind.BUILD_POOL,
        collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name},
        status=Job.Status.RUNNING,
    )


def client_as(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


# ------------------------------------------------------------------------------------------- the service


def test_it_deletes_a_pool_nobody_judged_with_its_items_and_provenance_and_keeps_the_runs(pool):
    item_ids = list(PoolItem.objects.filter(pool=pool).values_list("pk", flat=True))
    assert item_ids and Provenance.objects.filter(item_id__in=item_ids).exists()
    runs = set(pool.runs.values_list("pk", flat=True))

    assert deletion.delete_pool(pool=pool) == len(item_ids)

    assert not Pool.objects.filter(pk=pool.pk).exists()
    assert not PoolItem.objects.filter(pk__in=item_ids).exists()
    assert not Provenance.objects.filter(item_id__in=item_ids).exists()
    assert not PoolRun.objects.filter(pool_id=pool.pk).exists()
    assert not Judging.objects.filter(pool_id=pool.pk).exists()
    assert set(Run.objects.filter(pk__in=runs).values_list("pk", flat=True)) == runs  # the runs stay
    # the name is free again
    make_pool(collection=pool.collection, name="news-pool", runs=list(Run.objects.filter(pk__in=runs)))


def test_it_deletes_a_pool_whose_items_are_leased_but_not_judged(pool, people):
    assert lease_for(pool=pool, rater=people["rater"]) is not None
    deletion.delete_pool(pool=pool)
    assert not Pool.objects.filter(pk=pool.pk).exists()


def assert_refused(pool: Pool, *words: str) -> None:
    items = PoolItem.objects.filter(pool=pool).count()
    with pytest.raises(PoolError) as refused:
        deletion.delete_pool(pool=pool)
    for word in words:
        assert word in str(refused.value)
    assert Pool.objects.filter(pk=pool.pk).exists()
    assert PoolItem.objects.filter(pool=pool).count() == items
    assert deletion.pool_deletion_refusal(pool) is not None


def test_it_refuses_a_pool_with_a_judgement(pool, people):
    judge(pool, people["rater"], {("q1", "d001"): 2})
    assert_refused(pool, "judgements", "news-pool")


def test_it_refuses_a_pool_with_a_gold_label(pool, people):
    adjudication.set_gold(item=item_of(pool), grade=1, by=people["owner"])
    assert_refused(pool, "gold labels")


def test_it_refuses_a_pool_with_an_adjudication(pool, people):
    Adjudication.objects.create(item=item_of(pool), grade=1, adjudicator=people["owner"])
    assert_refused(pool, "adjudications")


def test_it_refuses_a_pool_with_a_release(pool):
    releases.create_release(pool=pool)
    assert_refused(pool, "releases")


def test_it_refuses_a_pool_while_it_is_being_built(pool):
    job = building(pool)
    assert_refused(pool, "being built")
    job.status = Job.Status.DONE
    job.save(update_fields=["status"])
    deletion.delete_pool(pool=pool)
    assert not Pool.objects.filter(pk=pool.pk).exists()


def test_it_refuses_a_pool_while_any_job_of_it_is_at_work(pool):
    """Runs being added (or a release, a judge …) would fail on a missing pool: refused like a build."""
    job = Job.objects.create(
        kind=Job.Kind.ADD_RUNS,
        collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name, "runs": []},
        status=Job.Status.QUEUED,
    )
    assert_refused(pool, f"has a job at work (add_runs, job {job.pk})")
    job.status = Job.Status.FAILED
    job.save(update_fields=["status"])
    deletion.delete_pool(pool=pool)
    assert not Pool.objects.filter(pk=pool.pk).exists()


# ----------------------------------------------------------------------------------------------- the API


def test_the_api_deletes_a_pool_nobody_judged(pool, people):
    response = client_for(people["owner"]).delete(f"/api/pools/{pool.name}/")
    assert response.status_code == 204
    assert not Pool.objects.filter(pk=pool.pk).exists()


def test_the_api_refuses_a_judged_pool_with_a_409_saying_why(pool, people):
    judge(pool, people["rater"], {("q1", "d001"): 2})
    response = client_for(people["owner"]).delete(f"/api/pools/{pool.name}/")
    assert response.status_code == 409
    assert "judgements" in response.json()["detail"]
    assert Pool.objects.filter(pk=pool.pk).exists()


def test_the_api_refuses_a_pool_being_built_with_a_409(pool, people):
    building(pool)
    response = client_for(people["owner"]).delete(f"/api/pools/{pool.name}/")
    assert response.status_code == 409
    assert "being built" in response.json()["detail"]


@pytest.mark.parametrize(("who", "expected"), [(None, 401), ("rater", 403), ("other", 404), ("admin", 204)])
def test_the_api_lets_only_the_pools_managers_delete_it(pool, people, who, expected):
    response = client_for(people.get(who)).delete(f"/api/pools/{pool.name}/")
    assert response.status_code == expected
    assert Pool.objects.filter(pk=pool.pk).exists() == (expected != 204)


# ---------------------------------------------------------------------------------------------- the pages


#: The confirmation's POST button (`setup/_confirm.html`).
CONFIRM = '<button type="submit" class="primary">Delete pool news-pool</button>'


def detail(user: User, pool: Pool) -> str:
    response = client_as(user).get(reverse("pooling:pool-detail", kwargs={"name": pool.name}))
    assert response.status_code == 200
    return response.content.decode()


def test_the_pool_page_links_to_deleting_a_pool_nobody_judged(pool, people):
    assert reverse("setup:pool-delete", kwargs={"name": pool.name}) in detail(people["owner"], pool)


def test_the_pool_page_hides_the_link_once_someone_judged(pool, people):
    judge(pool, people["rater"], {("q1", "d001"): 2})
    assert reverse("setup:pool-delete", kwargs={"name": pool.name}) not in detail(people["owner"], pool)


def test_the_pool_page_hides_the_link_while_it_is_built(pool, people):
    building(pool)
    assert reverse("setup:pool-delete", kwargs={"name": pool.name}) not in detail(people["owner"], pool)


def test_the_confirmation_says_what_goes_and_what_stays(pool, people):
    url = reverse("setup:pool-delete", kwargs={"name": pool.name})
    response = client_as(people["owner"]).get(url)
    assert response.status_code == 200
    body = response.content.decode()
    items = PoolItem.objects.filter(pool=pool).count()
    assert f'<strong class="items">{items}</strong> items' in body
    assert "stay in collection" in body and "news" in body and "alpha" in body and "beta" in body
    assert CONFIRM in body and "csrfmiddlewaretoken" in body
    assert Pool.objects.filter(pk=pool.pk).exists()  # a GET deletes nothing


def test_the_confirmation_of_a_judged_pool_says_why_and_offers_no_button(pool, people):
    judge(pool, people["rater"], {("q1", "d001"): 2})
    response = client_as(people["owner"]).get(reverse("setup:pool-delete", kwargs={"name": pool.name}))
    body = response.content.decode()
    assert response.status_code == 200
    assert "cannot be deleted" in body and "judgements" in body
    assert CONFIRM not in body


def test_posting_the_confirmation_deletes_the_pool_and_goes_to_the_pool_list(pool, people):
    client = client_as(people["owner"])
    response = client.post(reverse("setup:pool-delete", kwargs={"name": pool.name}))
    assert response.status_code == 302
    assert response["Location"] == reverse("pooling:pool-list")
    assert not Pool.objects.filter(pk=pool.pk).exists()
    told = [str(m) for m in get_messages(response.wsgi_request)]
    assert any("Pool news-pool deleted" in m and "runs stay" in m for m in told)


def test_posting_for_a_judged_pool_deletes_nothing_and_says_why(pool, people):
    judge(pool, people["rater"], {("q1", "d001"): 2})
    response = client_as(people["owner"]).post(reverse("setup:pool-delete", kwargs={"name": pool.name}))
    assert response.status_code == 302
    assert response["Location"] == reverse("pooling:pool-detail", kwargs={"name": pool.name})
    assert Pool.objects.filter(pk=pool.pk).exists()
    assert any("judgements" in str(m) for m in get_messages(response.wsgi_request))


def test_the_page_checks_csrf(pool, people):
    client = Client(enforce_csrf_checks=True)
    client.force_login(people["owner"])
    response = client.post(reverse("setup:pool-delete", kwargs={"name": pool.name}))
    assert response.status_code == 403
    assert Pool.objects.filter(pk=pool.pk).exists()


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(("who", "expected"), [(None, 302), ("rater", 403), ("other", 404)])
def test_the_page_is_the_pools_managers_only(pool, people, method, who, expected):
    url = reverse("setup:pool-delete", kwargs={"name": pool.name})
    response = getattr(client_as(people.get(who)), method)(url)
    assert response.status_code == expected
    if who is None:
        assert response["Location"].startswith(reverse("login"))
    assert Pool.objects.filter(pk=pool.pk).exists()

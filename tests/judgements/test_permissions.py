"""Who may do what: every judging endpoint and manager page, for every persona, as one table.

Columns: anonymous; `other` — a rater of another pool; `rater` — a rater of the pool, owner of the lease and
judgement named in the URL; `co` — another rater of the same pool (never sees the rater's own objects);
`manager` (the pool managers group); `admin` (staff). Each cell is the status code; every request runs
in a savepoint rolled back afterwards, so each persona meets the same world.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.test import Client

from judgements import adjudication, labels, rubrics
from judgements.models import Judgement
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import lease_for, make_pool, submit_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

PERSONAS = ("anonymous", "other", "rater", "co", "manager", "admin")


@pytest.fixture
def world(rater, second_rater, outsider, manager, admin_user) -> dict[str, Any]:
    """Pool `alpha` (raters: rater, co) with a judged-and-revised item in the adjudication queue, a live
    lease of the rater's, a gold item; pool `beta` (rater: other); an unused rubric."""
    alpha = make_pool(name="alpha", raters=[rater, second_rater], judgements_per_item=2)
    beta = make_pool(name="beta", raters=[outsider])
    done = lease_for(pool=alpha, rater=rater)
    assert done is not None
    judgement = submit_for(assignment=done, grade=1, note="first")
    labels.revise_judgement(judgement=judgement, by=rater, grade=3)
    lease = lease_for(pool=alpha, rater=rater)
    assert lease is not None
    co_lease = lease_for(pool=alpha, rater=second_rater)
    assert co_lease is not None
    assert co_lease.item_id == done.item_id
    co_judgement = submit_for(assignment=co_lease, grade=0, note="not at all")
    gold = PoolItem.objects.filter(pool=alpha).exclude(pk__in=[done.item_id, lease.item_id]).first()
    assert gold is not None
    adjudication.set_gold(item=gold, grade=2, by=manager)
    beta_item = PoolItem.objects.filter(pool=beta).first()
    assert beta_item is not None
    return {
        "users": {
            "anonymous": None,
            "other": outsider,
            "rater": rater,
            "co": second_rater,
            "manager": manager,
            "admin": admin_user,
        },  # fmt: skip
        "lease": lease.pk,
        "judgement": judgement.pk,
        "co_judgement": co_judgement.pk,
        "disputed": done.item_id,
        "gold": gold.pk,
        "item": lease.item_id,
        "beta_item": beta_item.pk,
        "rubric": rubrics.create_rubric(name="unused").pk,
        "judged_rubric": Judgement.objects.get(pk=judgement.pk).rubric_id,
    }


def statuses(
    world: dict[str, Any], method: str, url: str, body: Any, *, page: bool = False
) -> dict[str, int]:
    """persona → status code of one request, each in a rolled-back savepoint."""
    url = url.format(**world)
    got = {}
    for persona in PERSONAS:
        user = world["users"][persona]
        if page:
            client = Client()
            if user is not None:
                client.force_login(user)
        else:
            client = client_for(user)
        with transaction.atomic():
            kwargs = {"data": body} if body is not None else {}
            if not page and body is not None:
                kwargs["format"] = "json"
            response = getattr(client, method)(url, **kwargs)
            transaction.set_rollback(True)
        got[persona] = response.status_code
    return got


def row(anonymous: int, other: int, rater: int, co: int, manager: int, admin: int) -> dict[str, int]:
    return dict(zip(PERSONAS, (anonymous, other, rater, co, manager, admin), strict=True))


GOLD = {"item": "{item}", "grade": 1}
GOLD_BETA = {"item": "{beta_item}", "grade": 1}
DECIDE = {"item": "{disputed}", "grade": 2}
GOLD_FORM = {"qid": "q1", "docid": "d002", "grade": "1"}
DECIDE_FORM = {"decision": "2"}

# (method, url, body): anonymous, other pool's rater, rater, co-rater, manager, admin
API = [
    # -- rater endpoints ------------------------------------------------------------------------------
    ("get", "/api/judging/", None, row(401, 200, 200, 200, 200, 200)),
    ("get", "/api/judging/alpha/", None, row(401, 404, 200, 200, 200, 200)),
    ("get", "/api/judging/beta/", None, row(401, 200, 404, 404, 200, 200)),
    ("post", "/api/pools/alpha/next/", None, row(401, 404, 200, 200, 403, 403)),
    ("post", "/api/pools/beta/next/", None, row(401, 200, 404, 404, 403, 403)),
    ("post", "/api/pools/nowhere/next/", None, row(401, 404, 404, 404, 404, 404)),
    ("get", "/api/assignments/", None, row(401, 200, 200, 200, 200, 200)),
    ("get", "/api/assignments/{lease}/", None, row(401, 404, 200, 404, 404, 404)),
    ("post", "/api/assignments/{lease}/judgement/", {"grade": 2}, row(401, 404, 201, 404, 404, 404)),
    ("post", "/api/assignments/{lease}/skip/", None, row(401, 404, 204, 404, 404, 404)),
    ("get", "/api/judgements/", None, row(401, 200, 200, 200, 200, 200)),
    ("get", "/api/judgements/{judgement}/", None, row(401, 404, 200, 404, 404, 404)),
    ("patch", "/api/judgements/{judgement}/", {"grade": 2}, row(401, 404, 200, 404, 404, 404)),
    ("get", "/api/judgements/{judgement}/history/", None, row(401, 404, 200, 404, 404, 404)),
    ("get", "/api/judgements/{co_judgement}/", None, row(401, 404, 404, 200, 404, 404)),
    ("put", "/api/judgements/{judgement}/", {"grade": 2}, row(401, 405, 405, 405, 405, 405)),
    ("delete", "/api/judgements/{judgement}/", None, row(401, 405, 405, 405, 405, 405)),
    # -- manager endpoints ----------------------------------------------------------------------------
    ("get", "/api/rubrics/", None, row(401, 403, 403, 403, 200, 200)),
    ("get", "/api/rubrics/{rubric}/", None, row(401, 403, 403, 403, 200, 200)),
    ("post", "/api/rubrics/", {"name": "new"}, row(401, 403, 403, 403, 201, 201)),
    ("patch", "/api/rubrics/{rubric}/", {"description": "d"}, row(401, 403, 403, 403, 200, 200)),
    ("patch", "/api/rubrics/{judged_rubric}/", {"description": "d"}, row(401, 403, 403, 403, 201, 201)),
    ("delete", "/api/rubrics/{rubric}/", None, row(401, 403, 403, 403, 204, 204)),
    ("delete", "/api/rubrics/{judged_rubric}/", None, row(401, 403, 403, 403, 400, 400)),
    ("post", "/api/rubrics/default/", None, row(401, 403, 403, 403, 200, 200)),
    ("post", "/api/judging/", {"pool": "alpha"}, row(401, 403, 403, 403, 200, 200)),
    ("patch", "/api/judging/alpha/", {"lease_minutes": 5}, row(401, 403, 403, 403, 200, 200)),
    ("post", "/api/judging/alpha/raters/", {"usernames": ["outsider"]}, row(401, 403, 403, 403, 200, 200)),
    ("delete", "/api/judging/alpha/raters/rater2/", None, row(401, 403, 403, 403, 204, 204)),
    ("delete", "/api/judging/alpha/raters/outsider/", None, row(401, 403, 403, 403, 404, 404)),
    ("get", "/api/judging/alpha/gold/", None, row(401, 403, 403, 403, 200, 200)),
    ("post", "/api/judging/alpha/gold/", GOLD, row(401, 403, 403, 403, 201, 201)),
    ("post", "/api/judging/alpha/gold/", GOLD_BETA, row(401, 403, 403, 403, 404, 404)),
    ("delete", "/api/judging/alpha/gold/{gold}/", None, row(401, 403, 403, 403, 204, 204)),
    ("delete", "/api/judging/alpha/gold/{beta_item}/", None, row(401, 403, 403, 403, 404, 404)),
    ("get", "/api/judging/alpha/stats/", None, row(401, 403, 403, 403, 200, 200)),
    ("get", "/api/judging/alpha/adjudication/", None, row(401, 403, 403, 403, 200, 200)),
    ("post", "/api/judging/alpha/adjudication/", DECIDE, row(401, 403, 403, 403, 201, 201)),
    ("get", "/api/judging/alpha/adjudications/", None, row(401, 403, 403, 403, 200, 200)),
    ("get", "/api/judging/alpha/judgements/", None, row(401, 403, 403, 403, 200, 200)),
    ("get", "/api/judging/nowhere/stats/", None, row(401, 403, 403, 403, 404, 404)),
]  # fmt: skip

PAGES = [
    ("get", "/manage/", None, row(302, 403, 403, 403, 200, 200)),
    ("get", "/manage/pools/alpha/", None, row(302, 403, 403, 403, 200, 200)),
    ("get", "/manage/pools/alpha/gold/", None, row(302, 403, 403, 403, 200, 200)),
    ("post", "/manage/pools/alpha/gold/", GOLD_FORM, row(302, 403, 403, 403, 302, 302)),
    ("post", "/manage/pools/alpha/gold/{gold}/remove/", {}, row(302, 403, 403, 403, 302, 302)),
    ("post", "/manage/pools/alpha/gold/{beta_item}/remove/", {}, row(302, 403, 403, 403, 404, 404)),
    ("get", "/manage/pools/alpha/adjudication/", None, row(302, 403, 403, 403, 200, 200)),
    ("post", "/manage/pools/alpha/adjudication/{disputed}/", DECIDE_FORM, row(302, 403, 403, 403, 302, 302)),
    ("post", "/manage/pools/alpha/adjudication/{beta_item}/", DECIDE_FORM, row(302, 403, 403, 403, 404, 404)),
    ("get", "/manage/pools/alpha/items/{disputed}/history/", None, row(302, 403, 403, 403, 200, 200)),
    ("get", "/manage/pools/alpha/items/{beta_item}/history/", None, row(302, 403, 403, 403, 404, 404)),
    ("get", "/manage/pools/nowhere/", None, row(302, 403, 403, 403, 404, 404)),
    ("get", "/manage/pools/alpha/gold/{gold}/remove/", None, row(405, 405, 405, 405, 405, 405)),
    # -- the admin: staff only ------------------------------------------------------------------------
    ("get", "/admin/judgements/rubric/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/rubric/{judged_rubric}/change/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/rubric/add/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/judging/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/assignment/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/judgement/{judgement}/change/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/goldlabel/", None, row(302, 302, 302, 302, 302, 200)),
    ("get", "/admin/judgements/adjudication/", None, row(302, 302, 302, 302, 302, 200)),
]  # fmt: skip


def _fill(body: Any, world: dict[str, Any]) -> Any:
    if isinstance(body, dict):
        return {
            k: int(v.format(**world)) if isinstance(v, str) and v.startswith("{") else v
            for k, v in body.items()
        }
    return body


@pytest.mark.parametrize(("method", "url", "body", "expected"), API, ids=[f"{m} {u}" for m, u, *_ in API])
def test_it_allows_each_api_endpoint_exactly_to_whom_it_is_for(world, method, url, body, expected):
    assert statuses(world, method, url, _fill(body, world)) == expected


@pytest.mark.parametrize(("method", "url", "body", "expected"), PAGES, ids=[f"{m} {u}" for m, u, *_ in PAGES])
def test_it_allows_each_page_exactly_to_whom_it_is_for(world, method, url, body, expected):
    assert statuses(world, method, url, _fill(body, world), page=True) == expected


def test_it_sends_anonymous_visitors_of_manager_pages_to_the_login_page(world):
    response = Client().get("/manage/pools/alpha/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_it_lists_only_the_raters_own_pools_and_judgements(world):
    rater = world["users"]["rater"]
    pools = client_for(rater).get("/api/judging/").json()["results"]
    assert [p["pool"] for p in pools] == ["alpha"]
    mine = client_for(rater).get("/api/judgements/").json()["results"]
    assert [j["id"] for j in mine] == [world["judgement"]]
    other = client_for(world["users"]["other"]).get("/api/judging/").json()["results"]
    assert [p["pool"] for p in other] == ["beta"]
    every = client_for(world["users"]["manager"]).get("/api/judging/").json()["results"]
    assert [p["pool"] for p in every] == ["alpha", "beta"]
    assert client_for(world["users"]["manager"]).get("/api/judging/?mine=1").json()["results"] == []


def test_it_hides_the_raters_of_a_pool_from_raters(world):
    as_rater = client_for(world["users"]["rater"]).get("/api/judging/alpha/").json()
    as_manager = client_for(world["users"]["manager"]).get("/api/judging/alpha/").json()
    assert as_rater["raters"] is None
    assert as_manager["raters"] == ["rater", "rater2"]


def test_it_refuses_a_removed_rater_their_lease_and_revisions(world):
    rater = world["users"]["rater"]
    assert client_for(world["users"]["manager"]).delete("/api/judging/alpha/raters/rater/").status_code == 204
    client = client_for(rater)
    assert (
        client.post(f"/api/assignments/{world['lease']}/judgement/", {"grade": 2}, format="json").status_code
        == 404
    )
    assert client.post("/api/pools/alpha/next/").status_code == 404
    response = client.patch(f"/api/judgements/{world['judgement']}/", {"grade": 0}, format="json")
    assert response.status_code == 403
    assert client.get(f"/api/judgements/{world['judgement']}/").status_code == 200  # still theirs to read

"""A JSON body nested deeper than the decoder can follow is a 400 (a parse error) on every JSON write
endpoint, the DRF views and the rater's hot path alike (`labeling.parsers.read_json`), never a 500; and it
changes nothing."""

from __future__ import annotations

import pytest

from judgements.models import Judgement, Rubric
from pooling.models import Collection, Job
from tests.conftest import client_for
from tests.factories import lease_for, make_pool, submit_for

pytestmark = pytest.mark.django_db

DEEP = b"[" * 5000 + b"]" * 5000
DEEPER = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


@pytest.fixture
def judged(rater):
    """A judgement of the rater's (grade 1), in a pool of its own."""
    assignment = lease_for(pool=make_pool(name="judged", raters=[rater]), rater=rater)
    assert assignment is not None
    return submit_for(assignment=assignment, grade=1)


@pytest.fixture
def leased(rater, judged):
    make_pool(name="deep", raters=[rater])
    return client_for(rater).post("/api/pools/deep/next/").json()["assignment"]


def endpoints(leased: int, judged: int) -> list[tuple[str, str, str]]:
    """(persona, method, url) of JSON write endpoints: DRF viewsets, the token view, the online viewset
    that names its own parsers, and the rater's plain function views."""
    return [
        ("manager", "post", "/api/rubrics/"),
        ("manager", "post", "/api/collections/"),
        ("manager", "post", "/api/releases/"),
        ("manager", "post", "/api/judging/"),
        ("manager", "post", "/api/click-logs/"),
        ("anonymous", "post", "/api/auth/token/"),
        ("rater", "patch", f"/api/judgements/{judged}/"),
        ("rater", "post", f"/api/assignments/{leased}/judgement/"),
        ("rater", "post", f"/api/assignments/{leased}/judgement-and-next/"),
    ]


@pytest.mark.parametrize("body", [DEEP, DEEPER], ids=["lists", "objects"])
def test_a_body_nested_too_deeply_is_a_400_everywhere(manager, rater, judged, leased, body):
    clients = {"manager": client_for(manager), "rater": client_for(rater), "anonymous": client_for(None)}
    for persona, method, url in endpoints(leased, judged.pk):
        answer = clients[persona].generic(method.upper(), url, body, content_type="application/json")
        assert answer.status_code == 400, (url, answer.status_code)
        assert answer.json()["detail"].startswith("JSON parse error"), url
    assert list(Judgement.objects.values_list("grade", flat=True)) == [1] and not Job.objects.exists()
    assert Rubric.objects.count() == 1 and not Collection.objects.exclude(name__startswith="c").exists()


def test_a_body_within_the_depth_is_read_as_before(rater, leased):
    api = client_for(rater)
    nested = b'{"grade": 2, "facets": {"x": ' + b"[" * 50 + b"]" * 50 + b"}}"
    answer = api.generic(
        "POST", f"/api/assignments/{leased}/judgement/", nested, content_type="application/json"
    )
    assert answer.status_code == 400 and "facets" in answer.json()  # a facet the rubric has not
    answer = api.post(f"/api/assignments/{leased}/judgement/", {"grade": 2}, format="json")
    assert answer.status_code == 201 and Judgement.objects.get(item__pool__name="deep").grade == 2


@pytest.mark.parametrize("depth", [500, 800, 900, 950, 990])
def test_no_depth_below_the_limit_is_a_500_either(manager, rater, leased, depth):
    body = b'{"name": "r", "grades": ' + b"[" * depth + b"]" * depth + b"}"
    assert (
        client_for(manager)
        .generic("POST", "/api/rubrics/", body, content_type="application/json")
        .status_code
        == 400
    )
    facets = b'{"grade": 2, "facets": {"x": ' + b"[" * depth + b"]" * depth + b"}}"
    url = f"/api/assignments/{leased}/judgement/"
    assert client_for(rater).generic("POST", url, facets, content_type="application/json").status_code == 400

"""The OpenAPI schema tells the truth: each endpoint called as a user allowed to answers a JSON body that
validates against the response schema `/api/schema/` declares for its path, method and status (`$ref`s
resolved, `nullable` honoured, no property the schema does not name); a GET declares `limit` and `offset`
exactly when its response is a page (`count`, `next`, `previous`, `results`: `labeling.pagination`), and a
list that is not paged is one of the few small by design (PLAIN_LISTS); every success but a 204 and a file
download (NOT_JSON) declares a JSON body that names what it holds."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from judgements import exclusions
from judgements.models import Judgement
from online import experiments, services, tracking
from pooling.models import Job, PoolItem
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge
from tests.online.helpers import judged_pool, pool_log
from tests.online.test_click_labels import THETA5, pages_for

pytestmark = pytest.mark.django_db

#: The GET endpoints that answer a plain array, each small and bounded by design (not a list that grows
#: with the data, which pages by the one rule).
PLAIN_LISTS = {
    "/api/judgements/{id}/history/": "the revisions of one judgement, made by its rater one at a time",
    "/api/tracker/correlation/": "one group per (offline metric, online metric) pair",
}

PAGE_FIELDS = {"count", "next", "previous", "results"}


@functools.cache
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def json_schema(node: Any, depth: int = 0) -> Any:
    """An OpenAPI 3.0 schema as the JSON Schema (draft 4, OpenAPI 3.0's) a response must satisfy: `$ref`s
    inlined, `nullable` as "or null", write-only properties neither required nor allowed, and an object
    whose properties are listed allowing no other."""
    assert depth < 40, "a schema that refers to itself"
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return json_schema(schema()["components"]["schemas"][name], depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in {"nullable", "readOnly", "writeOnly", "example", "discriminator"}:
            continue
        if key == "properties":
            out[key] = {
                name: json_schema(field, depth + 1)
                for name, field in value.items()
                if not field.get("writeOnly")
            }
        elif key in {"items", "not"} or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = json_schema(value, depth + 1)
        elif key in {"allOf", "anyOf", "oneOf"}:
            # oneOf as anyOf: formats are not checked, so '' is both a blank and an (unchecked) uri
            out["anyOf" if key == "oneOf" else key] = [json_schema(part, depth + 1) for part in value]
        else:
            out[key] = value
    if "properties" in out:
        out["required"] = [name for name in out.get("required", []) if name in out["properties"]]
        out.setdefault("additionalProperties", False)
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def declared(path: str, method: str, status: int) -> dict[str, Any] | None:
    """The JSON response schema the document declares for `path`, `method` and `status` (None: none)."""
    operation = schema()["paths"][path][method]
    response = operation["responses"].get(str(status), {})
    return response.get("content", {}).get("application/json", {}).get("schema")


def is_page(body: Any) -> bool:
    """A resolved response schema is a page of the one rule."""
    return isinstance(body, dict) and set(body.get("properties", {})) >= PAGE_FIELDS


def check(api: Any, method: str, url: str, path: str, status: int = 200, data: Any = None) -> list[str]:
    """Call `url` and validate its body against what the schema declares for `path`: the problems found."""
    response = (
        getattr(api, method)(url, data, format="json") if data is not None else getattr(api, method)(url)
    )
    where = f"{method.upper()} {url} ({path})"
    if response.status_code != status:
        return [f"{where}: answered {response.status_code}, not {status}: {response.content[:300]!r}"]
    body = declared(path, method, status)
    if body is None:
        return [f"{where}: the schema declares no JSON body for {status}"]
    resolved = json_schema(body)
    if not ({"properties", "items", "anyOf", "allOf"} & set(resolved)):
        return [f"{where}: the schema declares a free-form body: {body}"]
    errors = jsonschema.Draft4Validator(resolved).iter_errors(response.json())  # OpenAPI 3.0's draft
    return [f"{where}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors][:5]


# ------------------------------------------------------------------------------------------- worlds


@pytest.fixture
def campaign(manager, rater, second_rater) -> dict[str, Any]:
    """A pool `camp` judged twice per item (two raters disagreeing on one item, and a third, excluded,
    disagreeing too), gold, an adjudication, a revised judgement, an exclusion, a model judge run (a job of
    no collection), a second manager."""
    make_manager("helper")
    collection = make_collection(name="camp", docs=20)
    third = make_user("third")
    pool = make_pool(
        collection=collection, name="camp", judgements_per_item=2, raters=[rater, second_rater, third]
    )  # fmt: skip
    make_run(collection=collection, name="gamma", lists={"q1": ["d007", "d008"]})
    judge(pool, rater, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q2", "d010"): 2})
    judge(pool, third, {("q1", "d001"): 1})  # the disagreement that counts: second_rater is excluded
    judge(pool, second_rater, {("q1", "d001"): 0, ("q1", "d002"): 0})
    exclusions.exclude_rater(pool=pool, rater=second_rater, by=manager, reason="near chance")
    mine = Judgement.objects.filter(rater=rater).order_by("id").first()
    assert mine is not None
    item = PoolItem.objects.get(pool=pool, topic__qid="q2", document__docid="d010")
    return {"pool": pool, "collection": collection, "judgement": mine, "item": item}


@pytest.fixture
def online_world(manager, tmp_path) -> dict[str, Any]:
    """A judged pool with a release, a click log over it with a propensity estimate and a click-label set,
    an interleaving experiment of its runs and a tracked experiment."""
    from judgements import releases

    pool = judged_pool(grades={"d001": 3, "d003": 2, "d010": 1})
    docs = {"q1": ["d001", "d003", "d002", "d004"], "q2": ["d010", "d011", "d013"]}
    log = pool_log(tmp_path, pool, pages_for(docs, {"q1": [1, 2], "q2": [1]}, repeat=20))
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": THETA5})
    label_set = services.derive_click_labels(
        log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.2:1,0.6:2,0.9:3"
    )
    release = releases.create_release(pool=pool)
    experiments.create_experiment(name="ab", collection=pool.collection, run_a="alpha", run_b="beta")
    tracked = tracking.track_experiment(
        collection=pool.collection, name="beta over alpha", release=release, metric="P_5",
        baseline="alpha", treatment="beta", online_metric="ctr", online_delta=0.01,
    )  # fmt: skip
    return {"log": log, "label_set": label_set, "tracked": tracked, "pool": pool}


# -------------------------------------------------------------------------------------------- tests


def test_it_answers_the_pooling_endpoints_as_their_schema_declares(manager, campaign):
    api = client_for(manager)
    run = campaign["pool"].runs.order_by("name").first()
    problems = [
        *check(api, "get", "/api/collections/", "/api/collections/"),
        *check(api, "get", "/api/collections/camp/", "/api/collections/{name}/"),
        *check(api, "get", "/api/collections/camp/topics/", "/api/collections/{name}/topics/"),
        *check(api, "get", "/api/collections/camp/runs/", "/api/collections/{name}/runs/"),
        *check(api, "get", "/api/collections/camp/documents/?limit=5", "/api/collections/{name}/documents/"),
        *check(api, "get", "/api/collections/camp/managers/", "/api/collections/{name}/managers/"),
        *check(
            api,
            "post",
            "/api/collections/camp/managers/",
            "/api/collections/{name}/managers/",
            data={"usernames": ["helper"]},
        ),  # fmt: skip
        *check(
            api,
            "delete",
            "/api/collections/camp/managers/helper/",
            "/api/collections/{name}/managers/{username}/",
        ),  # fmt: skip
        *check(api, "get", "/api/runs/", "/api/runs/"),
        *check(api, "get", f"/api/runs/{run.pk}/", "/api/runs/{id}/"),
        *check(api, "get", f"/api/runs/{run.pk}/topics/q1/", "/api/runs/{id}/topics/{qid}/"),
        *check(api, "get", "/api/topics/", "/api/topics/"),
        *check(api, "get", "/api/documents/", "/api/documents/"),
        *check(api, "get", "/api/pools/", "/api/pools/"),
        *check(api, "get", "/api/pools/camp/", "/api/pools/{name}/"),
        *check(
            api,
            "patch",
            "/api/pools/camp/",
            "/api/pools/{name}/",
            data={"description": "edited", "instructions": "judge the answer"},
        ),  # fmt: skip
        *check(api, "get", "/api/pools/camp/statistics/", "/api/pools/{name}/statistics/"),
        *check(api, "get", "/api/pools/camp/managers/", "/api/pools/{name}/managers/"),
        *check(
            api,
            "post",
            "/api/pools/camp/managers/",
            "/api/pools/{name}/managers/",
            data={"usernames": ["helper"]},
        ),  # fmt: skip
        *check(api, "delete", "/api/pools/camp/managers/helper/", "/api/pools/{name}/managers/{username}/"),
        *check(api, "post", "/api/pools/camp/runs/", "/api/pools/{name}/runs/", data={"runs": ["gamma"]}),
        *check(api, "delete", "/api/pools/camp/runs/gamma/", "/api/pools/{name}/runs/{run_name}/"),
        *check(api, "get", "/api/jobs/", "/api/jobs/"),
    ]
    assert problems == []


def test_it_answers_the_judging_endpoints_as_their_schema_declares(manager, rater, campaign):
    api = client_for(manager)
    gold = {"qid": "q1", "docid": "d003", "grade": 2}
    decide = {"item": campaign["item"].pk, "grade": 1}
    judges = "/api/pools/{pool}/judges/"
    problems = [
        *check(api, "post", "/api/judging/camp/gold/", "/api/judging/{pool}/gold/", 201, data=gold),
        *check(api, "get", "/api/judging/camp/gold/", "/api/judging/{pool}/gold/"),
        *check(api, "get", "/api/judging/camp/stats/", "/api/judging/{pool}/stats/"),
        *check(api, "get", "/api/judging/camp/adjudication/", "/api/judging/{pool}/adjudication/"),
        *check(
            api,
            "post",
            "/api/judging/camp/adjudication/",
            "/api/judging/{pool}/adjudication/",
            201,
            data=decide,
        ),  # fmt: skip
        *check(api, "get", "/api/judging/camp/adjudications/", "/api/judging/{pool}/adjudications/"),
        *check(api, "get", "/api/judging/camp/judgements/", "/api/judging/{pool}/judgements/"),
        *check(api, "get", "/api/rater-quality/camp/exclusions/", "/api/rater-quality/{name}/exclusions/"),
        *check(
            api,
            "delete",
            "/api/rater-quality/camp/exclusions/rater2/",
            "/api/rater-quality/{name}/exclusions/{username}/",
        ),  # fmt: skip
        *check(
            api,
            "post",
            "/api/rater-quality/camp/exclusions/",
            "/api/rater-quality/{name}/exclusions/",
            201,
            data={"rater": "rater2", "reason": "again"},
        ),  # fmt: skip
        *check(api, "post", "/api/pools/camp/judges/", judges, 201, data={"name": "tf", "method": "learned"}),
        *check(api, "get", "/api/pools/camp/judges/", judges),
        *check(api, "get", "/api/pools/camp/judges/tf/", "/api/pools/{pool}/judges/{name}/"),
        *check(api, "post", "/api/pools/camp/judges/tf/run/", "/api/pools/{pool}/judges/{name}/run/", 202),
    ]
    job = Job.objects.get(kind=Job.Kind.JUDGE)
    assert job.collection is None  # a pool's job: the schema must allow it
    problems += check(api, "get", f"/api/jobs/{job.pk}/", "/api/jobs/{id}/")
    problems += check(api, "get", "/api/jobs/", "/api/jobs/")
    mine = client_for(rater)
    judgement = campaign["judgement"].pk
    problems += check(
        mine, "patch", f"/api/judgements/{judgement}/", "/api/judgements/{id}/", data={"grade": 1}
    )
    problems += check(mine, "get", f"/api/judgements/{judgement}/history/", "/api/judgements/{id}/history/")
    problems += check(mine, "get", "/api/judgements/", "/api/judgements/")
    problems += check(mine, "get", "/api/judging/", "/api/judging/")
    assert problems == []


def test_it_answers_the_online_endpoints_as_their_schema_declares(manager, online_world):
    api = client_for(manager)
    log, label_set, tracked = online_world["log"], online_world["label_set"], online_world["tracked"]
    problems = [
        *check(api, "get", "/api/click-logs/", "/api/click-logs/"),
        *check(api, "get", f"/api/click-logs/{log.pk}/", "/api/click-logs/{id}/"),
        *check(api, "get", f"/api/click-logs/{log.pk}/queries/", "/api/click-logs/{id}/queries/"),
        *check(api, "get", "/api/click-labels/", "/api/click-labels/"),
        *check(api, "get", f"/api/click-labels/{label_set.pk}/labels/", "/api/click-labels/{id}/labels/"),
        *check(api, "get", "/api/propensities/", "/api/propensities/"),
        *check(api, "get", "/api/interleaving/", "/api/interleaving/"),
        *check(api, "get", "/api/interleaving/ab/", "/api/interleaving/{name}/"),
        *check(api, "post", "/api/interleaving/ab/result/", "/api/interleaving/{name}/result/", data={}),
        *check(api, "get", "/api/interleaving/ab/result/", "/api/interleaving/{name}/result/"),
        *check(api, "patch", "/api/interleaving/ab/", "/api/interleaving/{name}/", data={"description": "x"}),
        *check(api, "get", "/api/interleaving/power/?delta=0.1", "/api/interleaving/power/"),
        *check(api, "get", "/api/tracker/", "/api/tracker/"),
        *check(api, "get", f"/api/tracker/{tracked.pk}/", "/api/tracker/{id}/"),
        *check(api, "get", "/api/tracker/correlation/", "/api/tracker/correlation/"),
        *check(
            api,
            "patch",
            f"/api/tracker/{tracked.pk}/",
            "/api/tracker/{id}/",
            data={"online_metric": "ctr", "online_delta": 0.02},
        ),
        *check(
            api, "post", f"/api/click-labels/{label_set.pk}/release/", "/api/click-labels/{id}/release/", 201
        ),  # fmt: skip
    ]
    assert problems == []


#: The operations whose success is not a JSON body, each a file download. Every other success (but a
#: 204, which has no body) declares a JSON schema that names what it holds.
NOT_JSON = {
    ("get", "/api/pools/{name}/export/"): "the items, a `qid<TAB>docid<TAB>runs` line each (text/plain)",
    ("get", "/api/releases/{id}/files/{filename}/"): "a release's file (qrels, JSONL, manifest) as is",
}


def test_it_declares_what_every_success_answers_but_the_file_downloads():
    wrong, downloads = [], set()
    for path, operations in schema()["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                body = declared(path, method, int(status))
                if body is None and (method, path) in NOT_JSON:
                    downloads.add((method, path))
                elif body is None:
                    wrong.append(f"{method.upper()} {path} {status}: no JSON body ({response})")
                elif not described(json_schema(body)):
                    wrong.append(f"{method.upper()} {path} {status}: a free-form body {body}")
    assert wrong == []
    assert downloads == set(NOT_JSON)  # the allow-list names no operation that has gone or answers JSON


def described(resolved: dict[str, Any]) -> bool:
    """A resolved schema says what it holds: properties, items, a schema for every value, or parts."""
    holds = {key for key in ("properties", "items", "anyOf", "allOf") if key in resolved}
    return bool(holds) or bool(resolved.get("additionalProperties"))


def test_it_declares_limit_and_offset_exactly_where_the_response_is_a_page():
    wrong = []
    for path, operations in schema()["paths"].items():
        for method, operation in operations.items():
            query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            paged = any(
                is_page(json_schema(body))
                for status in operation["responses"]
                if status.startswith("2") and (body := declared(path, method, int(status))) is not None
            )
            if paged != ({"limit", "offset"} <= query) or (not paged and query & {"limit", "offset"}):
                wrong.append(f"{method.upper()} {path}: paged {paged}, query parameters {sorted(query)}")
            if paged and method != "get":
                wrong.append(f"{method.upper()} {path}: a page answering a {method.upper()}")
    assert wrong == []


def test_it_pages_every_list_but_the_few_small_by_design():
    plain = set()
    for path, operations in schema()["paths"].items():
        body = declared(path, "get", 200) if "get" in operations else None
        if body is not None and json_schema(body).get("type") == "array":
            plain.add(path)
    assert plain == set(PLAIN_LISTS)


def test_it_answers_a_page_by_the_one_rule_on_the_lists_that_were_bare(manager, campaign, online_world):
    """The lists that answered a bare array or `{"results"}` without a count page like every other."""
    api = client_for(manager)
    make_run(collection=online_world["pool"].collection, name="gamma", lists={"q1": ["d001"]})
    experiments.create_experiment(name="ab2", collection=online_world["pool"].collection, run_a="alpha",
                                  run_b="gamma")  # fmt: skip
    api.post("/api/pools/camp/judges/", {"name": "one", "method": "learned"}, format="json")
    api.post("/api/pools/camp/judges/", {"name": "two", "method": "learned"}, format="json")
    for url, total in (
        ("/api/interleaving/", 2),
        ("/api/tracker/", 1),
        ("/api/pools/camp/judges/", 2),
        ("/api/rater-quality/camp/exclusions/", 1),
        ("/api/judging/camp/gold/", 0),
        ("/api/judging/camp/stats/", 3),
        ("/api/judging/camp/adjudication/", 1),
        ("/api/judging/camp/adjudications/", 0),
    ):
        page = api.get(f"{url}?limit=1").json()
        assert isinstance(page, dict) and set(page) == PAGE_FIELDS and page["count"] == total, (url, page)
        assert len(page["results"]) == min(total, 1), url
        assert api.get(f"{url}?limit=abc").status_code == 400, url
    second = api.get("/api/interleaving/?limit=1&offset=1").json()["results"]
    first = api.get("/api/interleaving/?limit=1").json()["results"]
    assert {first[0]["name"], second[0]["name"]} == {"ab", "ab2"}


def test_it_answers_a_refused_build_as_its_schema_declares(manager, campaign):
    """A build asked while one is under way: 409 with why and the job building the pool (the schema once
    declared a bare job there)."""
    pool = campaign["pool"]
    Job.objects.create(
        kind=Job.Kind.BUILD_POOL, status=Job.Status.RUNNING, collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name}, created_by=manager,
    )  # fmt: skip
    problems = check(
        client_for(manager), "post", "/api/pools/camp/build/", "/api/pools/{name}/build/", status=409, data={}
    )
    assert problems == []

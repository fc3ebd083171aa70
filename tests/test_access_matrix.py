"""Who may and who may not, on every route of the URLconf: personas × routes, against a declared table.

Two pools, A and B, each with its own collection, managers and raters. Every route of `get_resolver()` is
requested by seven personas (anonymous, an outsider, a rater of A, a rater of B, a manager of A, a
manager of B, an admin), with the ids of pool A's objects, and the answer is compared with the table
below. A route the table does not name fails `test_every_route_has_an_entry`: a new route cannot land
without saying who may use it.

How to read an expected row: seven codes in persona order (PERSONAS). `L` is a redirect to a login page
(the anonymous user on a page, anyone without staff rights on the admin). Writes run inside a savepoint
that is rolled back after each request, so each persona meets the same data (and nothing is enqueued:
on-commit callbacks never run inside the test's transaction).

The API's `.json` format-suffix twin of a route is the same view and shares its entry. The admin's
routes are declared per model (ADMIN_MODELS) and per site view (ADMIN_SITE): the manager of B is a staff
user with every permission on the pooling, judging and online models, so the admin's own scoping
(ScopedAdmin) is what keeps pool A from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from judgements import adjudication, releases
from judgements.judges import create_judge
from judgements.models import Adjudication, Assignment, GoldLabel, Judgement, Judging, Release
from online import experiments, impressions, serving, tracking
from pooling.models import Document, Job, Pool, PoolItem, Run, Topic
from pooling.permissions import MANAGERS_GROUP
from tests.factories import lease_for, make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

PERSONAS = ("anonymous", "outsider", "rater_a", "rater_b", "manager_a", "manager_b", "admin")


@dataclass(frozen=True)
class Call:
    """One request: method, URL (a format string over the ids of pool A), body, and the expected codes."""

    method: str
    url: str
    expect: str
    data: dict[str, Any] | None = None
    multipart: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def codes(self) -> tuple[str, ...]:
        codes = tuple(self.expect.split())
        assert len(codes) == len(PERSONAS), self
        return codes


# Rows that recur: who reads a manager page / an API endpoint of pool A, and the lists every manager has.
PAGE_A = "L 403 403 403 200 404 200"
API_A = "401 403 403 403 200 404 200"
MANAGER_PAGE = "L 403 403 403 200 200 200"
MANAGER_API = "401 403 403 403 200 200 200"
ANY_USER_API = "401 200 200 200 200 200 200"
RATER_A_API = "401 404 200 404 404 404 404"
EVERYONE = "200 200 200 200 200 200 200"

ROUTES: dict[str, list[Call]] = {
    # --- accounts (public pages; logout is POST only, so a GET is refused for everyone)
    "login": [Call("get", "/accounts/login/", EVERYONE)],
    "logout": [Call("get", "/accounts/logout/", "405 405 405 405 405 405 405")],
    "password_change": [Call("get", "/accounts/password_change/", "L 200 200 200 200 200 200")],
    "password_change_done": [Call("get", "/accounts/password_change/done/", "L 200 200 200 200 200 200")],
    "password_reset": [Call("get", "/accounts/password_reset/", EVERYONE)],
    "password_reset_done": [Call("get", "/accounts/password_reset/done/", EVERYONE)],
    "password_reset_confirm": [Call("get", "/accounts/reset/x/y-z/", EVERYONE)],
    "password_reset_complete": [Call("get", "/accounts/reset/done/", EVERYONE)],
    # --- API plumbing
    "ping": [Call("get", "/api/ping/", ANY_USER_API)],
    "auth-token": [Call("post", "/api/auth/token/", "400 400 400 400 400 400 400", data={})],
    "api-root": [Call("get", "/api/", ANY_USER_API)],
    # the schema and its documentation page are public (they list endpoints, never data)
    "schema": [Call("get", "/api/schema/", EVERYONE)],
    "api-docs": [Call("get", "/api/docs/", EVERYONE)],
    # --- collections, topics, documents, runs, jobs
    "collection-list": [
        Call("get", "/api/collections/", MANAGER_API),
        Call("post", "/api/collections/", "401 403 403 403 201 201 201", data={"name": "fresh"}),
    ],
    "collection-detail": [
        Call("get", "/api/collections/{collection}/", API_A),
        # collection A has pool A, click logs and experiments: its managers are told it is not deleted (409)
        Call("delete", "/api/collections/{collection}/", "401 403 403 403 409 404 409"),
    ],
    "collection-documents": [Call("get", "/api/collections/{collection}/documents/", API_A)],
    "collection-topics": [Call("get", "/api/collections/{collection}/topics/", API_A)],
    "collection-runs": [Call("get", "/api/collections/{collection}/runs/", API_A)],
    "collection-imports": [
        Call(
            "post",
            "/api/collections/{collection}/imports/",
            "401 403 403 403 202 404 202",
            data={"kind": "topics", "format": "tsv"},
            multipart=True,
        ),
    ],  # fmt: skip
    "collection-managers": [
        Call("get", "/api/collections/{collection}/managers/", API_A),
        Call("post", "/api/collections/{collection}/managers/", API_A, data={"usernames": ["manager-b"]}),
    ],
    "collection-remove-manager": [
        Call("delete", "/api/collections/{collection}/managers/manager-a2/", API_A),
    ],
    "topic-list": [Call("get", "/api/topics/", MANAGER_API)],
    "topic-detail": [Call("get", "/api/topics/{topic}/", API_A)],
    "document-list": [Call("get", "/api/documents/", MANAGER_API)],
    "document-detail": [Call("get", "/api/documents/{document}/", API_A)],
    "run-list": [Call("get", "/api/runs/", MANAGER_API)],
    "run-detail": [
        Call("get", "/api/runs/{run}/", API_A),
        Call("delete", "/api/runs/{run}/", "401 403 403 403 204 404 204"),
    ],
    "run-ranked-list": [Call("get", "/api/runs/{run}/topics/q1/", API_A)],
    "job-list": [Call("get", "/api/jobs/", MANAGER_API)],
    "job-detail": [Call("get", "/api/jobs/{job}/", API_A)],
    # the job is done: only a failed job is retried (409 for those who may)
    "job-retry": [Call("post", "/api/jobs/{job}/retry/", "401 403 403 403 409 404 409")],
    # --- pools
    "pool-list": [
        Call("get", "/api/pools/", MANAGER_API),
        # over collection A: the manager of B is told it does not exist (400 naming `collection`)
        Call(
            "post",
            "/api/pools/",
            "401 403 403 403 201 400 201",
            data={"name": "fresh", "collection": "{collection}", "runs": ["alpha"]},
        ),
    ],  # fmt: skip
    "pool-detail": [
        Call("get", "/api/pools/{pool}/", API_A),
        Call("patch", "/api/pools/{pool}/", API_A, data={"description": "edited"}),
        # pool A has judgements, gold and a release: its managers are told it is not deleted (409)
        Call("delete", "/api/pools/{pool}/", "401 403 403 403 409 404 409"),
    ],
    "pool-build": [Call("post", "/api/pools/{pool}/build/", "401 403 403 403 202 404 202")],
    "pool-add-runs": [Call("post", "/api/pools/{pool}/runs/", API_A, data={"runs": ["gamma"]})],
    "pool-remove-run": [Call("delete", "/api/pools/{pool}/runs/beta/", API_A)],
    "pool-statistics": [Call("get", "/api/pools/{pool}/statistics/", API_A)],
    "pool-export": [Call("get", "/api/pools/{pool}/export/", API_A)],
    "pool-managers": [
        Call("get", "/api/pools/{pool}/managers/", API_A),
        Call("post", "/api/pools/{pool}/managers/", API_A, data={"usernames": ["manager-b"]}),
    ],
    "pool-remove-manager": [Call("delete", "/api/pools/{pool}/managers/manager-a2/", API_A)],
    # --- the rater's API (a manager of A who does not rate it is told so: 403)
    "judging-pool-next": [Call("post", "/api/pools/{pool}/next/", "401 404 200 404 403 404 403")],
    "assignment-list": [Call("get", "/api/assignments/", ANY_USER_API)],
    "assignment-detail": [Call("get", "/api/assignments/{assignment}/", RATER_A_API)],
    "assignment-judgement": [
        Call(
            "post",
            "/api/assignments/{assignment}/judgement/",
            "401 404 201 404 404 404 404",
            data={"grade": 1},
        ),
    ],  # fmt: skip
    "assignment-judgement-and-next": [
        Call(
            "post",
            "/api/assignments/{assignment}/judgement-and-next/",
            "401 404 201 404 404 404 404",
            data={"grade": 1},
        ),
    ],  # fmt: skip
    "assignment-skip": [Call("post", "/api/assignments/{assignment}/skip/", "401 404 204 404 404 404 404")],
    "judgement-list": [Call("get", "/api/judgements/", ANY_USER_API)],
    "judgement-detail": [
        Call("get", "/api/judgements/{judgement}/", RATER_A_API),
        Call("patch", "/api/judgements/{judgement}/", RATER_A_API, data={"grade": 0}),
    ],
    "judgement-history": [Call("get", "/api/judgements/{judgement}/history/", RATER_A_API)],
    # --- judging campaigns (rubrics are shared by every manager)
    "rubric-list": [
        Call("get", "/api/rubrics/", MANAGER_API),
        Call("post", "/api/rubrics/", "401 403 403 403 201 201 201", data={"name": "fresh"}),
    ],
    "rubric-default": [Call("post", "/api/rubrics/default/", MANAGER_API)],
    "rubric-detail": [Call("get", "/api/rubrics/{rubric}/", MANAGER_API)],
    "judging-list": [
        Call("get", "/api/judging/", ANY_USER_API),
        Call("post", "/api/judging/", "401 403 403 403 200 400 200", data={"pool": "{pool}"}),
    ],
    "judging-detail": [
        Call("get", "/api/judging/{pool}/", "401 404 200 404 200 404 200"),
        Call("patch", "/api/judging/{pool}/", API_A, data={"lease_minutes": 20}),
    ],
    "judging-raters": [
        Call("post", "/api/judging/{pool}/raters/", API_A, data={"usernames": ["outsider"]}),
        # a rater named in the query: any name (a path segment holds neither `..` nor `a/b`)
        Call("delete", "/api/judging/{pool}/raters/?username=rater-a", "401 403 403 403 204 404 204"),
    ],
    "judging-remove-rater": [
        Call("delete", "/api/judging/{pool}/raters/rater-a/", "401 403 403 403 204 404 204")
    ],
    "judging-gold": [
        Call("get", "/api/judging/{pool}/gold/", API_A),
        Call(
            "post",
            "/api/judging/{pool}/gold/",
            "401 403 403 403 201 404 201",
            data={"qid": "q2", "docid": "d010", "grade": 2},
        ),
    ],  # fmt: skip
    "judging-remove-gold": [
        Call("delete", "/api/judging/{pool}/gold/{gold_item}/", "401 403 403 403 204 404 204")
    ],
    "judging-stats": [Call("get", "/api/judging/{pool}/stats/", API_A)],
    "judging-adjudication": [
        Call("get", "/api/judging/{pool}/adjudication/", API_A),
        Call(
            "post",
            "/api/judging/{pool}/adjudication/",
            "401 403 403 403 201 404 201",
            data={"item": "{judged_item}", "grade": 1},
        ),
    ],  # fmt: skip
    "judging-adjudications": [Call("get", "/api/judging/{pool}/adjudications/", API_A)],
    "judging-judgements": [Call("get", "/api/judging/{pool}/judgements/", API_A)],
    # the upload is no crowd file (its header names no worker): 400 with the file's errors, for those who may
    "judging-crowd-imports": [
        Call("post", "/api/judging/{pool}/crowd-imports/", "401 403 403 403 400 404 400", multipart=True),
    ],
    # --- releases, agreement, evaluation
    "release-list": [
        Call("get", "/api/releases/", MANAGER_API),
        Call("post", "/api/releases/", "401 403 403 403 202 400 202", data={"pool": "{pool}"}),
    ],
    "release-detail": [Call("get", "/api/releases/{release}/", API_A)],
    "release-files": [Call("get", "/api/releases/{release}/files/qrels.txt/", API_A)],
    "agreement-detail": [Call("get", "/api/agreement/{pool}/", API_A)],
    "rater-quality-detail": [Call("get", "/api/rater-quality/{pool}/", API_A)],
    "rater-quality-exclusions": [
        Call("get", "/api/rater-quality/{pool}/exclusions/", API_A),
        Call(
            "post",
            "/api/rater-quality/{pool}/exclusions/",
            "401 403 403 403 201 404 201",
            data={"rater": "rater-a"},
        ),
        Call("delete", "/api/rater-quality/{pool}/exclusions/?rater=rater-a", "401 403 403 403 400 404 400"),
    ],
    "rater-quality-restore": [
        Call("delete", "/api/rater-quality/{pool}/exclusions/rater-a/", "401 403 403 403 400 404 400"),
    ],
    "evaluation-report": [Call("get", "/api/evaluation/{pool}/report/", API_A)],
    "evaluation-pool-bias": [Call("get", "/api/evaluation/{pool}/pool-bias/", API_A)],
    "evaluation-two-stage": [
        Call("get", "/api/evaluation/{pool}/two-stage/?candidate=alpha&reranked=beta", API_A),
    ],
    "pool-judges-list": [
        Call("get", "/api/pools/{pool}/judges/", API_A),
        Call(
            "post",
            "/api/pools/{pool}/judges/",
            "401 403 403 403 201 404 201",
            data={"name": "new", "method": "learned"},
        ),
    ],
    "pool-judges-detail": [Call("get", "/api/pools/{pool}/judges/{judge}/", API_A)],
    "pool-judges-run": [Call("post", "/api/pools/{pool}/judges/{judge}/run/", "401 403 403 403 202 404 202")],
    "pool-judges-threshold": [
        Call("put", "/api/pools/{pool}/judges/threshold/", API_A, data={"gate_kappa": 0.5})
    ],
    "evaluation-noise-floor": [
        Call("get", "/api/evaluation/{pool}/noise-floor/?topic_samples=20&label_samples=5&splits=2", API_A),
    ],
    # --- online signals: click logs, propensities, click labels (managers of the log's collection or pool)
    "click-log-list": [
        Call("get", "/api/click-logs/", MANAGER_API),
        # a bad counts file: 400 naming `file`; the manager of B names a collection not theirs: 400 too
        Call(
            "post",
            "/api/click-logs/",
            "401 403 403 403 400 400 400",
            data={"collection": "{collection}", "name": "new-log", "format": "counts"},
            multipart=True,
        ),
    ],  # fmt: skip
    "click-log-detail": [Call("get", "/api/click-logs/{click_log}/", API_A)],
    "click-log-queries": [Call("get", "/api/click-logs/{click_log}/queries/", API_A)],
    "click-log-propensities": [
        Call(
            "post",
            "/api/click-logs/{click_log}/propensities/",
            "401 403 403 403 202 404 202",
            data={"method": "em"},
        ),
    ],  # fmt: skip
    "click-log-labels": [
        Call(
            "post",
            "/api/click-logs/{click_log}/labels/",
            "401 403 403 403 202 404 202",
            data={"estimator": "coec"},
        ),
    ],  # fmt: skip
    "propensity-list": [Call("get", "/api/propensities/", MANAGER_API)],
    "propensity-detail": [Call("get", "/api/propensities/{propensity}/", API_A)],
    "click-label-set-list": [Call("get", "/api/click-labels/", MANAGER_API)],
    "click-label-set-detail": [Call("get", "/api/click-labels/{click_labels}/", API_A)],
    "click-label-set-label-rows": [Call("get", "/api/click-labels/{click_labels}/labels/", API_A)],
    "click-label-set-release": [
        Call("post", "/api/click-labels/{click_labels}/release/", "401 403 403 403 201 404 201"),
    ],
    "online:logs": [Call("get", "/online/logs/", MANAGER_PAGE)],
    # the upload: B's manager is not offered A's collection (400 beside the field); the test's file is no
    # JSONL of impressions, so A's manager and the admin get it back with its errors by line (400)
    "online:log-upload": [
        Call("get", "/online/logs/upload/", MANAGER_PAGE),
        Call(
            "post",
            "/online/logs/upload/",
            "L 403 403 403 400 400 400",
            data={
                "collection": "{admin_pooling_collection}",
                "name": "fresh",
                "format": "jsonl",
                "ordinal_base": "1",
            },
            multipart=True,
        ),
    ],
    "online:log": [Call("get", "/online/logs/{click_log}/", PAGE_A)],
    "online:estimate": [
        Call(
            "post",
            "/online/logs/{click_log}/propensities/",
            "L 403 403 403 302 404 302",
            data={"method": "em"},
        ),
    ],
    "online:derive": [
        Call(
            "post",
            "/online/logs/{click_log}/labels/",
            "L 403 403 403 302 404 302",
            data={"estimator": "coec"},
        ),
    ],
    "online:propensity": [Call("get", "/online/propensities/{propensity}/", PAGE_A)],
    "online:labels": [Call("get", "/online/labels/{click_labels}/", PAGE_A)],
    "online:release": [Call("post", "/online/labels/{click_labels}/release/", "L 403 403 403 302 404 302")],
    "online:release-file": [
        Call("get", "/online/labels/{click_labels}/releases/{click_release}/click-qrels.txt", PAGE_A)
    ],
    # --- interleaving and the offline-online tracker (the search path: the experiment's clients and the
    # managers of its collection; everyone else is told it does not exist)
    "interleaving-list": [
        Call("get", "/api/interleaving/", MANAGER_API),
        Call(
            "post",
            "/api/interleaving/",
            "401 403 403 403 201 400 201",
            data={"name": "fresh", "collection": "{collection}", "run_a": "alpha", "run_b": "beta"},
        ),
    ],  # fmt: skip
    "interleaving-detail": [
        Call("get", "/api/interleaving/{interleaving}/", API_A),
        Call("patch", "/api/interleaving/{interleaving}/", API_A, data={"active": False}),
    ],
    "interleaving-ranking": [
        Call(
            "get", "/api/interleaving/{interleaving}/ranking/?qid=q1&user=u1", "401 404 404 404 200 404 200"
        ),
    ],
    "interleaving-impressions": [
        Call(
            "post",
            "/api/interleaving/{interleaving}/impressions/",
            "401 404 404 404 201 404 201",
            data={
                "qid": "q1",
                "user": "u1",
                "docids": ["{shown_0}", "{shown_1}", "{shown_2}"],
                "teams": ["{team_0}", "{team_1}", "{team_2}"],
                "clicks": [1],
            },
        ),
    ],  # fmt: skip
    "interleaving-result": [
        Call("get", "/api/interleaving/{interleaving}/result/", API_A),
        Call("post", "/api/interleaving/{interleaving}/result/", API_A),
    ],
    "interleaving-power": [Call("get", "/api/interleaving/power/?delta=0.05", MANAGER_API)],
    "tracker-list": [
        Call("get", "/api/tracker/", MANAGER_API),
        Call(
            "post",
            "/api/tracker/",
            "401 403 403 403 201 400 201",
            data={
                "collection": "{collection}",
                "name": "fresh",
                "release": "{release}",
                "baseline": "alpha",
                "treatment": "beta",
            },
        ),
    ],  # fmt: skip
    "tracker-detail": [
        Call("get", "/api/tracker/{tracked}/", API_A),
        Call("patch", "/api/tracker/{tracked}/", API_A, data={"online_metric": "ctr", "online_delta": 0.1}),
        Call("delete", "/api/tracker/{tracked}/", "401 403 403 403 204 404 204"),
    ],
    "tracker-correlation": [Call("get", "/api/tracker/correlation/", MANAGER_API)],
    # the test's upload is not a TSV of online deltas (400 file) or not of a collection B manages (400)
    "tracker-import-deltas": [
        Call(
            "post",
            "/api/tracker/import/",
            "401 403 403 403 400 400 400",
            data={"collection": "{collection}"},
            multipart=True,
        ),
    ],  # fmt: skip
    "online:interleaving-list": [Call("get", "/online/interleaving/", MANAGER_PAGE)],
    "online:interleaving": [Call("get", "/online/interleaving/{interleaving}/", PAGE_A)],
    "online:interleaving-compute": [
        Call("post", "/online/interleaving/{interleaving}/compute/", "L 403 403 403 302 404 302"),
    ],
    "online:tracker": [Call("get", "/online/tracker/", MANAGER_PAGE)],
    "online:tracker-online": [
        Call("get", "/online/tracker/{tracked}/online/", PAGE_A),
        Call(
            "post",
            "/online/tracker/{tracked}/online/",
            "L 403 403 403 302 404 302",
            data={"online_metric": "ctr", "online_delta": "0.1"},
        ),
    ],
    # the forms: B's manager is offered only B's collection, and posting A's is refused beside the field
    "online:interleaving-new": [
        Call("get", "/online/new-interleaving/?collection={collection}", MANAGER_PAGE),
        Call(
            "post",
            "/online/new-interleaving/",
            "L 403 403 403 302 400 302",
            data={
                "name": "fresh",
                "collection": "{collection}",
                "run_a": "alpha",
                "run_b": "beta",
                "length": "3",
                "clients": "",
            },
        ),
    ],  # fmt: skip
    "online:tracker-new": [
        Call("get", "/online/tracker/new/?collection={collection}", MANAGER_PAGE),
        Call(
            "post",
            "/online/tracker/new/",
            "L 403 403 403 302 400 302",
            data={
                "collection": "{collection}",
                "name": "fresh",
                "release": "{release}",
                "baseline": "alpha",
                "treatment": "beta",
            },
        ),
    ],  # fmt: skip
    # --- manager pages
    "pooling:pool-list": [Call("get", "/pools/", MANAGER_PAGE)],
    "pooling:pool-detail": [Call("get", "/pools/{pool}/", PAGE_A)],
    "pooling:pool-build": [Call("post", "/pools/{pool}/build/", "L 403 403 403 302 404 302")],
    "jobs:job-detail": [Call("get", "/jobs/{job}/", PAGE_A)],
    # the job is done: refused with a message, back to its page
    "jobs:job-retry": [Call("post", "/jobs/{job}/retry/", "L 403 403 403 302 404 302")],
    "pooling:pool-managers": [
        Call("post", "/pools/{pool}/managers/", "L 403 403 403 302 404 302", data={"username": "manager-b"}),
    ],
    "setup:collections": [
        Call("get", "/collections/", MANAGER_PAGE),
        Call("post", "/collections/", "L 403 403 403 302 302 302", data={"name": "fresh"}),
    ],
    "setup:collection": [
        Call("get", "/collections/{collection}/", PAGE_A),
        # an upload: a job, and a redirect to its page
        Call(
            "post",
            "/collections/{collection}/",
            "L 403 403 403 302 404 302",
            data={"kind": "topics", "format": "tsv"},
            multipart=True,
        ),
    ],  # fmt: skip
    "setup:pool-create": [
        Call("get", "/collections/{collection}/pools/new/", PAGE_A),
        Call(
            "post",
            "/collections/{collection}/pools/new/",
            "L 403 403 403 302 404 302",
            data={
                "name": "fresh",
                "runs": ["{run}"],
                "strategy": "depth",
                "depth": "5",
                "judgements_per_item": "1",
                "price_per_judgement": "1",
            },
        ),
    ],  # fmt: skip
    "setup:pool-preview": [Call("get", "/collections/{collection}/pools/preview/", PAGE_A)],
    "setup:collection-managers": [
        Call(
            "post",
            "/collections/{collection}/managers/",
            "L 403 403 403 302 404 302",
            data={"username": "manager-b"},
        ),
    ],
    # collection A has pool A: the page says why it is not deleted; a POST is refused with a message
    "setup:collection-delete": [
        Call("get", "/collections/{collection}/delete/", PAGE_A),
        Call("post", "/collections/{collection}/delete/", "L 403 403 403 302 404 302"),
    ],
    "setup:delete-run": [
        Call("get", "/collections/{collection}/runs/gamma/delete/", PAGE_A),
        Call("post", "/collections/{collection}/runs/gamma/delete/", "L 403 403 403 302 404 302"),
    ],
    "setup:remove-run": [
        Call("get", "/pools/{pool}/runs/beta/remove/", PAGE_A),
        Call("post", "/pools/{pool}/runs/beta/remove/", "L 403 403 403 302 404 302"),
    ],
    "setup:pool-edit": [
        Call("get", "/pools/{pool}/edit/", PAGE_A),
        Call(
            "post",
            "/pools/{pool}/edit/",
            "L 403 403 403 302 404 302",
            data={"description": "edited", "instructions": "judge the answer"},
        ),
    ],  # fmt: skip
    # pool A is judged: the page says why it is not deleted; a POST is refused with a message (302 back)
    "setup:pool-delete": [
        Call("get", "/pools/{pool}/delete/", PAGE_A),
        Call("post", "/pools/{pool}/delete/", "L 403 403 403 302 404 302"),
    ],
    "setup:add-runs": [Call("get", "/pools/{pool}/runs/add/", PAGE_A)],
    "setup:add-runs-preview": [Call("get", "/pools/{pool}/runs/preview/", PAGE_A)],
    "judging-setup:judging": [Call("get", "/pools/{pool}/judging/", PAGE_A)],
    # rubrics are shared by every manager, as in the API
    "rubrics:list": [Call("get", "/rubrics/", MANAGER_PAGE)],
    "rubrics:detail": [Call("get", "/rubrics/{rubric}/", MANAGER_PAGE)],
    "rubrics:create": [
        Call("get", "/rubrics/new/", MANAGER_PAGE),
        Call("post", "/rubrics/new/", "L 403 403 403 302 302 302", data={"name": "fresh"}),
    ],
    "judging-manage:index": [Call("get", "/manage/", MANAGER_PAGE)],
    "judging-manage:dashboard": [Call("get", "/manage/dashboard/", MANAGER_PAGE)],
    "judging-manage:stats": [Call("get", "/manage/pools/{pool}/", PAGE_A)],
    "judging-manage:gold": [
        Call("get", "/manage/pools/{pool}/gold/", PAGE_A),
        Call(
            "post",
            "/manage/pools/{pool}/gold/",
            "L 403 403 403 302 404 302",
            data={"qid": "q2", "docid": "d010", "grade": 2},
        ),
    ],  # fmt: skip
    "judging-manage:remove-gold": [
        Call("post", "/manage/pools/{pool}/gold/{gold_item}/remove/", "L 403 403 403 302 404 302"),
    ],
    # the page's buttons: the rater's id posted (rater-a has judged in A; outside A's raters it is a 404)
    "judging-manage:exclude": [
        Call(
            "post",
            "/manage/pools/{pool}/raters/exclude/",
            "L 403 403 403 302 404 302",
            data={"rater": "{rater_a}"},
        ),
        Call(
            "post",
            "/manage/pools/{pool}/raters/exclude/",
            "L 403 403 403 404 404 404",
            data={"rater": "{rater_b}"},
        ),
    ],
    "judging-manage:restore": [
        Call(
            "post",
            "/manage/pools/{pool}/raters/restore/",
            "L 403 403 403 302 404 302",
            data={"rater": "{rater_a}"},
        ),
    ],
    "judging-manage:exclude-rater": [
        Call("post", "/manage/pools/{pool}/raters/rater-a/exclude/", "L 403 403 403 302 404 302"),
    ],
    "judging-manage:restore-rater": [
        Call("post", "/manage/pools/{pool}/raters/rater-a/restore/", "L 403 403 403 302 404 302"),
    ],
    "judging-manage:adjudication": [Call("get", "/manage/pools/{pool}/adjudication/", PAGE_A)],
    "judging-manage:adjudicate": [
        Call(
            "post",
            "/manage/pools/{pool}/adjudication/{judged_item}/",
            "L 403 403 403 302 404 302",
            data={"decision": "1", "note": ""},
        ),
    ],  # fmt: skip
    "judging-manage:crowd-import": [
        Call("get", "/manage/pools/{pool}/crowd/", PAGE_A),
        Call("post", "/manage/pools/{pool}/crowd/", "L 403 403 403 400 404 400", multipart=True),
    ],
    "judging-manage:history": [Call("get", "/manage/pools/{pool}/items/{judged_item}/history/", PAGE_A)],
    "campaigns:agreement": [Call("get", "/campaigns/{pool}/agreement/", PAGE_A)],
    "campaigns:releases": [Call("get", "/campaigns/{pool}/releases/", PAGE_A)],
    "campaigns:release-create": [
        Call(
            "post",
            "/campaigns/{pool}/releases/new/",
            "L 403 403 403 302 404 302",
            data={"policy": "majority"},
        ),
    ],
    "campaigns:release": [Call("get", "/campaigns/{pool}/releases/{release}/", PAGE_A)],
    "campaigns:release-file": [Call("get", "/campaigns/{pool}/releases/{release}/qrels.txt", PAGE_A)],
    "evaluation:report": [Call("get", "/evaluation/{pool}/", PAGE_A)],
    "evaluation:pool-bias": [Call("get", "/evaluation/{pool}/pool-bias/", PAGE_A)],
    "evaluation:two-stage": [Call("get", "/evaluation/{pool}/two-stage/", PAGE_A)],
    "evaluation:noise-floor": [Call("get", "/evaluation/{pool}/noise-floor/", PAGE_A)],
    "evaluation:judges": [
        Call("get", "/evaluation/{pool}/judges/", PAGE_A),
        Call(
            "post",
            "/evaluation/{pool}/judges/",
            "L 403 403 403 302 404 302",
            data={
                "name": "new",
                "method": "learned",
                "seed": 0,
                "folds": 5,
                "timeout_seconds": 30,
                "retries": 1,
            },
        ),
    ],
    "evaluation:judge": [Call("get", "/evaluation/{pool}/judges/{judge}/", PAGE_A)],
    "evaluation:judge-run": [
        Call("post", "/evaluation/{pool}/judges/{judge}/run/", "L 403 403 403 302 404 302")
    ],
    # --- rater pages (nobody but a rater of A, managers and admins included)
    "judgements:home": [Call("get", "/", "L 200 200 200 200 200 200")],
    "judgements:judge": [Call("get", "/judge/{pool}/", "L 404 200 404 404 404 404")],
    "judgements:submit": [
        Call(
            "post",
            "/judge/{pool}/submit/",
            "L 404 302 404 404 404 404",
            data={"assignment": "{assignment}", "grade": "1"},
        ),
    ],  # fmt: skip
    "judgements:skip": [
        Call("post", "/judge/{pool}/skip/", "L 404 302 404 404 404 404", data={"assignment": "{assignment}"}),
    ],
    "judgements:revise": [Call("get", "/judge/{pool}/revise/", "L 404 200 404 404 404 404")],
    "judgements:progress": [Call("get", "/judge/{pool}/progress/", "L 404 200 404 404 404 404")],
}

# The admin, per model: `scoped` models show the manager of B (staff) only pool B's rows, so pool A's
# object is "not found" for them (a redirect to the admin index, 302); `shared` ones (rubrics) every
# staff user with the permission reads; `superuser` ones only admins (403 for the staff manager).
ADMIN_MODELS = {
    "pooling.collection": "scoped", "pooling.document": "scoped", "pooling.topic": "scoped",
    "pooling.run": "scoped", "pooling.job": "scoped", "pooling.pool": "scoped",
    "judgements.judging": "scoped", "judgements.assignment": "scoped", "judgements.judgement": "scoped",
    "judgements.goldlabel": "scoped", "judgements.adjudication": "scoped", "judgements.rubric": "shared",
    "judgements.judge": "scoped",
    "auth.user": "superuser", "auth.group": "superuser", "authtoken.tokenproxy": "superuser",
    "axes.accessattempt": "superuser", "axes.accesslog": "superuser", "axes.accessfailurelog": "superuser",
    "online.clicklog": "scoped", "online.propensityestimate": "scoped", "online.clicklabelset": "scoped",
    "online.interleavingexperiment": "scoped", "online.interleavedimpression": "scoped",
    "online.interleavingresult": "scoped", "online.trackedexperiment": "scoped",
}  # fmt: skip
# What the project's admin closes to everyone: adding these rows, deleting those (services keep them).
NO_ADD = {
    "online.clicklog", "online.propensityestimate", "online.clicklabelset",
    "online.interleavingexperiment", "online.interleavedimpression", "online.interleavingresult",
    "online.trackedexperiment",
    "judgements.assignment", "judgements.judgement", "judgements.adjudication", "judgements.judge",
    "axes.accessattempt", "axes.accesslog", "axes.accessfailurelog",
}  # fmt: skip
NO_DELETE = {
    "judgements.judge",
    "judgements.assignment",
    "judgements.judgement",
    "judgements.rubric",
}  # pool A's rubric is judged
# Rows that are not this project's (tokens, django-axes' logs) are asked for with an id that does not
# exist: an admin is sent back to the index (302); the staff manager is refused (403), except on the
# history page, which Django answers with that redirect before it checks permissions.
MISSING = {"authtoken.tokenproxy", "axes.accessattempt", "axes.accesslog", "axes.accessfailurelog"}
ADMIN_SITE: dict[str, list[Call]] = {
    "admin:index": [Call("get", "/admin/", "L L L L L 200 200")],
    "admin:login": [Call("get", "/admin/login/", "200 200 200 200 200 302 302")],
    # logout is POST only; a non-staff user is sent to the admin index first (which sends them to log in)
    "admin:logout": [Call("get", "/admin/logout/", "302 302 302 302 302 405 405")],
    "admin:password_change": [Call("get", "/admin/password_change/", "L L L L L 200 200")],
    "admin:password_change_done": [Call("get", "/admin/password_change/done/", "L L L L L 200 200")],
    "admin:autocomplete": [Call("get", "/admin/autocomplete/", "L L L L L 403 403")],
    "admin:jsi18n": [Call("get", "/admin/jsi18n/", "L L L L L 200 200")],
    "admin:view_on_site": [Call("get", "/admin/r/1/1/", "L L L L L 404 404")],
    "admin:app_list": [
        Call("get", "/admin/pooling/", "L L L L L 200 200"),
        Call("get", "/admin/auth/", "L L L L L 404 200"),
    ],
    "admin:auth_user_password_change": [
        Call("get", "/admin/auth/user/{admin_auth_user}/password/", "L L L L L 403 200"),
    ],
    # the click log upload: staff who manage a collection (its choices are theirs), the admin
    "admin:online_clicklog_upload": [Call("get", "/admin/online/clicklog/upload/", "L L L L L 200 200")],
    "(?P<url>.*)$": [Call("get", "/admin/nowhere/", "L L L L L 404 404")],  # the admin's catch-all
}


def admin_calls(model: str, view: str) -> list[Call]:
    """The requests and expected codes for one admin route of `model` (`app.model`), from its policy."""
    app, name = model.split(".")
    base = f"/admin/{app}/{name}/"
    policy = ADMIN_MODELS[model]
    obj = "{admin_" + model.replace(".", "_") + "}"
    staff = {"scoped": "200", "shared": "200", "superuser": "403"}[policy]
    other = {"scoped": "302", "shared": "200", "superuser": "403"}[policy]  # pool A's object
    found = "302" if model in MISSING else "200"  # what the admin gets for the object
    row = {
        "changelist": (base, staff, "200"),
        "add": (f"{base}add/", "403" if model in NO_ADD else staff, "403" if model in NO_ADD else "200"),
        "change": (f"{base}{obj}/change/", other, found),
        "delete": (f"{base}{obj}/delete/", "403" if model in NO_DELETE else other,
                   "403" if model in NO_DELETE else found),
        "history": (f"{base}{obj}/history/", "302" if model in MISSING else other, found),
        "redirect": (f"{base}{obj}/", "302", "302"),  # to the change page
    }[view]  # fmt: skip
    url, for_staff, for_admin = row
    return [Call("get", url, f"L L L L L {for_staff} {for_admin}")]


# ---------------------------------------------------------------------------------------------- routes


def all_routes() -> list[tuple[str, str]]:
    """(key, pattern) of every route: its namespaced name, or its pattern when it has none."""

    def walk(patterns: Any, prefix: str, namespace: str) -> list[tuple[str, str]]:
        found = []
        for entry in patterns:
            if isinstance(entry, URLResolver):
                inner = namespace
                if entry.namespace:
                    inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace
                found += walk(entry.url_patterns, prefix + str(entry.pattern), inner)
            elif isinstance(entry, URLPattern):
                pattern = prefix + str(entry.pattern)
                name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
                found.append((name or pattern.removeprefix("admin/"), pattern))
        return found

    return walk(get_resolver().url_patterns, "", "")


ADMIN_VIEW = re.compile(
    r"^admin:(?P<app>\w+?)_(?P<model>[a-z0-9]+)_(?P<view>changelist|add|change|delete|history)$"
)
ADMIN_REDIRECT = re.compile(r"^(?P<app>\w+)/(?P<model>[a-z0-9]+)/<path:object_id>/$")


def calls_for(key: str) -> list[Call] | None:
    """The declared calls of a route, or None when the table has no entry for it."""
    if key in ROUTES:
        return ROUTES[key]
    if key in ADMIN_SITE:
        return ADMIN_SITE[key]
    match = ADMIN_VIEW.match(key)
    if match and f"{match['app']}.{match['model']}" in ADMIN_MODELS:
        return admin_calls(f"{match['app']}.{match['model']}", match["view"])
    match = ADMIN_REDIRECT.match(key)
    if match and f"{match['app']}.{match['model']}" in ADMIN_MODELS:
        return admin_calls(f"{match['app']}.{match['model']}", "redirect")
    return None


def test_every_route_has_an_entry() -> None:
    """A route without an entry in the table fails here: say who may use it before it lands."""
    missing = sorted({key for key, _ in all_routes() if calls_for(key) is None})
    assert missing == [], f"routes with no entry in tests/test_access_matrix.py: {missing}"
    known = {key for key, _ in all_routes()}
    stale = sorted(set(ROUTES) - known)
    assert stale == [], f"entries for routes that no longer exist: {stale}"


# --------------------------------------------------------------------------------------------- the world


def _manager(username: str, *, staff: bool = False) -> User:
    user = make_manager(username, is_staff=staff)
    if staff:
        user.user_permissions.set(
            Permission.objects.filter(content_type__app_label__in=["pooling", "judgements", "online"])
        )
    return user


def _campaign(tag: str, *, managers: list[User], rater: User) -> Pool:
    collection = make_collection(name=f"coll-{tag}", managers=managers)
    runs = [
        make_run(collection=collection, name="alpha",
                 lists={"q1": ["d001", "d002", "d003"], "q2": ["d010", "d011"]}),
        make_run(collection=collection, name="beta", lists={"q1": ["d003", "d004"], "q2": ["d012"]}),
    ]  # fmt: skip
    make_run(collection=collection, name="gamma", lists={"q1": ["d007"]})
    pool = make_pool(collection=collection, runs=runs, name=f"pool-{tag}", managers=managers, raters=[rater])
    return pool


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    people = {
        "outsider": make_user("outsider"),
        "rater_a": make_user("rater-a"),
        "rater_b": make_user("rater-b"),
        "manager_a": _manager("manager-a"),
        "manager_b": _manager("manager-b", staff=True),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }
    second = _manager("manager-a2")  # so that removing a manager of A leaves one
    pool = _campaign("a", managers=[people["manager_a"], second], rater=people["rater_a"])
    _campaign("b", managers=[people["manager_b"]], rater=people["rater_b"])
    judge(pool, people["rater_a"], {("q1", "d001"): 2, ("q1", "d002"): 0, ("q2", "d011"): 1})
    judged = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d001")
    gold_item = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d003")
    adjudication.set_gold(item=gold_item, grade=1, by=people["manager_a"])
    assignment = lease_for(pool=pool, rater=people["rater_a"])
    assert assignment is not None
    release = releases.create_release(pool=pool)
    collection = pool.collection
    experiment = experiments.create_experiment(
        name="ab-a", collection=collection, run_a="alpha", run_b="beta", length=3
    )
    serving.clear_caches()
    shown = serving.serve(experiment=experiment, qid="q1", user="u1")
    tracked = tracking.track_experiment(
        collection=collection, name="beta over alpha", release=release, metric="ndcg_cut_10",
        baseline="alpha", treatment="beta", online_metric="ctr", online_delta=0.01,
    )  # fmt: skip
    job = Job.objects.create(kind=Job.Kind.RUN, collection=collection, status=Job.Status.DONE)
    learner = create_judge(pool=pool, name="learner", method="learned")
    topic = Topic.objects.filter(collection=collection).first()
    document = Document.objects.filter(collection=collection).first()
    assert topic is not None and document is not None
    ids = {
        "pool": pool.name,
        "rater_a": people["rater_a"].pk,
        "rater_b": people["rater_b"].pk,
        "collection": collection.name,
        "topic": topic.pk,
        "document": document.pk,
        "run": Run.objects.get(collection=collection, name="gamma").pk,
        "job": job.pk,
        "judgement": Judgement.objects.filter(item=judged).get().pk,
        "assignment": assignment.pk,
        "judged_item": judged.pk,
        "gold_item": gold_item.pk,
        "release": release.pk,
        "judge": "learner",
        "rubric": Judging.objects.get(pool=pool).rubric_id,
        "interleaving": experiment.name,
        "tracked": tracked.pk,
        **{f"shown_{i}": docid for i, docid in enumerate(shown.docids)},
        **{f"team_{i}": team for i, team in enumerate(shown.teams)},
    }
    admin_objects = {
        "pooling.collection": collection.pk, "pooling.document": ids["document"],
        "pooling.topic": ids["topic"], "pooling.run": ids["run"], "pooling.job": job.pk,
        "pooling.pool": pool.pk,
        "judgements.judging": Judging.objects.get(pool=pool).pk, "judgements.assignment": assignment.pk,
        "judgements.judgement": ids["judgement"],
        "judgements.goldlabel": GoldLabel.objects.get(item=gold_item).pk,
        "judgements.adjudication": Adjudication.objects.create(
            item=judged, grade=2, adjudicator=people["manager_a"]).pk,
        "judgements.rubric": ids["rubric"], "judgements.judge": learner.pk, "auth.user": people["rater_a"].pk,
        "auth.group": Group.objects.get(name=MANAGERS_GROUP).pk, "authtoken.tokenproxy": 0,
        "axes.accessattempt": 0, "axes.accesslog": 0, "axes.accessfailurelog": 0,
        **_online(pool, ids),
        **_experiments(experiment, tracked),
    }  # fmt: skip
    ids.update({"admin_" + model.replace(".", "_"): pk for model, pk in admin_objects.items()})
    assert Release.objects.filter(pool=pool).count() == 1 and Assignment.objects.filter(pool=pool).exists()
    return {"people": people, "ids": ids}


def _experiments(experiment: Any, tracked: Any) -> dict[str, int]:
    """An impression of another searcher than the API's rows use, and a result: the admin's objects."""
    shown = serving.serve(experiment=experiment, qid="q1", user="admin-row")
    impression = impressions.log_impression(
        experiment=experiment, qid="q1", user="admin-row", docids=shown.docids, teams=shown.teams, clicks=[1]
    )
    result = experiments.compute_result(experiment=experiment, resamples=10)
    return {
        "online.interleavingexperiment": experiment.pk,
        "online.interleavedimpression": impression.pk,
        "online.interleavingresult": result.pk,
        "online.trackedexperiment": tracked.pk,
    }


def _online(pool: Pool, ids: dict[str, Any]) -> dict[str, int]:
    """A click log of pool A (over its judged items), a given θ and graded click labels with their
    agreement gate; their ids go into `ids`, the admin's objects are returned."""
    import json
    import tempfile

    from online import services as online_services
    from online.clicklogs import import_click_log

    pages = [
        {"session": f"s{i}", "qid": "q1", "docids": ["d001", "d002", "d003"], "clicks": [1]} for i in range(5)
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("".join(json.dumps(page) + "\n" for page in pages))
    log = import_click_log(
        collection=pool.collection, name="clicks-a", format="jsonl", paths=[handle.name], pool=pool
    )
    estimate = online_services.estimate_propensity(log=log, method="given", params={"theta": [1, 0.6, 0.4]})
    labels = online_services.derive_click_labels(
        log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.5:1,0.9:2"
    )
    click_release = online_services.release_click_labels(label_set=labels)
    ids.update(
        click_log=log.pk, propensity=estimate.pk, click_labels=labels.pk, click_release=click_release.pk
    )
    return {
        "online.clicklog": log.pk,
        "online.propensityestimate": estimate.pk,
        "online.clicklabelset": labels.pk,
    }


def _fill(value: Any, ids: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


def _answer(response: Any) -> str:
    location = response.get("Location", "") if response.status_code == 302 else ""
    if location.startswith(("/accounts/login/", "/admin/login/")):
        return "L"
    return str(response.status_code)


def test_every_persona_gets_the_declared_answer_on_every_route(
    world: dict[str, Any], monkeypatch: Any
) -> None:
    """One data set, every route × every persona; every mismatch is listed at once."""
    from rest_framework.throttling import SimpleRateThrottle

    # Rate limits are not what this test is about: seven personas from one address would trip them.
    monkeypatch.setattr(SimpleRateThrottle, "allow_request", lambda self, request, view: True)
    ids = world["ids"]
    clients = {"anonymous": APIClient()}
    for persona, user in world["people"].items():
        clients[persona] = APIClient()
        clients[persona].force_login(user)
    calls = {key: calls_for(key) for key, _ in all_routes()}
    mismatches = []
    count = 0
    for key, route_calls in sorted(calls.items()):
        for call in route_calls or []:
            url = _fill(call.url, ids)
            for persona, expected in zip(PERSONAS, call.codes(), strict=True):
                data = _fill(call.data, ids) if call.data is not None else None
                if call.multipart:
                    data = {**(data or {}), "file": SimpleUploadedFile("t.tsv", b"q9\tquery nine\n")}
                with transaction.atomic():
                    sent = getattr(clients[persona], call.method)
                    if call.method == "get":
                        response = sent(url)
                    else:
                        as_json = url.startswith("/api/") and not call.multipart
                        response = sent(url, data, format="json" if as_json else None)
                    transaction.set_rollback(True)
                count += 1
                got = _answer(response)
                if got != expected:
                    mismatches.append(
                        f"{key} {call.method.upper()} {url} as {persona}: {got}, expected {expected}"
                    )
    assert mismatches == [], "\n".join(mismatches)
    assert count > 7 * 150  # every route was requested by every persona

"""Schemathesis over the OpenAPI schema: no operation answers a 5xx, whatever the generated input.

Every operation of `/api/schema/` gets MAX_EXAMPLES generated requests with random path parameters and
MAX_EXAMPLES with path parameters naming real objects (a pool, its collection, a run, a rubric, an
assignment...) — 20 an operation — each sent twice: with a manager's token and with a rater's. Bounded
(about two minutes on the shared 2-core machine) so that it runs in `make test`; the examples are
derandomised, so a failure repeats. FUZZ_EXAMPLES=N changes MAX_EXAMPLES for a longer or a quicker run.
The requests go through Django's WSGI handler in process, inside the test's transaction.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from rest_framework.authtoken.models import Token

from judgements import membership
from judgements.models import Assignment
from pooling.models import Job, PoolItem
from tests.factories import lease_for, make_collection, make_pool, make_run, submit_for

pytestmark = [pytest.mark.schemathesis, pytest.mark.django_db]

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
PARAMETER = re.compile(r"{(\w+)}")


@pytest.fixture
def wsgi_app() -> Iterator[WSGIHandler]:
    """Django's WSGI handler, without the per-request connection closing that would end the test's
    transaction (Django's own test client disconnects it the same way)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def campaign(manager, rater, second_rater) -> dict[str, object]:
    """A pool `p1` of collection `p1` with two runs, raters, a judgement and a live lease."""
    collection = make_collection(name="p1", docs=12)
    alpha = make_run(
        collection=collection, name="alpha", lists={"q1": ["d001", "d002", "d003"], "q2": ["d004"]}
    )
    beta = make_run(
        collection=collection, name="beta", lists={"q1": ["d003", "d005"], "q2": ["d006", "d004"]}
    )
    pool = make_pool(collection=collection, runs=[alpha, beta], name="p1", raters=[rater, second_rater])
    collection.managers.add(manager) if hasattr(collection, "managers") else None
    pool.managers.add(manager) if hasattr(pool, "managers") else None
    judging = pool.judging
    first = lease_for(pool=pool, rater=rater)
    assert first is not None
    judgement = submit_for(assignment=first, grade=2)
    lease_for(pool=pool, rater=rater)
    membership.setup_judging(pool=pool)
    item_id = PoolItem.objects.filter(pool=pool).values_list("pk", flat=True).first()
    assignment = Assignment.objects.filter(rater=rater, state="active").first()
    document = collection.documents.first()
    topic = collection.topics.first()
    assert assignment is not None and document is not None and topic is not None
    return {
        "name": "p1",
        "pool": "p1",
        "run_name": "alpha",
        "qid": "q1",
        "username": "rater2",
        "filename": "qrels.txt",
        "item_id": item_id,
        "ids": {
            "/api/assignments/": assignment.pk,
            "/api/judgements/": judgement.pk,
            "/api/rubrics/": judging.rubric_id,
            "/api/runs/": alpha.pk,
            "/api/documents/": document.pk,
            "/api/topics/": topic.pk,
            "/api/jobs/": Job.objects.values_list("pk", flat=True).first() or 1,
            "/api/releases/": 1,
        },
    }


def known_parameters(path: str, campaign: dict) -> dict[str, object]:
    values = {}
    for name in PARAMETER.findall(path):
        if name == "id":
            values["id"] = next((v for prefix, v in campaign["ids"].items() if path.startswith(prefix)), 1)
        else:
            values[name] = campaign[name]
    return values


def test_no_operation_answers_a_server_error(wsgi_app, campaign, manager, rater):
    tokens = {
        "manager": Token.objects.create(user=manager).key,
        "rater": Token.objects.create(user=rater).key,
    }
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    failures: dict[str, str] = {}
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for strategy in (
            operation.as_strategy(),
            operation.as_strategy(path_parameters=known_parameters(operation.path, campaign)),
        ):

            @hypothesis_settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy)
            def send(case) -> None:
                for persona, token in tokens.items():
                    response = case.call(headers={"Authorization": f"Token {token}"})
                    name = f"{case.operation.method.upper()} {case.operation.path}"
                    if response.status_code >= 500 and name not in failures:
                        failures[name] = f"{response.status_code} as {persona}: {case.as_curl_command()}"

            send()
    assert operations >= 60
    assert failures == {}, "\n".join(f"{label}: {failure}" for label, failure in failures.items())

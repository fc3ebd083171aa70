"""A label policy is read from a request by one function (`release_policy.read_policy`) on every page,
API endpoint and command: absent or blank is the default (majority) everywhere, a valid one is taken, and
one refused (it does not parse, names nobody, or is longer than a release records) is a 400 naming
`policy` on the API and a message on the page, never a 500. The API's `policy` is one field
(`release_policy.PolicyField`), in requests and answers."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from evaluation import api as evaluation_api
from evaluation import serializers as evaluation_serializers
from judgements import release_api, report_serializers
from judgements.models import Release
from judgements.release_policy import DEFAULT_POLICY, MAX_POLICY_LENGTH, PolicyField, read_policy
from pooling.models import Job
from tests.conftest import client_for
from tests.evaluation.test_reports import scored_pool  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

TOO_LONG = "rater:" + "x" * (MAX_POLICY_LENGTH - 5)  # one character too many

#: Every page and endpoint that reads a policy from the query string (the noise floor kept small).
PAGES = [
    "/evaluation/scored/?",
    "/evaluation/scored/pool-bias/?",
    "/evaluation/scored/two-stage/?candidate=alpha&reranked=beta&",
    "/evaluation/scored/noise-floor/?",
]
ENDPOINTS = [
    "/api/evaluation/scored/report/?",
    "/api/evaluation/scored/pool-bias/?",
    "/api/evaluation/scored/two-stage/?candidate=alpha&reranked=beta&",
    "/api/evaluation/scored/noise-floor/?topic_samples=10&label_samples=2&splits=2&",
]


def test_it_reads_absent_and_blank_as_the_default_and_strips_the_rest():
    assert read_policy(None) == read_policy("") == read_policy("  \t") == DEFAULT_POLICY == "majority"
    assert read_policy(" median ") == "median"
    assert read_policy("x" * MAX_POLICY_LENGTH) == "x" * MAX_POLICY_LENGTH  # parsing is check_policy's


@pytest.mark.parametrize("value", [TOO_LONG, 3])
def test_it_refuses_a_value_no_release_could_record_on_policy(value):
    from judgements.errors import JudgingError

    with pytest.raises(JudgingError) as refused:
        read_policy(value)
    assert refused.value.field == "policy"


@pytest.mark.parametrize("url", ENDPOINTS)
@pytest.mark.parametrize("query", ["", "policy=", "policy=%20%20"])
def test_the_api_reads_an_absent_or_blank_policy_as_majority(scored_pool, manager, url, query):  # noqa: F811
    response = client_for(manager).get(url + query)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body.get("policy", DEFAULT_POLICY) == DEFAULT_POLICY  # two-stage does not echo it


@pytest.mark.parametrize("url", PAGES)
@pytest.mark.parametrize("query", ["", "policy=", "policy=%20%20"])
def test_the_pages_read_an_absent_or_blank_policy_as_majority(scored_pool, manager, url, query):  # noqa: F811
    client = Client()
    client.force_login(manager)
    response = client.get(url + query)
    assert response.status_code == 200, response.content.decode()[:2000]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_the_api_takes_a_valid_policy(scored_pool, manager, url):  # noqa: F811
    response = client_for(manager).get(url + "policy=rater:alice")
    assert response.status_code == 200, response.content
    assert response.json().get("policy", "rater:alice") == "rater:alice"


@pytest.mark.parametrize("url", PAGES)
def test_the_pages_take_a_valid_policy(scored_pool, manager, url):  # noqa: F811
    client = Client()
    client.force_login(manager)
    assert client.get(url + "policy=median").status_code == 200


@pytest.mark.parametrize("url", ENDPOINTS)
@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("bogus", "unknown aggregation policy"),
        ("rater:nobody", "no rater named"),
        (TOO_LONG, f"at most {MAX_POLICY_LENGTH} characters"),
    ],
)
def test_the_api_refuses_a_bad_policy_on_policy(scored_pool, manager, url, policy, words):  # noqa: F811
    response = client_for(manager).get(url + f"policy={policy}")
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["policy"] and words in response.json()["policy"][0]


@pytest.mark.parametrize("url", PAGES)
@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("bogus", "unknown aggregation policy"),
        ("rater:nobody", "no rater named"),
        (TOO_LONG, f"at most {MAX_POLICY_LENGTH} characters"),
    ],
)
def test_the_pages_explain_a_bad_policy(scored_pool, manager, url, policy, words):  # noqa: F811
    client = Client()
    client.force_login(manager)
    response = client.get(url + f"policy={policy}")
    assert response.status_code == 400 and words in response.content.decode()


# ------------------------------------------------------------------------------------------ releases


@pytest.mark.parametrize("sent", [{}, {"policy": ""}, {"policy": "  "}])
def test_the_release_api_reads_an_absent_or_blank_policy_as_majority(
    scored_pool,  # noqa: F811
    manager,
    sent,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post("/api/releases/", {"pool": "scored", **sent}, format="json")
    assert answer.status_code == 202, answer.content
    assert Release.objects.get().policy == DEFAULT_POLICY


@pytest.mark.parametrize("sent", [{}, {"policy": ""}, {"policy": "  "}])
def test_the_releases_page_reads_an_absent_or_blank_policy_as_majority(
    scored_pool,  # noqa: F811
    manager,
    sent,
    django_capture_on_commit_callbacks,
):
    client = Client()
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post("/campaigns/scored/releases/new/", sent)
    assert page.status_code == 302
    assert Release.objects.get().policy == DEFAULT_POLICY


@pytest.mark.parametrize(
    ("policy", "words"),
    [("bogus", "unknown aggregation policy"), (TOO_LONG, f"at most {MAX_POLICY_LENGTH} characters")],
)
def test_the_release_api_and_page_refuse_a_bad_policy_alike(scored_pool, manager, policy, words):  # noqa: F811
    answer = client_for(manager).post("/api/releases/", {"pool": "scored", "policy": policy}, format="json")
    assert answer.status_code == 400 and list(answer.json()) == ["policy"]
    assert words in answer.json()["policy"][0]
    client = Client()
    client.force_login(manager)
    page = client.post("/campaigns/scored/releases/new/", {"policy": policy}, follow=True)
    assert page.status_code == 200 and words in page.content.decode()
    assert not Job.objects.exists() and not Release.objects.exists()


def test_release_qrels_reads_a_blank_policy_as_majority(scored_pool):  # noqa: F811
    call_command("release_qrels", "scored", "--policy", " ", stdout=io.StringIO())
    assert Release.objects.get().policy == DEFAULT_POLICY
    with pytest.raises(CommandError, match=f"at most {MAX_POLICY_LENGTH} characters"):
        call_command("release_qrels", "scored", "--policy", TOO_LONG)
    assert Release.objects.count() == 1


# ---------------------------------------------------------------------------------------- the field


def test_every_policy_field_of_the_api_is_the_one_declaration():
    requests = [
        release_api.ReleaseRequestSerializer,
        evaluation_api.PolicySerializer,
        evaluation_api.TwoStageSerializer,
        evaluation_api.NoiseFloorSerializer,
        evaluation_api.ReportSerializer,
    ]
    answers = [
        evaluation_serializers.EvaluationReportSerializer,
        evaluation_serializers.PoolBiasSerializer,
        evaluation_serializers.NoiseFloorReportSerializer,
        report_serializers.RaterQualitySerializer,
    ]
    for serializer in requests + answers:
        field = serializer().fields["policy"]
        assert type(field) is PolicyField, serializer
        assert "rater:USERNAME" in str(field.help_text) and DEFAULT_POLICY in str(field.help_text)
    for serializer in answers:
        assert serializer().fields["policy"].read_only, serializer


def test_the_schema_says_what_a_policy_is_and_its_default(manager):
    schema = client_for(manager).get("/api/schema/", {"format": "json"}).json()
    report = next(
        p
        for p in schema["paths"]["/api/evaluation/{name}/report/"]["get"]["parameters"]
        if p["name"] == "policy"
    )
    assert (
        report["schema"]["default"] == DEFAULT_POLICY and report["schema"]["maxLength"] == MAX_POLICY_LENGTH
    )
    assert "rater:USERNAME" in report["description"] and not report.get("required", False)
    release = schema["components"]["schemas"]["ReleaseRequest"]["properties"]["policy"]
    assert release["default"] == DEFAULT_POLICY and "rater:USERNAME" in release["description"]
    answer = schema["components"]["schemas"]["EvaluationReport"]
    assert "policy" in answer["required"] and answer["properties"]["policy"]["readOnly"]

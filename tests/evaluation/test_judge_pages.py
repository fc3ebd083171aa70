"""The model-judge pages, API and commands: who sees what, and the page saying why a judge is admitted."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from judgements.judges import run_judge
from judgements.models import Judge, Judging
from pooling.models import Pool
from tests.conftest import client_for
from tests.judgements.judge_factories import PROGRAMS, copy_judge, make_judged_pool, random_judge


@pytest.fixture
def pool(db: None, rater: Any, second_rater: Any, manager: Any) -> Pool:
    return make_judged_pool(raters=[rater, second_rater], managers=[manager])


def page(user: Any, url: str) -> Any:
    client = Client()
    client.force_login(user)
    return client.get(url)


def test_it_says_plainly_why_a_judge_was_admitted_or_refused(
    pool: Pool, manager: Any, tmp_path: Path
) -> None:
    from evaluation.judge_gate import measure_gate

    for judge in (copy_judge(pool, tmp_path), random_judge(pool)):
        run_judge(judge=judge)
        measure_gate(judge=judge)
    listing = page(manager, f"/evaluation/{pool.name}/judges/").content.decode()
    assert "copier" in listing and "dice" in listing and "admitted" in listing and "refused" in listing
    admitted = page(manager, f"/evaluation/{pool.name}/judges/copier/").content.decode()
    assert "Admitted: its κ against the human labels is 1.000 on 40 items it did not train on" in admitted
    refused = page(manager, f"/evaluation/{pool.name}/judges/dice/").content.decode()
    assert "Refused: its κ against the human labels is" in refused and "below the threshold" in refused


def test_it_creates_a_judge_from_the_page_and_refuses_a_bad_one_by_field(pool: Pool, manager: Any) -> None:
    client = Client()
    client.force_login(manager)
    url = f"/evaluation/{pool.name}/judges/"
    fields = {"seed": 0, "folds": 5, "timeout_seconds": 30, "retries": 1}
    ok = client.post(url, {"action": "create", "name": "learner", "method": "learned", **fields})
    assert ok.status_code == 302 and Judge.objects.filter(pool=pool, name="learner").exists()
    again = client.post(url, {"action": "create", "name": "learner", "method": "learned", **fields})
    assert again.status_code == 400 and "already has a judge" in again.content.decode()
    external = client.post(url, {"action": "create", "name": "ext", "method": "external", **fields})
    assert external.status_code == 400 and "an external judge needs a program" in external.content.decode()
    threshold = client.post(url, {"action": "threshold", "gate_kappa": "0.4"})
    assert threshold.status_code == 302 and Judging.objects.get(pool=pool).gate_kappa == 0.4


def test_it_offers_external_programs_only_from_the_servers_list(
    pool: Pool, manager: Any, settings: Any
) -> None:
    settings.EXTERNAL_JUDGES = {"rules": [sys.executable, str(PROGRAMS / "rule_judge.py")]}
    api = client_for(manager)
    made = api.post(
        f"/api/pools/{pool.name}/judges/", {"name": "ext", "method": "external", "program": "rules"}
    )
    assert made.status_code == 201 and Judge.objects.get(name="ext").command[-1].endswith("rule_judge.py")
    unknown = api.post(
        f"/api/pools/{pool.name}/judges/", {"name": "ext2", "method": "external", "program": "sh"}
    )
    assert unknown.status_code == 400 and "program" in unknown.json()
    assert (
        api.post(f"/api/pools/{pool.name}/judges/", {"name": "bad name", "method": "learned"}).status_code
        == 400
    )
    listed = api.get(f"/api/pools/{pool.name}/judges/").json()["results"]
    assert [j["name"] for j in listed] == ["ext"] and "command" not in listed[0]


def test_it_runs_a_judge_through_the_api_as_a_job(
    pool: Pool, manager: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    judge = copy_judge(pool, tmp_path)
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        started = api.post(f"/api/pools/{pool.name}/judges/{judge.name}/run/")
    assert started.status_code == 202
    job = api.get(f"/api/jobs/{started.json()['job']}/").json()
    assert job["status"] == "done" and job["kind"] == "judge"
    detail = api.get(f"/api/pools/{pool.name}/judges/{judge.name}/").json()
    assert detail["admitted"] is True and detail["gate"]["kappa"] == 1.0
    assert (
        api.put(f"/api/pools/{pool.name}/judges/threshold/", {"gate_kappa": 2}, format="json").status_code
        == 400
    )


def test_it_shows_raters_and_other_managers_nothing(pool: Pool, rater: Any, db: None) -> None:
    from tests.factories import make_user

    other = make_user("other-manager", is_staff=True)
    for user in (rater, other):
        assert client_for(user).get(f"/api/pools/{pool.name}/judges/").status_code in (403, 404)
    assert page(rater, f"/evaluation/{pool.name}/judges/").status_code == 403
    assert page(other, f"/evaluation/{pool.name}/judges/").status_code == 404


def test_it_describes_the_judge_endpoints_in_the_openapi_schema(db: None, manager: Any) -> None:
    schema = client_for(manager).get("/api/schema/?format=json").json()
    assert "/api/pools/{pool}/judges/" in schema["paths"]
    assert "/api/pools/{pool}/judges/{name}/run/" in schema["paths"]


def test_it_creates_and_runs_a_judge_from_the_command_line(pool: Pool) -> None:
    command = f"{sys.executable} {PROGRAMS / 'random_judge.py'} 3"
    out = io.StringIO()
    call_command("create_judge", pool.name, "cli-dice", "--command", command, stdout=out)
    assert "judge cli-dice (external)" in out.getvalue()
    out = io.StringIO()
    call_command("run_judge", pool.name, "cli-dice", stdout=out, stderr=io.StringIO())
    assert out.getvalue().startswith("Refused:")


def test_it_shows_how_much_of_each_score_rests_on_model_labels(
    db: None, rater: Any, second_rater: Any, manager: Any, tmp_path: Path
) -> None:
    from evaluation import services
    from evaluation.judge_gate import measure_gate
    from judgements.errors import JudgingError
    from pooling.models import PoolItem

    pool = make_judged_pool(raters=[rater, second_rater], managers=[manager], unjudged_every=4)
    pending = {
        (q, d)
        for q, d, n in PoolItem.objects.filter(pool=pool).values_list(
            "topic__qid", "document__docid", "num_judgements"
        )
        if n == 0
    }
    assert len(pending) == 10
    copier, dice = copy_judge(pool, tmp_path), random_judge(pool)
    for judge in (copier, dice):
        run_judge(judge=judge)
        measure_gate(judge=judge)
    plain = services.pool_report(pool=pool, n_permutations=10)
    assert {row["run"]: row["model_10"] for row in plain["runs"]} == {"alpha": 0.0, "beta": 0.0, "gamma": 0.0}
    filled = services.pool_report(pool=pool, n_permutations=10, judge="copier")
    lists = {"q1": [f"d{i:03d}" for i in range(20)], "q2": [f"d{i:03d}" for i in range(20, 40)]}
    tops = {
        "alpha": {q: d[:10] for q, d in lists.items()},
        "beta": {q: list(reversed(d))[:10] for q, d in lists.items()},
        "gamma": {q: (d[1::2] + d[::2])[:10] for q, d in lists.items()},
    }
    for row in filled["runs"]:
        expected = sum(sum((q, d) in pending for d in top) / 10 for q, top in tops[row["run"]].items()) / 2
        assert row["model_10"] == pytest.approx(expected) and row["judged_10"] == 1.0
    assert filled["judge"]["name"] == "copier" and filled["judge"]["labels"] == 10
    with pytest.raises(JudgingError, match="not admitted"):
        services.pool_report(pool=pool, judge="dice")
    shown = page(manager, f"/evaluation/{pool.name}/?judge=copier").content.decode()
    assert "model labels @10" in shown and "model judge <strong>copier</strong>" in shown
    refused = client_for(manager).get(f"/api/evaluation/{pool.name}/report/?judge=dice")
    assert refused.status_code == 400 and "judge" in refused.json()


@pytest.mark.django_db(transaction=True)
def test_a_refused_broker_is_the_apis_503_and_the_pages_failed_job(
    rater: Any, second_rater: Any, manager: Any
) -> None:
    from pooling.models import Job
    from tests.pooling.test_jobs import CLOSED_PORT, broker_at

    judged = make_judged_pool(raters=[rater, second_rater], managers=[manager])
    judge = random_judge(judged)
    web = Client()
    web.force_login(manager)
    with broker_at(CLOSED_PORT):
        api = client_for(manager).post(f"/api/pools/{judged.name}/judges/{judge.name}/run/")
        shown = web.post(f"/evaluation/{judged.name}/judges/{judge.name}/run/")
    assert api.status_code == 503
    body = api.json()
    assert "task queue is unreachable" in body["detail"] and body["status"] == "failed"
    assert Job.objects.get(pk=body["job"]).status == "failed"
    assert shown.status_code == 503 and b"task queue is unreachable" in shown.content


def test_the_page_and_the_api_hold_a_judges_settings_to_the_services_ranges(pool: Pool, manager: Any) -> None:
    """The ranges of a judge's settings are `create_judge`'s alone: the page shows its message beside the
    field and the API answers it on the field, and what it takes both take (the page and the API once
    refused a timeout of 0.05 s the service and the command took)."""
    client = Client()
    client.force_login(manager)
    url = f"/evaluation/{pool.name}/judges/"
    api = client_for(manager)
    fields = {"seed": 0, "folds": 5, "timeout_seconds": 30, "retries": 1}
    for field, value, message in (
        ("folds", 21, "between 2 and 20"),
        ("seed", -1, "between 0 and 2,147,483,647"),
        ("timeout_seconds", 0, "more than 0, at most 600"),
        ("retries", 11, "between 0 and 10"),
    ):
        bad = {**fields, field: value}
        shown = client.post(url, {"action": "create", "name": "learner", "method": "learned", **bad})
        assert shown.status_code == 400 and shown.context["form"].errors[field] == [message], field
        answer = api.post(f"/api/pools/{pool.name}/judges/", {"name": "learner", "method": "learned", **bad})
        assert answer.status_code == 400 and answer.json() == {field: [message]}, field
    assert not Judge.objects.filter(pool=pool, name="learner").exists()
    quick = {**fields, "timeout_seconds": 0.05}
    made = client.post(url, {"action": "create", "name": "quick", "method": "learned", **quick})
    assert made.status_code == 302 and Judge.objects.get(pool=pool, name="quick").timeout_seconds == 0.05
    answer = api.post(f"/api/pools/{pool.name}/judges/", {"name": "quick2", "method": "learned", **quick})
    assert answer.status_code == 201 and answer.json()["timeout_seconds"] == 0.05

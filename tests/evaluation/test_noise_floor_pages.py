"""The noise floor of a pool: the service reads every rater's votes, the page, the API and the report's
verdict column, each for who may and who may not."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation import noise_pool
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge


@pytest.fixture
def noisy_pool(db, manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(raters=[alice, bob], judgements_per_item=2, name="noisy")
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q1", "d005"): 3,
                        ("q2", "d010"): 1, ("q2", "d013"): 0})  # fmt: skip
    judge(pool, bob, {("q1", "d001"): 0, ("q1", "d002"): 0, ("q1", "d003"): 3, ("q1", "d005"): 3,
                      ("q2", "d010"): 1, ("q2", "d013"): 2})  # fmt: skip
    return pool


def test_it_reads_every_raters_votes_and_scores_every_run(noisy_pool):
    votes, fixed = noise_pool.pool_votes(pool=noisy_pool)
    assert sorted(votes[("q1", "d001")]) == [("alice", 2), ("bob", 0)]
    assert fixed == {}
    data = noise_pool.pool_noise_floor(pool=noisy_pool, topic_samples=50, label_samples=20, splits=4)
    assert [row["run"] for row in data["runs"]] == ["alpha", "beta"]
    (pair,) = data["pairs"]["ndcg_cut_10"]
    assert (pair["a"], pair["b"]) == ("alpha", "beta")
    assert pair["raters_half_width"] > 0  # alice and bob disagree on d001, d003 and d013
    assert pair["verdict"].startswith("Δ nDCG@10 = ")
    assert data["stability"]["raters_total"] == 2


@pytest.mark.parametrize(
    ("persona", "expected"), [("anonymous", 302), ("outsider", 403), ("manager", 200), ("admin_user", 200)]
)
def test_the_page_answers_only_managers(noisy_pool, request, persona, expected):
    client = Client()
    if persona != "anonymous":
        client.force_login(request.getfixturevalue(persona))
    response = client.get("/evaluation/noisy/noise-floor/")
    assert response.status_code == expected
    if expected == 200:
        html = response.content.decode()
        assert "within the noise floor" in html or "beyond the noise floor" in html
        assert "Discriminative power" in html and "<svg" in html


def test_the_page_is_hidden_from_a_rater_and_another_manager(noisy_pool, db):
    from django.contrib.auth.models import Group, User

    from pooling.permissions import MANAGERS_GROUP

    other = make_user("other-manager")
    other.groups.add(Group.objects.get(name=MANAGERS_GROUP))
    for user, status in ((User.objects.get(username="alice"), 403), (other, 404)):
        client = Client()
        client.force_login(user)
        assert client.get("/evaluation/noisy/noise-floor/").status_code == status
        assert client_for(user).get("/api/evaluation/noisy/noise-floor/").status_code == status


def test_the_report_puts_a_verdict_beside_every_comparison(noisy_pool, manager):
    client = Client()
    client.force_login(manager)
    html = client.get("/evaluation/noisy/").content.decode()
    assert "Δ nDCG@10 = " in html and "noise floor" in html


@pytest.mark.parametrize(
    ("persona", "allowed"), [("anonymous", False), ("outsider", False), ("manager", True)]
)
def test_the_api_answers_only_managers(noisy_pool, request, persona, allowed):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    response = client_for(user).get("/api/evaluation/noisy/noise-floor/?topic_samples=50&label_samples=10")
    assert response.status_code == 200 if allowed else response.status_code in (401, 403)
    if allowed:
        assert response.json()["settings"]["label_samples"] == 10


def test_the_api_names_a_bad_parameter(noisy_pool, manager):
    api = client_for(manager)
    response = api.get("/api/evaluation/noisy/noise-floor/?topic_samples=100000000")
    assert response.status_code == 400 and "topic_samples" in response.json()
    response = api.get("/api/evaluation/noisy/noise-floor/?policy=loudest")
    assert response.status_code == 400 and "policy" in response.json()
    assert api.get("/api/evaluation/noisy/noise-floor/?seed=x").status_code == 400


def test_the_evaluate_command_prints_a_verdict_per_pair_on_stderr_only(noisy_pool, tmp_path):
    import io

    from django.core.management import call_command

    alpha, beta = tmp_path / "alpha.run", tmp_path / "beta.run"
    alpha.write_text("q1 Q0 d001 1 4 a\nq1 Q0 d003 2 3 a\nq2 Q0 d010 1 2 a\n")
    beta.write_text("q1 Q0 d002 1 4 b\nq1 Q0 d005 2 3 b\nq2 Q0 d013 1 2 b\n")
    plain, out, err = io.StringIO(), io.StringIO(), io.StringIO()
    call_command("evaluate", "pool:noisy", str(alpha), str(beta), "-m", "ndcg_cut.10", stdout=plain)
    call_command(
        "evaluate",
        "pool:noisy",
        str(alpha),
        str(beta),
        "-m",
        "ndcg_cut.10",
        "--noise-floor",
        stdout=out,
        stderr=err,
    )
    assert out.getvalue() == plain.getvalue()  # stdout stays trec_eval's
    (line,) = [x for x in err.getvalue().splitlines() if x.startswith("# noise floor: alpha.run vs beta.run")]
    assert "Δ nDCG@10 = " in line and "from raters" in line and "from topics" in line


def test_the_evaluate_command_on_a_qrels_file_says_raters_were_not_measured(tmp_path):
    import io

    from evaluation import cli

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{t} 0 d{d} {(t + d) % 3}\n" for t in range(6) for d in range(4)))
    runs = []
    for name, order in (("a.run", [0, 1, 2, 3]), ("b.run", [3, 2, 1, 0])):
        path = tmp_path / name
        path.write_text(
            "".join(f"q{t} Q0 d{d} {r} {10 - r} x\n" for t in range(6) for r, d in enumerate(order))
        )
        runs.append(str(path))
    err = io.StringIO()
    options = vars(
        cli.build_parser().parse_args([str(qrels), *runs, "-m", "P.2", "--noise-floor", "--seed", "3"])
    )
    cli.execute(options, io.StringIO(), err)
    lines = [x for x in err.getvalue().splitlines() if x.startswith("# noise floor: a.run vs b.run")]
    assert len(lines) == 1 and "Δ P@2 = " in lines[0] and "raters not measured" in lines[0]


@pytest.mark.parametrize("policy", ["dawid-skene", "glad"])
def test_under_a_model_policy_the_labels_are_drawn_from_its_posterior(noisy_pool, policy):
    data = noise_pool.pool_noise_floor(
        pool=noisy_pool, policy=policy, topic_samples=50, label_samples=20, splits=2
    )
    assert data["settings"]["label_source"] == "posterior"
    assert data["policy"] == policy
    assert data["pairs"]["ndcg_cut_10"][0]["verdict"].startswith("Δ nDCG@10 = ")

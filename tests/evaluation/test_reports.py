"""Evaluation reports of a pool: values equal pytrec_eval's, both unjudged policies, pool bias, two-stage."""

from __future__ import annotations

import pytest
import pytrec_eval
from django.test import Client

from evaluation import services
from judgements.releases import current_qrels
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge


@pytest.fixture
def scored_pool(db, manager):
    """Managed by `manager` (made first: a pool's default managers are the managers at its creation)."""
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="scored")
    # alpha q1: d001 d002 d003 d004, q2: d010 d011 d012; beta q1: d003 d005 d001 d006, q2: d013 d010
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q1", "d005"): 3,
                        ("q2", "d010"): 1, ("q2", "d013"): 0})  # fmt: skip
    return pool


def pytrec(qrels, run, measure, *, judged_only=False):
    if judged_only:
        run = {
            q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()
        }
    values = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    key = measure if measure in ("map", "recip_rank") else measure
    return {q: v[key] for q, v in values.items()}


def test_it_scores_every_run_under_both_policies_as_pytrec_eval_does(scored_pool):
    report = services.pool_report(pool=scored_pool)
    qrels = current_qrels(pool=scored_pool)
    assert qrels["q1"]["d004"] == -1  # pending stays explicit
    rows = {row["run"]: row for row in report["runs"]}
    assert set(rows) == {"alpha", "beta"} and all(row["contributing"] for row in rows.values())
    for name, row in rows.items():
        run = services.run_as_dict(run=scored_pool.runs.get(name=name))
        for measure in ("ndcg_cut_10", "map", "recip_rank", "P_10"):
            expected = pytrec(qrels, run, measure)
            assert row["nonrelevant"][measure] == pytest.approx(
                sum(expected.values()) / len(expected), abs=1e-6
            )
            condensed = pytrec(qrels, run, measure, judged_only=True)
            assert row["condensed"][measure] == pytest.approx(
                sum(condensed.values()) / len(condensed), abs=1e-6
            )
    # judged@10: alpha q1 has d004 unjudged among its 4, q2 has d011, d012 unjudged among 3
    assert rows["alpha"]["judged_10"] == pytest.approx(((3 / 10) + (1 / 10)) / 2)
    assert report["significance"][0]["a"] == "alpha" and report["significance"][0]["n"] == 2
    assert set(report["segments"]["alpha"]) == {"head", "tail"}


def test_pool_bias_leaves_each_runs_unique_documents_unjudged(scored_pool):
    table = {row["run"]: row for row in services.pool_bias(pool=scored_pool)["runs"]}
    # beta alone found d005 (grade 3), d006 on q1 and d013 on q2; alpha alone d002, d004, d011, d012
    assert table["beta"]["unique_items"] == 3
    assert table["beta"]["unique_relevant"] == 1
    assert table["alpha"]["unique_relevant"] == 0
    assert table["beta"]["change"] < 0  # losing d005 costs beta
    assert table["alpha"]["change"] == pytest.approx(0.0)
    qrels = current_qrels(pool=scored_pool)
    run = services.run_as_dict(run=scored_pool.runs.get(name="beta"))
    for qid, docid in (("q1", "d005"), ("q1", "d006"), ("q2", "d013")):
        qrels[qid].pop(docid)
    expected = pytrec(qrels, run, "ndcg_cut_10")
    assert table["beta"]["left_out"] == pytest.approx(sum(expected.values()) / 2, abs=1e-6)


def test_pool_bias_never_scores_a_topic_left_with_nothing_judged_as_zero(db, manager):
    """q2's one judged document is beta's own: without beta nobody judged q2, so beta's change is paired
    over q1 alone, and `left_out` is beta's full score plus that change (it was the mean with q2 as 0)."""
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="lopsided")
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q1", "d005"): 3,
                        ("q2", "d013"): 1})  # fmt: skip
    table = {row["run"]: row for row in services.pool_bias(pool=pool)["runs"]}
    beta = table["beta"]
    assert beta["topics_unjudged_left_out"] == 1 and table["alpha"]["topics_unjudged_left_out"] == 0
    qrels = current_qrels(pool=pool)
    run = services.run_as_dict(run=pool.runs.get(name="beta"))
    full = pytrec(qrels, run, "ndcg_cut_10")
    reduced = {q: dict(docs) for q, docs in qrels.items()}
    for qid, docid in (("q1", "d005"), ("q1", "d006"), ("q2", "d013")):
        reduced[qid].pop(docid, None)
    left = pytrec({"q1": reduced["q1"]}, {"q1": run["q1"]}, "ndcg_cut_10")
    change = left["q1"] - full["q1"]
    assert beta["change"] == pytest.approx(change, abs=1e-6) and change < 0
    assert beta["full"] == pytest.approx((full["q1"] + full["q2"]) / 2, abs=1e-6)
    assert beta["left_out"] == pytest.approx(beta["full"] + change, abs=1e-6)
    assert beta["left_out"] > (left["q1"] + 0.0) / 2  # not the mean with q2 scored 0
    browser = Client()
    browser.force_login(manager)
    page = browser.get("/evaluation/lopsided/pool-bias/").content.decode()
    assert "(1 topic nobody judged without it)" in page
    api = {
        row["run"]: row
        for row in client_for(manager).get("/api/evaluation/lopsided/pool-bias/").json()["runs"]
    }
    assert api["beta"]["topics_unjudged_left_out"] == 1
    assert api["beta"]["left_out"] == pytest.approx(beta["left_out"], abs=1e-6)


@pytest.fixture
def one_topic_judged(db, manager):
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="one-topic")
    judge(pool, alice, {("q1", "d005"): 3})  # beta alone found it
    return pool


def test_pool_bias_with_one_judged_topic_tests_nothing_and_answers(one_topic_judged, manager):
    # It answered 400 ("a paired test needs at least 2 common topics", blamed on the policy parameter).
    table = {row["run"]: row for row in services.pool_bias(pool=one_topic_judged)["runs"]}
    # Without beta, q1 (whose one judged document beta alone found) is a topic nobody judged: no topic is
    # left to compare on, so the change is undefined, not a loss of the whole score.
    assert table["beta"]["topics_unjudged_left_out"] == 1
    assert table["beta"]["change"] is None and table["beta"]["left_out"] is None
    assert table["beta"]["change_p"] is None and table["beta"]["within_noise"] is None  # no verdict
    assert table["alpha"]["topics_unjudged_left_out"] == 0
    assert client_for(manager).get("/api/evaluation/one-topic/pool-bias/").status_code == 200
    browser = Client()
    browser.force_login(manager)
    response = browser.get("/evaluation/one-topic/pool-bias/")
    assert response.status_code == 200 and b"within the noise" in response.content
    assert b"Only one topic is judged" in response.content
    # beta's change is undefined: it has no bar (a bar of 0 would read as no loss), alpha's 0 has one
    assert (
        b">beta" not in response.content.split(b"<table")[0]
        and b">alpha" in response.content.split(b"<table")[0]
    )


def test_pool_bias_with_nothing_judged_says_so_instead_of_a_table(db, manager):
    make_pool(raters=[make_user("alice")], name="untouched")
    browser = Client()
    browser.force_login(manager)
    response = browser.get("/evaluation/untouched/pool-bias/")
    assert response.status_code == 200
    assert b"Nothing is judged yet." in response.content and b"<th>Run</th>" not in response.content


def test_the_noise_floor_with_one_judged_topic_decides_nothing(one_topic_judged, manager):
    # One judged item once made every difference "a decision" (a bootstrap of one topic has no spread).
    data = client_for(manager).get("/api/evaluation/one-topic/noise-floor/").json()
    rows = [row for rows in data["pairs"].values() for row in rows]
    assert rows and all(row["verdict"].endswith("not a decision.") for row in rows)
    assert all(row["topics_interval"] == [None, None] and not row["significant"] for row in rows)


def test_two_stage_names_a_retrieval_or_ranking_problem(scored_pool):
    result = services.two_stage(pool=scored_pool, candidate="alpha", reranked="beta", k=4)
    assert {t["qid"] for t in result["topics"]} == {"q1", "q2"}
    assert sum(result["verdicts"].values()) == 2
    with pytest.raises(ValueError):
        services.two_stage(pool=scored_pool, candidate="nope", reranked="beta")


@pytest.mark.parametrize(
    "url", ["/evaluation/scored/", "/evaluation/scored/pool-bias/", "/evaluation/scored/two-stage/"]
)
@pytest.mark.parametrize(
    ("persona", "expected"),
    [("anonymous", 302), ("rater", 403), ("outsider", 403), ("manager", 200), ("admin_user", 200)],
)
def test_pages_answer_only_managers(scored_pool, request, url, persona, expected):
    user = (
        None
        if persona == "anonymous"
        else request.getfixturevalue("outsider" if persona == "rater" else persona)
    )
    if persona == "rater":
        from django.contrib.auth.models import User

        user = User.objects.get(username="alice")
    client = Client()
    if user:
        client.force_login(user)
    response = client.get(url)
    assert response.status_code == expected
    if expected == 200:
        assert b"<svg" in response.content


@pytest.mark.parametrize(
    "url",
    ["/api/evaluation/scored/report/", "/api/evaluation/scored/pool-bias/",
     "/api/evaluation/scored/two-stage/?candidate=alpha&reranked=beta"],
)  # fmt: skip
@pytest.mark.parametrize(
    ("persona", "allowed"), [("anonymous", False), ("outsider", False), ("manager", True)]
)
def test_api_answers_only_managers(scored_pool, request, url, persona, allowed):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    response = client_for(user).get(url)
    assert response.status_code == 200 if allowed else response.status_code in (401, 403)


def test_api_rejects_bad_parameters_with_400(scored_pool, manager):
    api = client_for(manager)
    assert api.get("/api/evaluation/scored/two-stage/?candidate=nope&reranked=beta").status_code == 400
    assert api.get("/api/evaluation/scored/two-stage/?reranked=beta").status_code == 400
    assert api.get("/api/evaluation/scored/report/?gain=cubic").status_code == 400
    assert api.get("/api/evaluation/scored/report/?policy=loudest").status_code == 400
    assert api.get("/api/evaluation/nope/report/").status_code == 404


def test_the_evaluate_command_reads_a_pools_current_labels(scored_pool, tmp_path):
    import io

    from django.core.management import CommandError, call_command

    run = tmp_path / "beta.run"
    run.write_text("q1 Q0 d003 1 4 beta\nq1 Q0 d005 2 3 beta\nq1 Q0 d001 3 2 beta\nq2 Q0 d013 1 2 beta\n")
    out = io.StringIO()
    call_command("evaluate", "pool:scored", str(run), "-m", "recip_rank", "-q", stdout=out)
    lines = [line.split("\t") for line in out.getvalue().splitlines() if not line.startswith("#")]
    values = {qid: float(value) for measure, qid, value in lines}
    qrels = current_qrels(pool=scored_pool)
    expected = pytrec(qrels, {"q1": {"d003": 4, "d005": 3, "d001": 2}, "q2": {"d013": 2}}, "recip_rank")
    assert values["q1"] == pytest.approx(expected["q1"], abs=1e-4)
    assert values["q2"] == pytest.approx(expected["q2"], abs=1e-4)
    with pytest.raises(CommandError):
        call_command("evaluate", "pool:nope", str(run))


def test_the_report_says_when_nothing_is_judged_yet(db, manager):
    make_pool(raters=[make_user("carol")], name="fresh")
    client = Client()
    client.force_login(manager)
    html = client.get("/evaluation/fresh/").content.decode()
    assert "Nothing is judged yet" in html

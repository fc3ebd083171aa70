"""The pool report averaged as trec_eval -c (`average=all`): every judged topic, one a run has no results
for scoring 0, on the API and on the page, the same numbers on both; a topic nobody judged is in neither
averaging. The default (trec_eval's, over the judged topics a run has) is unchanged."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytrec_eval
from django.test import Client

from judgements.releases import current_qrels
from pooling.models import Pool
from tests.conftest import client_for
from tests.evaluation.test_missing_topics import JUDGED, LISTS, as_run
from tests.evaluation.test_missing_topics import pool as pool  # noqa: F401 - a fixture
from tests.factories import make_manager, make_user

REPORT = "/api/evaluation/{}/report/"


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def by_run(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["run"]: row for row in data["runs"]}


def pytrec_c_means(pool: Pool, run: str, measures: tuple[str, ...]) -> dict[str, float]:
    """trec_eval -c by hand with pytrec_eval: each measure over every topic of the qrels (the judged
    ones: t4 nobody judged is not in them), 0 for a topic the run has no results for."""
    qrels = {q: docs for q, docs in current_qrels(pool=pool).items() if q in JUDGED}
    assert sorted(qrels) == list(JUDGED)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {m.replace("_cut_", "_cut.") for m in measures})
    scored = evaluator.evaluate(as_run(LISTS[run]))
    return {m: sum(scored.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels) for m in measures}


def page_cell(html: str, run: str, measure: str, policy: str = "nonrelevant") -> str:
    """The text of a run's cell of `measure` under `policy` in the page's scores table."""
    table = re.search(r'<table class="scores">(.*?)</table>', html, re.S)
    assert table is not None
    row = re.search(rf"<tr><td>{run}</td>(.*?)</tr>", table.group(1), re.S)
    assert row is not None
    cell = re.search(rf'data-measure="{measure}" data-policy="{policy}">([^<]*)</td>', row.group(1))
    assert cell is not None
    return cell.group(1).strip()


@pytest.mark.django_db
def test_it_averages_over_every_judged_topic_with_a_missing_one_as_0_like_trec_eval_c(pool, manager):
    answer = client_for(manager).get(REPORT.format(pool.name), {"average": "all"})
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["average"] == "all"
    rows = by_run(data)
    a = rows["A"]
    # A lacks t2, a judged topic: it counts 0; t4, which nobody judged, is not added by -c
    assert (a["topics"], a["missing_topics"]) == (3, ["t2"])
    assert data["judged_topics"] == 3 and data["not_judged_topics"] == ["t4"]
    for name in ("A", "B", "C"):
        expected = pytrec_c_means(pool, name, ("ndcg_cut_10", "P_10", "map"))
        assert rows[name]["nonrelevant"] == pytest.approx(
            {**rows[name]["nonrelevant"], **expected}, abs=1e-6
        ), name
        assert rows[name]["topics"] == 3
    # the -c mean of A is really lower than its common-topics mean: the test tells the two apart
    common = by_run(client_for(manager).get(REPORT.format(pool.name)).json())["A"]
    assert common["nonrelevant"]["ndcg_cut_10"] > a["nonrelevant"]["ndcg_cut_10"] + 0.01
    # per segment too: "head"'s one judged topic is t2, which A lacks: a 0 there, still named
    assert data["segments"]["A"]["head"]["ndcg_cut_10"] == 0.0
    assert data["segments_missing"]["A"] == {"head": ["t2"]}
    # and the paired tests pair over every judged topic
    test = next(t for t in data["significance"] if (t["a"], t["b"]) == ("A", "B"))
    assert test["n"] == 3


@pytest.mark.django_db
def test_the_default_is_unchanged_over_the_topics_each_run_has(pool, manager):
    api = client_for(manager)
    default = api.get(REPORT.format(pool.name)).json()
    assert default["average"] == "common"
    assert api.get(REPORT.format(pool.name), {"average": "common"}).json() == default
    a = by_run(default)["A"]
    assert (a["topics"], a["missing_topics"]) == (2, ["t2"]) and len(a["warnings"]) == 1
    html = logged_in(manager).get(f"/evaluation/{pool.name}/").content.decode()
    shown = re.search(r'<p class="averaging-shown">(.*?)</p>', html, re.S)
    assert shown is not None
    assert "over the judged topics each run has results for (trec_eval's default)" in shown.group(1)


@pytest.mark.django_db
def test_the_page_shows_the_api_numbers_and_says_which_averaging(pool, manager):
    api, browser = client_for(manager), logged_in(manager)
    # -c first: a cached default must not answer for it, nor it for the default
    for average in ("all", "common"):
        data = api.get(REPORT.format(pool.name), {"average": average}).json()
        html = browser.get(f"/evaluation/{pool.name}/", {"average": average}).content.decode()
        for name, row in by_run(data).items():
            for measure in ("ndcg_cut_10", "map"):
                for policy in ("nonrelevant", "condensed"):
                    assert page_cell(html, name, measure, policy) == f"{row[policy][measure]:.4f}", (
                        average,
                        name,
                        measure,
                        policy,
                    )
        shown = re.search(r'<p class="averaging-shown">(.*?)</p>', html, re.S)
        assert shown is not None
        if average == "all":
            assert "trec_eval -c" in shown.group(1)
            assert '<option value="all" selected>' in html
            assert "t2" in html and "each scores 0 in its means" in html
        else:
            assert "trec_eval -c" not in shown.group(1)
            assert '<option value="common" selected>' in html
    # the -c numbers differ from the default's for A: the two cells came from two computations
    c_page = browser.get(f"/evaluation/{pool.name}/?average=all").content.decode()
    default_page = browser.get(f"/evaluation/{pool.name}/").content.decode()
    assert page_cell(c_page, "A", "ndcg_cut_10") != page_cell(default_page, "A", "ndcg_cut_10")


@pytest.mark.django_db
def test_the_page_control_is_a_plain_get_form_that_keeps_the_other_parameters(pool, manager):
    html = logged_in(manager).get(f"/evaluation/{pool.name}/?gain=exp&average=all").content.decode()
    form = re.search(r'<form method="get" class="card averaging">(.*?)</form>', html, re.S)
    assert form is not None
    body = form.group(1)
    assert '<label for="report-average">' in body and '<select id="report-average" name="average">' in body
    assert '<button type="submit">' in body and "<script" not in body
    assert 'name="gain" value="exp"' in body and 'name="policy"' in body
    # the gain switch keeps -c
    assert re.search(r'href="\?gain=linear&policy=[^"]*&average=all"', html)


@pytest.mark.django_db
def test_a_bad_average_is_a_400_naming_the_field(pool, manager):
    answer = client_for(manager).get(REPORT.format(pool.name), {"average": "bogus"})
    assert answer.status_code == 400
    assert "average" in answer.json()
    page = logged_in(manager).get(f"/evaluation/{pool.name}/", {"average": "bogus"})
    assert page.status_code == 400 and "average must be one of common, all" in page.content.decode()


@pytest.mark.django_db
def test_another_managers_pool_is_404_and_a_rater_403_with_average(pool, manager):
    other = make_manager("other-manager")
    assert client_for(other).get(REPORT.format(pool.name), {"average": "all"}).status_code == 404
    assert logged_in(other).get(f"/evaluation/{pool.name}/", {"average": "all"}).status_code == 404
    rater = make_user("someone")
    assert client_for(rater).get(REPORT.format(pool.name), {"average": "all"}).status_code == 403
    assert client_for(manager).get(REPORT.format(pool.name), {"average": "all"}).status_code == 200


@pytest.mark.django_db
def test_under_c_the_page_gives_no_noise_floor_verdict_for_a_pair_it_would_pair_otherwise(pool, manager):
    """The noise floor pairs two runs over the topics both have: with -c, that is the report's pairing
    only for runs lacking no judged topic (B and C); a pair with A gets no verdict rather than another's."""
    html = logged_in(manager).get(f"/evaluation/{pool.name}/?average=all").content.decode()
    cells = r'<tr><td>(\w)</td><td>(\w)</td>(?:<td[^>]*>[^<]*</td>){4}<td class="verdict">(.*?)</td></tr>'
    verdicts = {(a, b): verdict for a, b, verdict in re.findall(cells, html, re.S)}
    assert set(verdicts) == {("A", "B"), ("A", "C"), ("B", "C")}
    assert "not as -c" in verdicts[("A", "B")] and "not as -c" in verdicts[("A", "C")]
    assert "not as -c" not in verdicts[("B", "C")] and verdicts[("B", "C")].strip()
    default = logged_in(manager).get(f"/evaluation/{pool.name}/").content.decode()
    assert "not as -c" not in default

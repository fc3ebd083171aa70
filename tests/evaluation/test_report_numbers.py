"""The numbers on the evaluation pages are the API's numbers, under the right names; topics nobody judged
are counted apart and never scored as failures; pool-bias changes are told apart and weighed against the
noise."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
import pytrec_eval
from django.test import Client

from evaluation import metrics, services
from evaluation.views import report_columns
from pooling.charts import decimals_apart
from tests.conftest import client_for
from tests.evaluation.test_reports import scored_pool  # noqa: F401 - a fixture
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge


class Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (th and td), with each table's class."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("class") or "", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(html: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def header_key(header: str) -> tuple[str, str]:
    """(measure, policy) from a column header as a reader sees it: `map`, `map (-J)`, `judged@10`."""
    if header == "judged@10":
        return "judged_10", "nonrelevant"
    if header.endswith(" (-J)"):
        return header[: -len(" (-J)")], "condensed"
    return header, "nonrelevant"


@pytest.fixture
def half_judged(db, manager):
    """Three topics, q3 judged by nobody, q4 judged with no relevant document."""
    alice = make_user("alice")
    collection = make_collection(topics=("q1", "q2", "q3", "q4"))
    runs = [
        make_run(collection=collection, name="alpha",
                 lists={"q1": ["d001", "d002", "d003"], "q2": ["d010", "d011"], "q3": ["d004", "d005"],
                        "q4": ["d006"]}),
        make_run(collection=collection, name="beta",
                 lists={"q1": ["d003", "d001"], "q2": ["d011", "d012"], "q3": ["d005"], "q4": ["d007"]}),
    ]  # fmt: skip
    pool = make_pool(collection=collection, runs=runs, raters=[alice], name="half")
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 0,
                        ("q2", "d011"): 1, ("q4", "d006"): 0, ("q4", "d007"): 0})  # fmt: skip
    return pool


# ------------------------------------------------------------------------------------------------ report


def test_every_cell_of_the_report_is_the_apis_value_for_its_run_and_measure(scored_pool, manager):  # noqa: F811
    api = client_for(manager).get("/api/evaluation/scored/report/").json()
    by_run = {row["run"]: row for row in api["runs"]}
    rows = tables(page(manager, "/evaluation/scored/"))["scores"]
    header, body = rows[0], rows[1:]
    assert header[:3] == ["Run", "In pool", "Judged topics"]
    assert header[-1] == "model labels @10"  # how much of each score rests on a model judge's labels
    keys = [header_key(h) for h in header[3:-1]]
    assert len(keys) == len(report_columns(api["measures"])) == 2 * (len(api["measures"]) - 1) + 1
    assert len(set(keys)) == len(keys)
    assert len(body) == len(by_run) == 2
    distinct = set()
    for cells in body:
        row = by_run[cells[0]]
        assert int(cells[2]) == row["topics"]
        for (measure, policy), text in zip(keys, cells[3:-1], strict=True):
            assert text == f"{row[policy][measure]:.4f}", (cells[0], measure, policy)
            distinct.add(text)
        assert cells[-1] == f"{row['model_10']:.2f}" == "0.00"
    assert len(distinct) > 4  # the measures differ, so a cell under the wrong name would be caught


def test_it_builds_headers_and_cells_from_one_list_of_columns():
    columns = report_columns(["ndcg_cut_10", "map", "judged_10"])
    assert [(m, p) for m, p, _ in columns] == [
        ("ndcg_cut_10", "nonrelevant"),
        ("ndcg_cut_10", "condensed"),
        ("map", "nonrelevant"),
        ("map", "condensed"),
        ("judged_10", "nonrelevant"),
    ]


# ------------------------------------------------------------------------------------ not judged topics


def test_split_judged_puts_topics_without_a_judged_document_apart():
    split = metrics.split_judged({"a": {"d1": 1}, "b": {"d1": -1, "d2": -1}, "c": {"d1": 0}}, topics=["z"])
    assert split.judged == ("a", "c")
    assert split.not_judged == ("b", "z")
    assert split.qrels == {"a": {"d1": 1}, "c": {"d1": 0}}


def test_the_report_leaves_not_judged_topics_out_of_every_mean(half_judged, manager):
    report = services.pool_report(pool=half_judged)
    assert report["not_judged_topics"] == ["q3"]
    assert (report["topics"], report["judged_topics"]) == (4, 3)
    qrels = {"q1": {"d001": 2, "d002": 0, "d003": 1}, "q2": {"d010": 0, "d011": 1, "d012": -1},
             "q4": {"d006": 0, "d007": 0}}  # fmt: skip
    for row in report["runs"]:
        run = services.run_as_dict(run=half_judged.runs.get(name=row["run"]))
        expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(
            {q: docs for q, docs in run.items() if q in qrels}
        )
        assert row["topics"] == 3
        assert row["nonrelevant"]["ndcg_cut_10"] == pytest.approx(
            sum(v["ndcg_cut_10"] for v in expected.values()) / 3, abs=1e-6
        )
    assert [t["n"] for t in report["significance"]] == [3]
    # segments: q1, q3 are "tail", q2, q4 "head"; q3 is counted apart in its segment
    assert report["segments"]["alpha"]["tail"]["num_q"] == 1
    assert report["segments_not_judged"] == {"tail": 1}
    html = page(manager, "/evaluation/half/")
    assert "1 of 4 topics are not judged yet" in html and "Not judged: q3" in html


def test_two_stage_gives_no_verdict_to_a_topic_not_judged_or_without_relevant_documents(half_judged, manager):
    result = services.two_stage(pool=half_judged, candidate="alpha", reranked="beta", k=10)
    assert [t["qid"] for t in result["topics"]] == ["q1", "q2"]
    assert sum(result["verdicts"].values()) == 2
    assert result["not_judged_topics"] == ["q3"]
    assert result["no_relevant_topics"] == ["q4"]
    assert result["mean_recall"] == pytest.approx(1.0)
    api = client_for(manager).get("/api/evaluation/half/two-stage/?candidate=alpha&reranked=beta&k=10").json()
    assert api["not_judged_topics"] == ["q3"] and api["verdicts"] == result["verdicts"]
    html = page(manager, "/evaluation/half/two-stage/?candidate=alpha&reranked=beta&k=10")
    assert "1 not judged yet (q3)" in html
    assert "1 judged with no relevant document" in html
    table = tables(html)[""]
    assert [row[0] for row in table[1:]] == ["q1", "q2"]


def test_two_stage_with_nothing_judged_says_so_instead_of_a_retrieval_problem(db):
    pool = make_pool(raters=[make_user("carol")], name="fresh")
    result = services.two_stage(pool=pool, candidate="alpha", reranked="beta")
    assert result["verdicts"] == {"fine": 0, "ranking problem": 0, "retrieval problem": 0}
    assert "retrieval" not in result["verdict"] and result["mean_recall"] is None
    assert result["not_judged_topics"] == ["q1", "q2"]


def test_a_report_with_nothing_judged_rests_no_score_on_a_model(db, manager):
    """No judged topic, no score: the model-label share is null (a dash on the page), not 0.00 beside
    scores that are all dashes."""
    make_pool(raters=[make_user("carol")], name="fresh", managers=[manager])
    api = client_for(manager).get("/api/evaluation/fresh/report/").json()
    assert api["runs"] and all(row["model_10"] is None and row["topics"] == 0 for row in api["runs"])
    for cells in tables(page(manager, "/evaluation/fresh/"))["scores"][1:]:
        assert set(cells[3:]) == {"–"}, cells


def test_the_report_gives_judged_at_10_once_of_the_run_as_it_is(scored_pool, manager):  # noqa: F811
    """judged@10 of a condensed run (unjudged documents dropped) is 1 by construction: the API gives the
    run's own judged@10 once, as the page's one column does, not a second, meaningless one."""
    api = client_for(manager).get("/api/evaluation/scored/report/").json()
    for row in api["runs"]:
        assert "judged_10" not in row["condensed"] and "ndcg_cut_10" in row["condensed"]
        assert row["judged_10"] == row["nonrelevant"]["judged_10"]


def test_pool_bias_scores_only_judged_topics(half_judged):
    bias = services.pool_bias(pool=half_judged)
    assert bias["not_judged_topics"] == ["q3"] and bias["judged_topics"] == 3
    report = services.pool_report(pool=half_judged)
    full = {row["run"]: row["nonrelevant"]["ndcg_cut_10"] for row in report["runs"]}
    for row in bias["runs"]:
        assert row["full"] == pytest.approx(full[row["run"]], abs=1e-6)


# ------------------------------------------------------------------------------------------ pool bias


def test_decimals_tell_small_changes_apart():
    assert decimals_apart([-0.0003, -0.0002]) == 5
    assert f"{-0.0003:.5f}" != f"{-0.0002:.5f}"
    assert decimals_apart([0.5, 0.25, None]) == 3
    assert decimals_apart([0.12345, 0.12346]) == 5
    assert decimals_apart([]) == 3


@pytest.fixture
def biased(db, manager):
    """beta alone finds a relevant document on each of eight topics: leaving them out costs it on all."""
    dora = make_user("dora")
    qids = [f"t{i}" for i in range(8)]
    collection = make_collection(topics=qids)
    runs = [
        make_run(collection=collection, name="alpha", lists={q: ["d001"] for q in qids}),
        make_run(collection=collection, name="beta", lists={q: ["d002", "d001"] for q in qids}),
    ]
    pool = make_pool(collection=collection, runs=runs, raters=[dora], name="biased")
    judge(pool, dora, {(q, d): 1 for q in qids for d in ("d001", "d002")})
    return pool


def test_pool_bias_says_which_changes_are_within_the_noise(biased, scored_pool, manager):  # noqa: F811
    rows = {row["run"]: row for row in services.pool_bias(pool=biased)["runs"]}
    assert rows["beta"]["change"] < 0 and rows["beta"]["change_p"] < 0.05
    assert rows["beta"]["within_noise"] is False
    assert rows["alpha"]["change"] == 0 and rows["alpha"]["within_noise"] is True
    html = page(manager, "/evaluation/biased/pool-bias/")
    assert "beyond the noise" in html and "within the noise" in html
    # scored: beta loses d005 on one topic of two, which two topics cannot tell from chance
    scored = {row["run"]: row for row in services.pool_bias(pool=scored_pool)["runs"]}
    assert scored["beta"]["change"] < 0 and scored["beta"]["within_noise"] is True


def test_pool_bias_page_prints_each_change_with_enough_digits(biased, manager):
    data = client_for(manager).get("/api/evaluation/biased/pool-bias/").json()
    decimals = decimals_apart([row["change"] for row in data["runs"]])
    html = page(manager, "/evaluation/biased/pool-bias/")
    shown = re.findall(r'<td class="num change">([^<]*)</td>', html)
    assert shown == [f"{row['change']:.{decimals}f}" for row in data["runs"]]

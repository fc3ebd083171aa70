"""Crediting an imported click log's interleaved pages from the interleaving page: its compute form offers
the collection's logs with pages that the manager may read, with the team names the API takes (its
defaults), and sends them through the API's own rules (`experiment_input.compute_result`, what
`POST /api/interleaving/<name>/result/` takes): refusals beside their field, the result shown after.
Managers of the collection only; another manager's log is not offered, and posting its id is refused as
the API refuses it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from online import experiments
from online.clicklogs import import_click_log
from online.models import ClickLog
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user

PAGE = "/online/interleaving/ab/"
COMPUTE = "/online/interleaving/ab/compute/"
NOT_YOURS = "no click log of that id that you may read"

#: (user, qid, docids, teams, clicks): A wins, B wins, B wins, a tie, no click, a page without teams.
PAGES = [
    ("u1", "q1", ["d001", "d003"], ["A", "B"], [1]),
    ("u1", "q1", ["d003", "d001"], ["B", "A"], [1]),
    ("u2", "q1", ["d001", "d003"], ["A", "B"], [2]),
    ("u3", "q1", ["d001", "d003"], ["A", "B"], [1, 2]),
    ("u3", "q2", ["d010", "d011"], ["A", "B"], []),
    ("u4", "q2", ["d010", "d011"], None, [1]),
]


def write_log(path: Path, pages: list[Any] = PAGES, rename: dict[str, str] | None = None) -> str:
    rename = rename or {}
    lines = [
        json.dumps({"session": f"s{i}", "user": user, "qid": qid, "docids": docids, "clicks": clicks,
                    **({"teams": [rename.get(t, t) for t in teams]} if teams else {})})
        for i, (user, qid, docids, teams, clicks) in enumerate(pages)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(db, tmp_path) -> dict[str, Any]:
    """`mia` manages collection `news` (experiment `ab`, alpha against beta); `pia` manages only a pool
    of it (a reader); `otto` manages `sports`. Logs of news: `ab-log` (interleaved pages, teams A and B),
    `teamed` (teams named blue and red), `counts` (pre-aggregated: no pages); of sports: `theirs`."""
    mia, pia, otto = make_manager("mia"), make_manager("pia"), make_manager("otto")
    news = make_collection(name="news", managers=[mia])
    sports = make_collection(name="sports", managers=[otto])
    lists = {"q1": ["d001", "d002", "d003"], "q2": ["d010"]}
    runs = [
        make_run(collection=news, name="alpha", lists=lists),
        make_run(collection=news, name="beta", lists={"q1": ["d003", "d001"], "q2": ["d011", "d010"]}),
    ]
    make_pool(collection=news, runs=runs, name="news-pool", managers=[pia])
    make_run(collection=sports, name="alpha", lists=lists)
    experiment = experiments.create_experiment(
        name="ab", collection=news, run_a="alpha", run_b="beta", length=4
    )
    counts = tmp_path / "counts.txt"
    counts.write_text("q1 d001 1 5 2\nq1 d003 2 5 1\n")
    logs = {
        "ab-log": import_click_log(collection=news, name="ab-log", format="jsonl",
                                   paths=[write_log(tmp_path / "ab.jsonl")]),
        "teamed": import_click_log(collection=news, name="teamed", format="jsonl",
                                   paths=[write_log(tmp_path / "t.jsonl", rename={"A": "blue", "B": "red"})]),
        "counts": import_click_log(collection=news, name="counts", format="counts", paths=[str(counts)]),
        "theirs": import_click_log(collection=sports, name="theirs", format="jsonl",
                                   paths=[write_log(tmp_path / "s.jsonl")]),
    }  # fmt: skip
    return {"mia": mia, "pia": pia, "otto": otto, "experiment": experiment, "logs": logs}


def offered(text: str) -> list[str]:
    select = re.search(r'<select name="click_log">(.*?)</select>', text, re.S)
    assert select, text
    return re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1))


def beside(text: str, field: str) -> list[str]:
    """The messages shown right after the field named `field` (in its paragraph)."""
    found = re.search(rf'name="{field}".*?</label> (<ul class="errorlist">.*?</ul>)?', text, re.S)
    assert found, text
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", found.group(1) or "")]


def test_it_offers_the_collections_logs_with_pages_and_the_apis_team_defaults(world) -> None:
    text = logged_in(world["mia"]).get(PAGE).content.decode()
    # the counts import has no pages to credit; sports' log is another manager's
    assert offered(text) == [
        "the impressions logged back",
        "click log ab-log (impressions JSONL)",
        "click log teamed (impressions JSONL)",
    ]
    assert 'name="team_a" value="A"' in text and 'name="team_b" value="B"' in text


def test_it_credits_a_chosen_log_and_shows_the_result_as_the_api_does(world) -> None:
    log = world["logs"]["ab-log"]
    answer = logged_in(world["mia"]).post(COMPUTE, {"click_log": log.pk, "team_a": "A", "team_b": "B"},
                                          follow=True)  # fmt: skip
    assert answer.redirect_chain == [(PAGE, 302)]
    result = world["experiment"].results.get()
    assert result.source == "click log news/ab-log"
    assert (result.wins_a, result.wins_b, result.ties, result.no_clicks) == (1, 2, 1, 1)
    text = answer.content.decode()
    assert "from the click log news/ab-log" in text
    data = client_for(world["mia"]).get("/api/interleaving/ab/result/").json()
    assert data["id"] == result.pk
    for label, key in (("A (alpha) wins", "wins_a"), ("B (beta) wins", "wins_b"), ("Ties", "ties")):
        assert re.search(rf"<th>{re.escape(label)}</th><td class=\"num\">{data[key]}</td>", text), label


def test_it_credits_the_teams_named_in_the_form(world) -> None:
    log = world["logs"]["teamed"]
    answer = logged_in(world["mia"]).post(COMPUTE, {"click_log": log.pk, "team_a": "blue", "team_b": "red"})
    assert answer.status_code == 302
    result = world["experiment"].results.get()
    assert (result.wins_a, result.wins_b, result.ties) == (1, 2, 1)


def test_without_a_log_it_computes_from_the_impressions_logged_back(world) -> None:
    answer = logged_in(world["mia"]).post(COMPUTE, {"click_log": "", "team_a": "A", "team_b": "B"})
    assert answer.status_code == 302
    assert world["experiment"].results.get().source == ""


BAD = [
    ({"click_log": "abc"}, "click_log"),  # the serializer's
    ({"click_log": "ab-log", "team_a": "alpha"}, "click_log"),  # the crediting's: no such team
    ({"click_log": "ab-log", "team_b": "x" * 101}, "team_b"),  # the serializer's
    ({"click_log": "counts"}, "click_log"),  # a log without pages
    ({"click_log": "theirs"}, "click_log"),  # another manager's log
]


@pytest.mark.parametrize(("sent", "field"), BAD)
def test_it_refuses_beside_the_field_what_the_api_refuses(world, sent, field) -> None:
    """Each refusal is the API's own answer for the same fields, shown beside the field it names, with
    what was sent kept; nothing is computed."""
    body = {"team_a": "A", "team_b": "B", **sent}
    if body["click_log"] in world["logs"]:
        body["click_log"] = world["logs"][body["click_log"]].pk
    api = client_for(world["mia"]).post("/api/interleaving/ab/result/", body, format="json")
    assert api.status_code == 400 and list(api.json()) == [field], api.content
    answer = logged_in(world["mia"]).post(COMPUTE, body)
    assert answer.status_code == 400
    text = answer.content.decode()
    assert beside(text, field) == api.json()[field]
    assert f'name="team_a" value="{body["team_a"]}"' in text
    assert not world["experiment"].results.exists()


def test_another_managers_log_is_refused_as_the_api_refuses_it(world) -> None:
    theirs = world["logs"]["theirs"].pk
    answer = logged_in(world["mia"]).post(COMPUTE, {"click_log": theirs})
    assert answer.status_code == 400 and beside(answer.content.decode(), "click_log") == [NOT_YOURS]
    assert f'<option value="{theirs}"' not in answer.content.decode()
    assert not world["experiment"].results.exists()


def test_only_the_collections_managers_may_compute(world) -> None:
    log = world["logs"]["ab-log"].pk
    reader = logged_in(world["pia"])  # manages a pool of news: reads the experiment, changes nothing
    shown = reader.get(PAGE)
    assert shown.status_code == 200 and 'name="click_log"' not in shown.content.decode()
    assert reader.post(COMPUTE, {"click_log": log}).status_code == 404
    assert logged_in(world["otto"]).post(COMPUTE, {"click_log": log}).status_code == 404
    assert logged_in(make_user("rita")).post(COMPUTE, {"click_log": log}).status_code == 403
    anonymous = Client().post(COMPUTE, {"click_log": log})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert not world["experiment"].results.exists()
    assert ClickLog.objects.count() == 4

"""A UBI query's page built from its impression events is held to the rules of every page (one document
per position, each document once), and a query whose clicks have no page is reported, not lost silently.
Pure: the reader, no database (one import at the end shows the warning where the log keeps it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from online.logformats import UbiStats
from online.ubi import read_ubi
from pooling.formats import FormatError


def write(tmp_path: Path, name: str, rows: list[dict]) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def event(action: str, query_id: str, obj: str | None, ordinal: int) -> dict:
    attributes: dict = {"position": {"ordinal": ordinal}}
    if obj is not None:
        attributes["object"] = {"object_id": obj}
    return {"action_name": action, "query_id": query_id, "event_attributes": attributes}


def queries(*ids: str) -> list[dict]:
    return [{"query_id": query_id, "user_query": f"query {query_id}"} for query_id in ids]


def pages(tmp_path: Path, events: list[dict], stats: UbiStats | None = None) -> list:
    return list(
        read_ubi(
            write(tmp_path, "q.ndjson", queries("a", "b")),
            write(tmp_path, "e.ndjson", events),
            stats=stats,
        )
    )


def errors(tmp_path: Path, events: list[dict]) -> list[str]:
    with pytest.raises(FormatError) as caught:
        pages(tmp_path, events)
    return [str(error) for error in caught.value.errors]


def test_it_refuses_the_same_document_twice_in_one_page(tmp_path) -> None:
    events = [
        event("impression", "a", "d1", 1),
        event("impression", "a", "d2", 2),
        event("impression", "a", "d1", 3),
    ]
    assert errors(tmp_path, events) == [
        f"{tmp_path}/e.ndjson:3: impression of 'd1' at position 3, but the page showed it at position 1 too"
    ]


def test_it_refuses_two_documents_at_one_position(tmp_path) -> None:
    events = [
        event("impression", "a", "d1", 1),
        event("impression", "a", "d2", 2),
        event("impression", "a", "d3", 1),
    ]
    assert errors(tmp_path, events) == [
        f"{tmp_path}/e.ndjson:3: impression of 'd3' at position 1, but the page showed 'd1' there"
    ]


def test_it_takes_an_impression_logged_twice_as_one(tmp_path) -> None:
    events = [
        event("impression", "a", "d1", 1),
        event("impression", "a", "d1", 1),
        event("click", "a", "d1", 1),
    ]
    (page,) = pages(tmp_path, events)
    assert page.shown == ["d1"] and page.clicks == [1]


def test_it_counts_the_queries_whose_clicks_have_no_page(tmp_path) -> None:
    stats = UbiStats()
    events = [
        event("impression", "a", "d1", 1),
        event("click", "a", "d1", 1),
        event("click", "b", "d5", 2),
        event("click", "b", "d6", 3),
    ]
    (page,) = pages(tmp_path, events, stats)
    assert page.query == "query a"
    assert (stats.unshown_queries, stats.unshown_clicks) == (1, 2)


@pytest.mark.django_db
def test_the_import_warns_of_the_queries_whose_clicks_have_no_page(tmp_path) -> None:
    from online.clicklogs import import_click_log
    from tests.factories import make_collection

    collection = make_collection(docs=3)
    paths = [
        write(tmp_path, "q.ndjson", queries("q1", "q2")),
        write(tmp_path, "e.ndjson", [event("impression", "q1", "d001", 1), event("click", "q2", "d002", 1)]),
    ]
    log = import_click_log(collection=collection, name="ubi", format="ubi", paths=paths)
    assert log.counts["pages"] == 1
    assert any("1 UBI queries with 1 clicks left out" in warning for warning in log.warnings), log.warnings

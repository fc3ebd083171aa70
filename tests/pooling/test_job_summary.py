"""pooling.job_summary: what every job's summary records as its counts (no database)."""

from __future__ import annotations

from collections import Counter

from judgements.crowd_import import CrowdImportSummary
from pooling.imports import ImportSummary
from pooling.pool_build import BuildSummary


def test_it_records_every_field_but_the_kind_and_the_warnings_in_field_order():
    summary = ImportSummary(kind="run", created=2, updated=1, rows=7, topics=3, seconds=1.0, warnings=["w"])
    assert list(summary.as_dict()) == ["created", "updated", "rows", "topics", "seconds"]
    assert summary.as_dict()["rows"] == 7


def test_it_rounds_the_seconds_to_the_millisecond():
    assert BuildSummary(items_added=4, seconds=1.23456).as_dict() == {
        "items_added": 4,
        "provenance_added": 0,
        "items_removed": 0,
        "topics": 0,
        "seconds": 1.235,
    }


def test_it_gives_a_counter_as_a_plain_dict_that_later_counting_leaves_alone():
    summary = CrowdImportSummary(skipped=Counter({"unknown item": 2}))
    counts = summary.as_dict()
    summary.skipped["unknown item"] += 1
    assert type(counts["skipped"]) is dict
    assert counts["skipped"] == {"unknown item": 2}

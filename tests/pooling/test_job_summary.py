"""pooling.job_summary: what every job's summary records as its counts (no database)."""

from __future__ import annotations

from collections import Counter

from judgements.crowd_import import CrowdImportSummary
from pooling.import_summary import DocumentsImportSummary, RunImportSummary, TopicsImportSummary
from pooling.job_summary import RecordCounts
from pooling.pool_build import BuildSummary


def test_it_records_every_field_but_the_kind_and_the_warnings_in_field_order_seconds_last():
    summary = TopicsImportSummary(rows=7, created=2, updated=1, topics=7, seconds=1.0, warnings=["w"])
    assert list(summary.as_dict()) == ["rows", "created", "updated", "topics", "seconds"]
    assert summary.as_dict()["rows"] == 7


def test_it_gives_each_kind_of_import_its_own_counts_and_no_others():
    assert RunImportSummary(rows=9, topics=3).as_dict() == {"rows": 9, "topics": 3, "seconds": 0.0}
    assert list(DocumentsImportSummary().as_dict()) == ["rows", "created", "updated", "seconds"]
    assert (RunImportSummary.kind, DocumentsImportSummary.kind, TopicsImportSummary.kind) == (
        "run", "documents", "topics",
    )  # fmt: skip


def test_it_keeps_the_command_lines_of_each_kind_of_import():
    assert RunImportSummary(rows=9, topics=3, seconds=0.25).line() == "run: 9 rows, 3 topics, 0.2 s"
    assert DocumentsImportSummary(rows=2, created=1, updated=1).line() == (
        "documents: 2 rows, 1 created, 1 updated, 0.0 s"
    )
    assert TopicsImportSummary(rows=3, created=3, topics=3).line() == (
        "topics: 3 rows, 3 topics, 3 created, 0 updated, 0.0 s"
    )


def test_it_records_a_records_own_counts_and_keeps_its_warnings_beside():
    summary = RecordCounts(counts={"judged": 3, "sources": {"human": 3}}, warnings=["w"])
    assert summary.as_dict() == {"judged": 3, "sources": {"human": 3}}
    assert summary.warnings == ["w"]


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


def test_every_kind_of_job_counts_its_seconds_last_and_may_leave_warnings():
    """The judgements' import (`import_judgements`) included: it once had no `warnings`, which the job's
    runner then had to look up with a default."""
    from django.utils.module_loading import import_string

    from judgements.imports import JudgementImportSummary
    from pooling.job_summary import SUMMARIES

    for summary_class in {*map(import_string, SUMMARIES.values()), JudgementImportSummary}:
        summary = summary_class(warnings=["w"])
        assert summary.warnings == ["w"] and summary.seconds == 0.0, summary_class
        if summary_class is not RecordCounts:
            assert summary_class.count_names()[-1] == "seconds", summary_class
    assert JudgementImportSummary(rows=2).as_dict() == {
        "rows": 2, "created": 0, "updated": 0, "skipped_unpooled": 0, "seconds": 0.0
    }  # fmt: skip

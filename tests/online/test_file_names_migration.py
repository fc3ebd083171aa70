"""Migrations pooling 0023 and online 0007: rows stored before file names were the rule
(`pooling.formats.client_name`) lose their server paths, and an old click-log job still finds its files."""

from __future__ import annotations

import importlib
from pathlib import Path

from django.apps import apps

from online.jobs import click_files
from online.models import ClickLog
from pooling.models import Job, Run
from tests.factories import make_collection


def test_it_keeps_only_file_names_where_old_rows_held_server_paths(db, media_root) -> None:
    collection = make_collection(name="c")
    folder = Path(media_root) / "uploads" / "clicks" / "abc123"
    run = Run.objects.create(collection=collection, name="r", source_file="/srv/media/uploads/2026/run.txt")
    kept = Run.objects.create(collection=collection, name="s", source_file="bm25.txt")
    log = ClickLog.objects.create(
        collection=collection, name="week1", format="jsonl", source_file="/tmp/a/one.jsonl, /tmp/b/two.jsonl"
    )
    job = Job.objects.create(
        kind=Job.Kind.CLICK_LOG,
        collection=collection,
        params={
            "name": "week2",
            "format": "jsonl",
            "paths": [str(folder / "0-one.jsonl"), str(folder / "1-two.jsonl")],
            "names": ["one.jsonl", "two.jsonl"],
        },
    )

    importlib.import_module("pooling.migrations.0023_client_file_names").forward(apps, None)
    importlib.import_module("online.migrations.0007_click_log_file_names").forward(apps, None)

    for row in (run, kept, log, job):
        row.refresh_from_db()
    assert (run.source_file, kept.source_file) == ("run.txt", "bm25.txt")
    assert log.source_file == "one.jsonl, two.jsonl"
    assert "paths" not in job.params and job.params["names"] == ["one.jsonl", "two.jsonl"]
    assert job.upload.name == "uploads/clicks/abc123"
    # a retry of the job reads its files where they are
    assert click_files(job) == [str(folder / "0-one.jsonl"), str(folder / "1-two.jsonl")]

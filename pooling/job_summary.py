"""What a finished job records as its counts: one rule for the summary of every kind of job.

Every job's task returns a `JobSummary` (`jobs.run_job` records its `as_dict()` as the job's counts and its
`warnings` beside them): a dataclass of the counts of that kind of job and no other's (an import of a run
has no `created`), or `RecordCounts`, the counts a record of the job's result keeps itself (a release's, a
click log's). The job's page and `GET /api/jobs/<id>/` both show those counts, and nothing else: what a job
made is in its `result` (ids), never among its counts.

The job row keeps its counts in a JSON column, which PostgreSQL (jsonb) gives back in its own key order, and
beside them their names in the summary's order (`Job.count_order`: the order a dataclass declares its fields
in, or the order a record wrote its own counts in). The page and the API show them in that order
(`ordered_counts`); a job recorded before `count_order` existed, in the order its kind's summary declares
(`SUMMARIES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from django.utils.module_loading import import_string

#: Fields a summary keeps out of its counts: the job's kind is its own column, warnings are recorded beside.
NOT_COUNTS = ("kind", "warnings")

#: The summary each kind of job records (by name, as `jobs.TASKS` names their tasks: a later app's summary is
#: not imported here).
SUMMARIES = {
    "documents": "pooling.import_summary.DocumentsImportSummary",
    "topics": "pooling.import_summary.TopicsImportSummary",
    "run": "pooling.import_summary.RunImportSummary",
    "build_pool": "pooling.pool_build.BuildSummary",
    "add_runs": "pooling.pool_build.BuildSummary",
    "judgements": "judgements.crowd_import.CrowdImportSummary",
    "release": "pooling.job_summary.RecordCounts",
    "judge": "pooling.job_summary.RecordCounts",
    "click_log": "pooling.job_summary.RecordCounts",
    "propensity": "pooling.job_summary.RecordCounts",
    "click_labels": "pooling.job_summary.RecordCounts",
}


@dataclass
class JobSummary:
    """The base of the summaries the services return to `jobs.run_job` (imports, pool builds): every job
    counts its `seconds` (shown last) and may leave `warnings` (recorded beside its counts)."""

    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def count_names(cls) -> list[str]:
        """The names of the counts, in the order they are shown: every field but `NOT_COUNTS`, in field
        order, `seconds` last."""
        names = [f.name for f in fields(cls) if f.name not in NOT_COUNTS]
        return [name for name in names if name != "seconds"] + (["seconds"] if "seconds" in names else [])

    def as_dict(self) -> dict[str, Any]:
        """The job's counts, JSON-ready (`count_names`, in that order): `seconds` rounded to the
        millisecond, a mapping as a plain dict."""
        counts: dict[str, Any] = {}
        for name in self.count_names():
            value = getattr(self, name)
            counts[name] = dict(value) if isinstance(value, dict) else value
        if "seconds" in counts:
            counts["seconds"] = round(counts["seconds"], 3)
        return counts


@dataclass
class RecordCounts(JobSummary):
    """The summary of a job whose result keeps its own counts (a release, a click log, a judge's run, ...):
    those counts, as the record has them, and its warnings."""

    counts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def count_names(cls) -> list[str]:
        return []  # the record's own, in the order it keeps them

    def as_dict(self) -> dict[str, Any]:
        return dict(self.counts)


def ordered_counts(kind: str, counts: Mapping[str, Any], order: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """The counts a job of `kind` recorded, in the order its summary gave them (`order`, the job's
    `count_order`; for a job recorded without one, the order its kind's summary declares, `count_names`);
    any other after them, in the order they are stored."""
    if not order:
        order = import_string(SUMMARIES[kind]).count_names() if kind in SUMMARIES else []
    first = [name for name in order if name in counts]
    return [(name, counts[name]) for name in [*first, *(name for name in counts if name not in first)]]

"""What a finished job records as its counts: one rule for the summary of every kind of job.

Every job's task returns a `JobSummary` (`jobs.run_job` records its `as_dict()` as the job's counts and its
`warnings` beside them): a dataclass of the counts of that kind of job and no other's (an import of a run
has no `created`), or `RecordCounts`, the counts a record of the job's result keeps itself (a release's, a
click log's). The job's page and `GET /api/jobs/<id>/` both show those counts, and nothing else: what a job
made is in its `result` (ids), never among its counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

#: Fields a summary keeps out of its counts: the job's kind is its own column, warnings are recorded beside.
NOT_COUNTS = ("kind", "warnings")


@dataclass
class JobSummary:
    """The base of the summaries the services return to `jobs.run_job` (imports, pool builds)."""

    def as_dict(self) -> dict[str, Any]:
        """The job's counts, JSON-ready: every field but `NOT_COUNTS`, in field order, `seconds` last and
        rounded to the millisecond; a mapping as a plain dict."""
        counts: dict[str, Any] = {}
        for f in fields(self):
            if f.name not in NOT_COUNTS:
                value = getattr(self, f.name)
                counts[f.name] = dict(value) if isinstance(value, dict) else value
        if "seconds" in counts:
            counts["seconds"] = round(counts.pop("seconds"), 3)
        return counts


@dataclass
class RecordCounts(JobSummary):
    """The summary of a job whose result keeps its own counts (a release, a click log, a judge's run, ...):
    those counts, as the record has them, and its warnings."""

    counts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.counts)

"""What a finished job records as its counts: one rule for the summary of every kind of job."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

#: Fields a summary keeps out of its counts: the job's kind is its own column, warnings are recorded beside.
NOT_COUNTS = ("kind", "warnings")


@dataclass
class JobSummary:
    """The base of the summaries the services return to `jobs.run_job` (imports, pool builds)."""

    def as_dict(self) -> dict[str, Any]:
        """The job's counts, JSON-ready: every field but `NOT_COUNTS`, in field order; a mapping as a plain
        dict; `seconds` rounded to the millisecond."""
        counts: dict[str, Any] = {}
        for f in fields(self):
            if f.name not in NOT_COUNTS:
                value = getattr(self, f.name)
                counts[f.name] = dict(value) if isinstance(value, dict) else value
        if "seconds" in counts:
            counts["seconds"] = round(counts["seconds"], 3)
        return counts

"""What an import of a collection's file (documents, topics, a run) counts: each kind its own counts, no
other's (a run's import creates or updates no documents), recorded as its job's counts
(`JobSummary.as_dict`) and printed as the command's last line (`line`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pooling.job_summary import JobSummary


@dataclass
class ImportSummary(JobSummary):
    """What an import of a collection's file counts: its rows and its seconds, and the counts of its own
    kind of file (`DocumentsImportSummary`, `TopicsImportSummary`, `RunImportSummary`), no other's."""

    kind: ClassVar[str] = ""
    rows: int = 0

    def line(self) -> str:
        """The line a command ends with: `run: 9 rows, 3 topics, 0.2 s`."""
        return ", ".join([f"{self.kind}: {self.rows} rows", *self._details(), f"{self.seconds:.1f} s"])

    def _details(self) -> list[str]:
        return []


@dataclass
class _KeyedImportSummary(ImportSummary):
    """Documents and topics are stored by key (docid, qid): each row creates one, or updates the one of its
    key."""

    created: int = 0
    updated: int = 0

    def _details(self) -> list[str]:
        return [f"{self.created} created, {self.updated} updated"] if self.created or self.updated else []


@dataclass
class DocumentsImportSummary(_KeyedImportSummary):
    kind: ClassVar[str] = "documents"


@dataclass
class TopicsImportSummary(_KeyedImportSummary):
    """`topics`: the topics the file holds."""

    kind: ClassVar[str] = "topics"
    topics: int = 0

    def _details(self) -> list[str]:
        return [f"{self.topics} topics", *super()._details()]


@dataclass
class RunImportSummary(ImportSummary):
    """A run's rows, and the topics they rank documents for (one run: it is created, or replaced)."""

    kind: ClassVar[str] = "run"
    topics: int = 0

    def _details(self) -> list[str]:
        return [f"{self.topics} topics"]

"""The error log of one run or qrels file (``ErrorLog``: its ``FILE:LINE: message`` errors, bounded by
``max_errors``) and the messages for a (qid, docid) given twice.
"""

from __future__ import annotations

import math

from pooling.formats import FormatError, LineError

_MAX_ERRORS = 50


class ErrorLog:
    """The problems found in one file, each ``FILE:LINE: message`` (a :class:`pooling.formats.LineError`).

    At most ``max_errors`` are listed: once that many are recorded the reader stops reading, and
    :meth:`raise_if_any` ends the list with ``stopped reading after N errors`` on the line after the last
    one listed (as the other readers of ``pooling.formats`` do). Errors found once the whole file was read
    (duplicates) that go beyond the limit are counted in a last ``... and N more`` error. Callers (the
    importer) may add their own errors.
    """

    def __init__(self, source: str, max_errors: int = _MAX_ERRORS) -> None:
        if max_errors < 1:
            raise ValueError("max_errors must be at least 1")
        self.source = source
        self.max_errors = max_errors
        self.items: list[tuple[int | None, str]] = []
        self.total = 0
        self.stopped = False  # reading stopped at max_errors
        self.lines_read = 0
        self.rows_seen = self.bytes_seen = False  # for "file is empty" / "no rows found"

    def add(self, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.items) < max(self.max_errors, _MAX_ERRORS):
            self.items.append((line, message))

    @property
    def full(self) -> bool:
        return self.total >= self.max_errors

    def errors(self) -> list[LineError]:
        """The errors in line order (file-level ones last), bounded as the class says."""
        ordered = sorted(self.items, key=lambda item: math.inf if item[0] is None else item[0])
        shown = [LineError(self.source, line, message) for line, message in ordered[: self.max_errors]]
        last = shown[-1].line if shown else None
        if self.stopped and last is not None and (self.total > len(shown) or last < self.lines_read):
            shown.append(LineError(self.source, last + 1, f"stopped reading after {self.max_errors} errors"))
        elif self.total > len(shown):
            shown.append(LineError(self.source, None, f"... and {self.total - len(shown)} more"))
        return shown

    def raise_if_any(self) -> None:
        """Raise :class:`pooling.formats.FormatError` with :meth:`errors`, if anything was recorded."""
        if self.total:
            raise FormatError(self.errors())


#: The one message for a docid given twice for a topic in a run (trec_eval: "duplicate docs").
DUPLICATE_DOCID = "duplicate docid {docid} for qid {qid} (first at line {first})"


#: The one message for a (qid, docid) judged twice in a qrels file.
DUPLICATE_JUDGEMENT = "duplicate judgement for qid {qid}, docid {docid} (first at line {first})"

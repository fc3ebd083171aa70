"""What the topics and documents readers share: :func:`guess_format` (a file's format from its name),
``_Reader`` (a file's lines, its errors, the duplicate check, the end) and ``_id_problem`` (what makes a
qid or docid unusable).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pooling.formats.entries import DocumentEntry, TopicEntry
from pooling.formats.errors import FormatError, LineError
from pooling.formats.opening import Source, open_lines, source_name, without_gz


def guess_format(path: str, kind: str) -> str:
    """The format of a documents or topics file from its extension, ``.gz`` stripped first.

    - documents: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv``/``.txt`` → ``"tsv"``; ``.trec``/``.sgml``/
      ``.xml`` and anything else (classic collection files often have no extension) → ``"trec"``.
    - topics: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv`` → ``"tsv"``; anything else → ``"trec"``.
    - run, qrels: always ``"trec"`` (there is only one format, read by ``pooling.trec_io``).
    """
    ext = os.path.splitext(without_gz(source_name(path)).lower())[1]
    if kind == "documents":
        if ext in (".jsonl", ".json"):
            return "jsonl"
        if ext in (".tsv", ".txt"):
            return "tsv"
        return "trec"
    if kind == "topics":
        if ext in (".jsonl", ".json"):
            return "jsonl"
        if ext == ".tsv":
            return "tsv"
        return "trec"
    if kind in ("run", "qrels"):
        return "trec"
    raise ValueError(f"unknown kind {kind!r}; expected documents, topics, run or qrels")


_Entry = TypeVar("_Entry", TopicEntry, DocumentEntry)


class _Reader:
    """Error bookkeeping shared by the readers."""

    def __init__(self, source: Source, max_errors: int) -> None:
        if max_errors < 1:
            raise ValueError("max_errors must be at least 1")
        self.source = source
        self.path = source_name(source)
        self.max_errors = max_errors
        self.errors: list[LineError] = []
        self.entries = 0
        self.content = False  # a non-blank line was seen
        self.complete = False  # the file was read to its end

    def lines(self) -> Iterator[tuple[int, str]]:
        self.complete = yield from open_lines(self.source, errors=self.errors, max_errors=self.max_errors)

    def tab_fields(self) -> Iterator[tuple[int, list[str]]]:
        """``(number, fields)`` of each non-blank line, split on tabs as they stand (no unescaping)."""
        for lineno, line in self.lines():
            if line.strip():
                self.content = True
                yield lineno, line.split("\t")

    def first_of_each(self, entries: Iterable[_Entry], key: str, what: str) -> Iterator[_Entry]:
        """The ``entries`` whose ``key`` (qid, docid) has not come before, counted; a repeated one is an
        error on its line. At the end, :meth:`finish` with ``what`` the file holds."""
        seen: dict[str, int] = {}
        for entry in entries:
            value = getattr(entry, key)
            if value in seen:
                self.error(entry.line, f"duplicate {key} {value!r} (first at line {seen[value]})")
                continue
            seen[value] = entry.line
            self.entries += 1
            yield entry
        self.finish(what)

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(LineError(self.path, line, message))

    def finish(self, what: str) -> None:
        """Raise the errors, if any; a file without a single entry is an error too."""
        if not self.errors and self.entries == 0:
            self.error(None, f"no {what} found" if self.content else "file is empty")
        if self.errors:
            raise FormatError(self.errors)


_WHITESPACE = re.compile(r"\s")

#: The longest qid and docid a collection keeps, in characters: the columns ``pooling.models.Topic.qid``
#: and ``Document.docid`` (tests/test_bad_input_fuzz.py checks that they agree). A longer one is an error
#: on its line, not a database error at the end of the import.
MAX_ID_LENGTH = {"qid": 100, "docid": 255}


def _id_problem(value: str, what: str) -> str | None:
    if not value:
        return f"{what} is empty"
    if _WHITESPACE.search(value):
        return f"{what} {value!r} contains whitespace"
    limit = MAX_ID_LENGTH.get(what)
    if limit is not None and len(value) > limit:
        return f"{what} {value[:40]!r}… is {len(value):,} characters long (at most {limit:,})"
    return None

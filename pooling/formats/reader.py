"""What the topics and documents readers share: :func:`format_guess` (a file's
format from its name), ``_Reader`` (a file's lines, its errors, the duplicate check, the end) and
``_id_problem`` (what makes a qid or docid unusable).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pooling.formats.entries import DocumentEntry, TopicEntry
from pooling.formats.errors import FormatError, LineError
from pooling.formats.opening import Source, open_lines, source_name, without_gz

#: The extensions (``.gz`` dropped first, any case) that name the format of a documents or topics file.
#: A name with another extension, or none (classic collection files often have none), is read in
#: ``DEFAULT_FORMAT``, and the errors of such a file say that the format was guessed (:func:`format_guess`).
EXTENSIONS = {
    "documents": {
        ".jsonl": "jsonl",
        ".json": "jsonl",
        ".tsv": "tsv",
        ".txt": "tsv",
        ".trec": "trec",
        ".sgml": "trec",
        ".xml": "trec",
    },
    "topics": {
        ".jsonl": "jsonl",
        ".json": "jsonl",
        ".tsv": "tsv",
        ".trec": "trec",
        ".sgml": "trec",
        ".xml": "trec",
    },
}
DEFAULT_FORMAT = "trec"
#: How an error names the format a file was read in (the upload form's labels).
FORMAT_NAMES = {"jsonl": "JSON lines", "tsv": "TSV", "trec": "TREC SGML"}


def format_guess(path: str, kind: str) -> tuple[str, str | None]:
    """The format of a documents or topics file from its name, and None when its extension names it, or
    else why it is read in ``DEFAULT_FORMAT`` (which the reader adds to the file's errors, if it has any:
    a file read in a guessed format may well be in another). The one rule of a file's format from its
    name (``EXTENSIONS``), ``.gz`` stripped first:

    - documents: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv``/``.txt`` → ``"tsv"``; ``.trec``/``.sgml``/
      ``.xml`` and anything else (classic collection files often have no extension) → ``"trec"``.
    - topics: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv`` → ``"tsv"``; anything else → ``"trec"``.
    - run, qrels: always ``"trec"`` (there is only one format, read by ``pooling.trec_io``).
    """
    if kind in ("run", "qrels"):
        return "trec", None
    if kind not in EXTENSIONS:
        raise ValueError(f"unknown kind {kind!r}; expected documents, topics, run or qrels")
    known = EXTENSIONS[kind]
    ext = os.path.splitext(without_gz(os.path.basename(path)).lower())[1]
    if ext in known:
        return known[ext], None
    listed = ", ".join(known)
    why = (
        f"the extension {ext!r} is not one of {listed}"
        if ext
        else f"the name has no extension (the known ones: {listed})"
    )
    return DEFAULT_FORMAT, (
        f"read as {FORMAT_NAMES[DEFAULT_FORMAT]}, a guess: {why}; give the format if the file is in another "
        "(--format, the upload form's Format, the API's format)"
    )


_Entry = TypeVar("_Entry", TopicEntry, DocumentEntry)


class _Reader:
    """Error bookkeeping shared by the readers."""

    def __init__(self, source: Source, max_errors: int, guessed: str | None = None) -> None:
        if max_errors < 1:
            raise ValueError("max_errors must be at least 1")
        self.source = source
        self.path = source_name(source)
        self.guessed = guessed  # why the format was guessed (`format_guess`), or None: given or named
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
        """Raise the errors, if any; a file without a single entry is an error too. Those of a file with
        text in it read in a guessed format (`guessed`) start by saying so: the guess may be what is wrong."""
        if not self.errors and self.entries == 0:
            self.error(None, f"no {what} found" if self.content else "file is empty")
        if self.errors:
            if self.content and self.guessed:
                self.errors.insert(0, LineError(self.path, None, self.guessed))
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

"""The topics reader, :func:`read_topics`, and its three formats (TREC, TSV, JSONL)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pooling.formats.entries import TopicEntry
from pooling.formats.jsonl import _Invalid, _json_id, _json_objects, _json_text
from pooling.formats.opening import Source, source_name
from pooling.formats.reader import _id_problem, _Reader, format_guess
from pooling.formats.sgml import _SPACES, _blocks

TOPIC_FORMATS = ("jsonl", "tsv", "trec")


def read_topics(path: Source, *, format: str | None = None, max_errors: int = 50) -> Iterator[TopicEntry]:
    """Yield the topics of a TREC topic file, a TSV file or a JSONL file (``format`` from the extension
    when not given, see :func:`format_guess`; the errors of a file read in a guessed format say so). A qid
    and a non-empty query are required; a qid appearing twice is an error.

    - ``trec``: ``<top> <num> Number: 301 <title> … <desc> Description: … <narr> Narrative: … </top>``,
      inner tags usually not closed (a section runs until the next tag). Tag names are case-insensitive.
      The prefixes ``Number:``, ``Topic:`` (TREC-1/2 titles), ``Description:`` and ``Narrative:`` are
      removed, whitespace is collapsed to single spaces, other sections (``<dom>``, ``<con>``, ``<fac>``,
      ``<smry>``…) are ignored, and an all-digit qid loses its leading zeros (TREC-1/2 topics are numbered
      ``051`` while their qrels and runs say ``51``). Segments are empty. ``<top>`` opened and not closed
      (at the end of the file or before the next ``<top>``) is an error on the line where it opened;
      non-blank text outside ``<top>…</top>`` is an error.
    - ``tsv``: ``qid<TAB>query`` or ``qid<TAB>query<TAB>segments`` with the segments comma-separated
      (``head,navigational``); qid and query are stripped of surrounding whitespace. Any other number of
      fields is an error. There is no header line.
    - ``jsonl``: one object per line, ``{"qid", "query", "description", "narrative", "segments"}``; qid a
      string (an integer is accepted and converted), query a non-empty string, description and narrative
      optional strings (null = ""), segments an optional array of non-empty strings. Other keys are
      ignored.
    """
    guessed = None  # why the format was guessed, for the errors (`format_guess`)
    if not format:
        format, guessed = format_guess(source_name(path), "topics")
    if format not in TOPIC_FORMATS:
        raise ValueError(f"unknown topics format {format!r}; expected one of {', '.join(TOPIC_FORMATS)}")
    reader = _Reader(path, max_errors, guessed)
    parse = {"trec": _trec_topics, "tsv": _tsv_topics, "jsonl": _jsonl_topics}[format]
    yield from reader.first_of_each(parse(reader), "qid", "topics")


def _tsv_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for lineno, parts in reader.tab_fields():
        if len(parts) not in (2, 3):
            reader.error(
                lineno,
                f"expected 2 or 3 tab-separated fields 'qid<TAB>query[<TAB>segments]', found {len(parts)}",
            )
            continue
        qid, query = parts[0].strip(), parts[1].strip()
        problem = _id_problem(qid, "qid")
        if problem is None and not query:
            problem = f"topic {qid!r} has an empty query"
        if problem:
            reader.error(lineno, problem)
            continue
        segments = tuple(s.strip() for s in parts[2].split(",") if s.strip()) if len(parts) == 3 else ()
        yield TopicEntry(qid, query, "", "", segments, lineno)


def _jsonl_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for lineno, obj in _json_objects(reader):
        try:
            qid = _json_id(obj, ("qid",), "qid")
            query = _json_text(obj, ("query",)).strip()
            if not query:
                raise _Invalid(
                    f"topic {qid!r} has no query"
                    if "query" not in obj
                    else f"topic {qid!r} has an empty query"
                )
            description = _json_text(obj, ("description",)).strip()
            narrative = _json_text(obj, ("narrative",)).strip()
            raw_segments = obj.get("segments")
            if raw_segments is None:
                segments: tuple[str, ...] = ()
            elif isinstance(raw_segments, list) and all(
                isinstance(s, str) and s.strip() for s in raw_segments
            ):
                segments = tuple(s.strip() for s in raw_segments)
            else:
                raise _Invalid("field 'segments' must be an array of non-empty strings")
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        yield TopicEntry(qid, query, description, narrative, segments, lineno)


_TOP_TAG = re.compile(r"<(/?)top\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z][\w.-]*)[^>]*>")
_TOPIC_PREFIXES = {
    "num": re.compile(r"^number\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^topic\s*:\s*", re.IGNORECASE),
    "desc": re.compile(r"^description\s*:\s*", re.IGNORECASE),
    "narr": re.compile(r"^narrative\s*:\s*", re.IGNORECASE),
}


def _trec_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for line, block in _blocks(reader, _TOP_TAG, "top"):
        sections: dict[str, list[str]] = {}
        current: str | None = None
        position = 0
        for match in _ANY_TAG.finditer(block):
            if current is not None:
                sections.setdefault(current, []).append(block[position : match.start()])
            current = None if match.group(1) else match.group(2).lower()
            position = match.end()
        if current is not None:
            sections.setdefault(current, []).append(block[position:])

        def section(name: str, sections: dict[str, list[str]] = sections) -> str:
            value = _SPACES.sub(" ", " ".join(sections.get(name, []))).strip()
            prefix = _TOPIC_PREFIXES.get(name)
            return prefix.sub("", value) if prefix else value

        if "num" not in sections:
            reader.error(line, "topic has no <num>")
            continue
        qid = section("num")
        problem = _id_problem(qid, "qid")
        if problem:
            reader.error(line, problem)
            continue
        if qid.isdigit() and qid.isascii():
            qid = qid.lstrip("0") or "0"
        query = section("title")
        if not query:
            reader.error(line, f"topic {qid!r} has no <title> (empty query)")
            continue
        yield TopicEntry(qid, query, section("desc"), section("narr"), (), line)

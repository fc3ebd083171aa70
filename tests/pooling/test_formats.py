"""Tests for the pure, streaming file readers: pooling.formats (topics, documents, and what every reader
shares: opening, errors, limits) and its runs and qrels through pooling.trec_io, the one reader of those
(the run and qrels readers pooling.formats had are gone; their tests are here, on the reader that stays)."""

from __future__ import annotations

import gzip
import io
import pickle
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling import formats, trec_io
from pooling.formats import (
    DocumentEntry,
    FormatError,
    LineError,
    TopicEntry,
    format_guess,
    open_lines,
    read_documents,
    read_topics,
    source_name,
)

DATA = Path(__file__).resolve().parent.parent / "data"
GOOD = DATA / "good"
BAD = DATA / "bad"


# ------------------------------------------------------------------------------------------- helpers


class RunEntry(NamedTuple):
    """One run row as the streaming reader gives it (``trec_io.iter_run``), with its file line."""

    qid: str
    docid: str
    score: float
    line: int


class QrelEntry(NamedTuple):
    qid: str
    docid: str
    rel: int
    line: int


class RankedList(NamedTuple):
    """A topic's ranked list from ``trec_io.read_run`` in trec_eval order (``trec_io.trec_order``), with
    the line of the topic's first row."""

    qid: str
    docids: list[str]
    scores: list[float]
    first_line: int


def make_file(
    tmp_path: Path, content: str | bytes, *, name: str = "file.txt", compress: bool = False
) -> Path:
    data = content.encode() if isinstance(content, str) else content
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def run_file(entries: list[RunEntry], name: str = "run") -> io.BytesIO:
    """A run file (an upload, in memory) with one line per entry, in order."""
    upload = io.BytesIO("".join(f"{e.qid} Q0 {e.docid} {e.line} {e.score!r} t\n" for e in entries).encode())
    upload.name = name
    return upload


def read_all_runs(source: Any, **options: Any) -> list[RankedList]:
    """Every topic's ranked list, topics in order of first appearance."""
    table = trec_io.read_run(source, **options)
    order = trec_io.trec_order(table.topic, table.score, table.docid, len(table.topic_ids))
    order = np.arange(len(table)) if order is None else order
    lines = table.line
    lists = []
    for code in sorted(set(table.topic.tolist()), key=lambda c: int(lines[table.topic == c].min())):
        rows = order[table.topic[order] == code]
        lists.append(
            RankedList(
                table.topic_ids[code],
                [docid.decode() for docid in table.docid[rows].tolist()],
                table.score[rows].tolist(),
                int(lines[table.topic == code].min()),
            )
        )
    return lists


def stream_run(source: Any, *, max_errors: int = 50) -> tuple[list[RunEntry], FormatError | None]:
    """The rows ``trec_io.iter_run`` streams (bad lines left out), and the error it ends with (if any)."""
    log = trec_io.ErrorLog(source_name(source), max_errors)
    entries = [
        RunEntry(qid, docid.decode(), score, line)
        for chunk in trec_io.iter_run(source, log)
        for qid, docid, score, line in zip(
            np.repeat(np.array(chunk.qids, dtype=object), chunk.qid_lengths).tolist(),
            chunk.docid.tolist(),
            chunk.score.tolist(),
            chunk.line.tolist(),
            strict=True,
        )
    ]
    try:
        log.raise_if_any()
    except FormatError as exc:
        return entries, exc
    return entries, None


def read_run(source: Any, **options: Any) -> list[RunEntry]:
    """All the rows of a run file, in file order; a FormatError if anything is wrong."""
    entries, error = stream_run(source, **options)
    if error is not None:
        raise error
    return entries


def stream_qrels(source: Any) -> tuple[list[QrelEntry], FormatError | None]:
    log = trec_io.ErrorLog(source_name(source))
    entries = [
        QrelEntry(qid, docid, grade, line)
        for chunk in trec_io.iter_qrels(source, log)
        for qid, docid, grade, line in zip(
            chunk.qid, chunk.docid, chunk.grade.tolist(), chunk.line.tolist(), strict=True
        )
    ]
    try:
        log.raise_if_any()
    except FormatError as exc:
        return entries, exc
    return entries, None


def read_qrels(source: Any) -> list[QrelEntry]:
    entries, error = stream_qrels(source)
    if error is not None:
        raise error
    return entries


def errors_of(read: Callable[[], Any]) -> list[LineError]:
    with pytest.raises(FormatError) as info:
        read()
    return info.value.errors


def consume(iterator: Iterator[Any]) -> tuple[list[Any], FormatError | None]:
    """Everything the iterator yields before it raises, and the FormatError it raised (if any)."""
    entries: list[Any] = []
    try:
        for entry in iterator:
            entries.append(entry)
    except FormatError as exc:
        return entries, exc
    return entries, None


EXPECTED_DOCS = [
    (
        "d01",
        "Mafia networks cross borders",
        "Police in three countries arrested members of an organized crime network "
        "smuggling drugs and weapons.",
    ),
    (
        "d02",
        "Interpol report on trafficking",
        "Interpol says international criminal groups launder money through shell companies.",
    ),
    ("d03", "Local bakery wins award", "A family bakery won the regional bread prize for the third year."),
    (
        "d04",
        "Customs seize counterfeit goods",
        "Customs officers seized counterfeit watches linked to a crime syndicate.",
    ),
    (
        "d05",
        "Polio survivors report new weakness",
        "Decades after the illness, many polio survivors report fatigue and muscle weakness known as "
        "post-polio syndrome.",
    ),
    (
        "d06",
        "Vaccination campaign reaches villages",
        "The polio vaccination campaign reached remote villages this spring.",
    ),
    ("d07", "Marathon results", "The city marathon was won in record time."),
    (
        "d08",
        "Understanding post-polio syndrome",
        "Post-polio syndrome is a condition that affects survivors years after recovery "
        "from acute poliomyelitis.",
    ),
    (
        "d09",
        "Hubble images distant galaxies",
        "The Hubble Space Telescope captured images of galaxies more than ten billion light years away.",
    ),
    (
        "d10",
        "Repairs extend telescope life",
        "Astronauts replaced gyroscopes and cameras, extending the telescope's working life.",
    ),
    ("d11", "Amateur astronomy club meets", "The astronomy club meets on Fridays & welcomes beginners."),
    (
        "d12",
        "Telescope mirror flaw corrected",
        "Corrective optics fixed the flaw in Hubble's primary mirror in 1993.",
    ),
]

EXPECTED_TOPICS = [
    (
        "301",
        "international organized crime",
        "Identify organizations that participate in international criminal activity.",
        "A relevant document must name an organization and the countries it operates in.",
        ("head",),
    ),
    (
        "302",
        "poliomyelitis and post-polio",
        "Is the disease of poliomyelitis (polio) under control in the world?",
        "Relevant documents discuss polio cases, vaccination or post-polio syndrome.",
        ("tail",),
    ),
    (
        "303",
        "hubble telescope achievements",
        "Identify positive accomplishments of the Hubble telescope since it was launched.",
        "Documents about the telescope's repairs alone are not relevant.",
        ("head", "navigational"),
    ),
]


# ------------------------------------------------------------------------------------- good corpus


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz", "docs.tsv", "docs.trec"])
def test_it_reads_every_good_documents_file_to_the_same_documents(name: str) -> None:
    documents = list(read_documents(GOOD / name))
    assert [(d.docid, d.title, d.text) for d in documents] == EXPECTED_DOCS


def test_it_reads_urls_and_metadata_from_good_jsonl_and_trec_documents() -> None:
    jsonl = {d.docid: d for d in read_documents(GOOD / "docs.jsonl")}
    assert jsonl["d01"].url == "https://news.example.org/1991/mafia-networks"
    assert jsonl["d01"].metadata == {"source": "newswire", "year": 1991}
    assert jsonl["d05"].metadata == {"source": "health-weekly", "year": 1992}
    assert jsonl["d02"].url == "" and jsonl["d02"].metadata == {}
    assert [d.line for d in jsonl.values()] == list(range(1, 13))
    trec = {d.docid: d for d in read_documents(GOOD / "docs.trec")}
    assert trec["d09"].url == "https://news.example.org/1994/hubble-galaxies"
    assert trec["d02"].url == "" and trec["d01"].metadata == {}
    assert trec["d01"].line == 1 and trec["d02"].line == 12


def test_it_reads_the_good_topics_in_every_format() -> None:
    jsonl = list(read_topics(GOOD / "topics.jsonl"))
    assert [(t.qid, t.query, t.description, t.narrative, t.segments) for t in jsonl] == EXPECTED_TOPICS
    trec = list(read_topics(GOOD / "topics.trec"))
    assert [(t.qid, t.query, t.description, t.narrative) for t in trec] == [e[:4] for e in EXPECTED_TOPICS]
    assert all(t.segments == () for t in trec)
    assert [t.line for t in trec] == [1, 16, 28]
    tsv = list(read_topics(GOOD / "topics.tsv"))
    assert [(t.qid, t.query, t.segments) for t in tsv] == [(e[0], e[1], e[4]) for e in EXPECTED_TOPICS]
    assert all(t.description == "" and t.narrative == "" for t in tsv)


def test_it_reads_the_good_runs_in_trec_eval_order() -> None:
    run_a = read_all_runs(GOOD / "run_a.txt")
    assert [(b.qid, b.docids, b.scores, b.first_line) for b in run_a] == [
        ("301", ["d01", "d04", "d02", "d03"], [12.5, 9.75, 9.75, 3.0], 2),
        ("302", ["d08", "d05", "d07"], [8.0, 7.5, 1.25], 6),
        ("303", ["d09", "d12", "d11"], [11.0, 10.0, 2.5], 9),
    ]
    run_b = read_all_runs(GOOD / "run_b.txt.gz")
    assert [(b.qid, b.docids, b.scores) for b in run_b] == [
        ("301", ["d02", "d01", "d05"], [-1.2, -2.5, -3.0]),
        ("302", ["d05", "d06", "d08"], [-0.5, -0.9, -1.1]),
        ("303", ["d10", "d12", "d09"], [-0.3, -0.4, -0.4]),
    ]


def test_it_reads_the_good_qrels() -> None:
    qrels = list(read_qrels(GOOD / "qrels.txt"))
    assert len(qrels) == 13
    assert qrels[0] == QrelEntry("301", "d01", 3, 1)
    assert QrelEntry("301", "d05", -1, 5) in qrels
    assert {q.qid for q in qrels} == {"301", "302", "303"}


def test_it_keeps_the_good_files_consistent_with_each_other() -> None:
    docids = {d.docid for d in read_documents(GOOD / "docs.jsonl")}
    qids = {t.qid for t in read_topics(GOOD / "topics.jsonl")}
    for name in ("run_a.txt", "run_b.txt.gz"):
        for block in read_all_runs(GOOD / name):
            assert block.qid in qids and set(block.docids) <= docids
    qrels = {(q.qid, q.docid) for q in read_qrels(GOOD / "qrels.txt")}
    assert {q for q, _ in qrels} == qids and {d for _, d in qrels} <= docids
    retrieved = {
        (b.qid, d) for n in ("run_a.txt", "run_b.txt.gz") for b in read_all_runs(GOOD / n) for d in b.docids
    }
    assert retrieved == qrels


def test_it_scores_the_good_run_like_pytrec_eval() -> None:
    qrels: dict[str, dict[str, int]] = {}
    for q in read_qrels(GOOD / "qrels.txt"):
        qrels.setdefault(q.qid, {})[q.docid] = q.rel
    run = {b.qid: dict(zip(b.docids, b.scores, strict=True)) for b in read_all_runs(GOOD / "run_a.txt")}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.1"}).evaluate(run)
    # 302's top document under trec_eval order is d08 (grade 3), 301's is d01 (grade 3).
    assert result["301"]["P_1"] == 1.0 and result["302"]["P_1"] == 1.0
    assert result["303"]["recip_rank"] == 1.0


# -------------------------------------------------------------------------------------- bad corpus

# (file, kind, line or None for file-level (or a line that depends on gzip chunking: "any"), text in message)
BAD_CASES: list[tuple[str, str, int | None | str, str]] = [
    ("run_short_line.txt", "run", 3, "expected 6 fields"),
    ("run_nan_score.txt", "run", 2, "score 'nan' is not a finite number"),
    ("run_inf_score.txt", "run", 3, "score '-inf' is not a finite number"),
    ("run_non_numeric_score.txt", "run", 2, "score 'high' is not a number"),
    ("run_duplicate_doc.txt", "run", 3, "duplicate docid 'd01'"),
    # trec_eval's "duplicate docs" wherever the second row is: one reader, whole topics.
    (
        "run_duplicate_doc_noncontiguous.txt",
        "run",
        3,
        "duplicate docid 'd01' for qid '301' (first at line 1)",
    ),
    ("run_invalid_utf8.txt", "run", 2, "invalid UTF-8"),
    ("run_truncated.txt.gz", "run", "any", "truncated gzip file"),
    ("run_corrupt_gzip.txt.gz", "run", 3, "corrupt gzip file: CRC check failed"),
    ("run_empty.txt", "run", None, "file is empty"),
    ("run_only_comments.txt", "run", None, "no run rows found"),
    ("qrels_non_integer.txt", "qrels", 2, "relevance '1.5' is not an integer"),
    ("qrels_short_line.txt", "qrels", 3, "expected 4 fields"),
    ("qrels_long_line.txt", "qrels", 2, "expected 4 fields 'qid iter docid rel', found 5"),
    ("qrels_duplicate_pair.txt", "qrels", 3, "duplicate judgement"),
    ("topics_unclosed_top.trec", "topics", 7, "<top> opened here is never closed"),
    ("topics_missing_num.trec", "topics", 1, "topic has no <num>"),
    ("topics_missing_query.jsonl", "topics", 2, "topic '302' has no query"),
    ("topics_not_object.jsonl", "topics", 2, "expected a JSON object, found an array"),
    ("topics_bad_json.jsonl", "topics", 2, "invalid JSON"),
    ("topics_duplicate_qid.tsv", "topics", 3, "duplicate qid '301' (first at line 1)"),
    ("topics_empty_query.tsv", "topics", 2, "empty query"),
    ("topics_too_many_fields.tsv", "topics", 1, "expected 2 or 3 tab-separated fields"),
    ("docs_not_object.jsonl", "documents", 2, "expected a JSON object, found a string"),
    ("docs_missing_docid.jsonl", "documents", 2, "missing required field 'docid'"),
    ("docs_duplicate_docid.jsonl", "documents", 3, "duplicate docid 'd01' (first at line 1)"),
    ("docs_docid_whitespace.jsonl", "documents", 1, "contains whitespace"),
    ("docs_metadata_not_object.jsonl", "documents", 1, "'metadata' must be an object"),
    ("docs_bad_json.jsonl", "documents", 2, "invalid JSON"),
    ("docs_short_tsv.tsv", "documents", 2, "expected 3 tab-separated fields"),
    ("docs_invalid_utf8.tsv", "documents", 3, "invalid UTF-8 (byte 0xe9"),
    ("docs_truncated.jsonl.gz", "documents", "any", "truncated gzip file"),
    ("docs_empty.jsonl", "documents", None, "file is empty"),
    ("docs_unclosed_doc.trec", "documents", 7, "<DOC> opened here is never closed"),
    ("docs_nested_doc.trec", "documents", 1, "not closed before the <DOC> on line 5"),
    ("docs_missing_docno.trec", "documents", 6, "document has no <DOCNO>"),
    ("docs_text_outside_doc.trec", "documents", 5, "text outside <DOC>"),
]
# Syntactically valid: only the importer, which knows the collection, rejects it.
IMPORTER_ONLY = ["run_unknown_topic.txt"]

READERS: dict[str, Callable[[Path], list[Any]]] = {
    "run": read_all_runs,
    "qrels": lambda path: list(read_qrels(path)),
    "topics": lambda path: list(read_topics(path)),
    "documents": lambda path: list(read_documents(path)),
}


@pytest.mark.parametrize(("name", "kind", "line", "message"), BAD_CASES, ids=[case[0] for case in BAD_CASES])
def test_it_rejects_each_bad_file_naming_file_and_line(
    name: str, kind: str, line: int | None | str, message: str
) -> None:
    path = BAD / name
    with pytest.raises(FormatError) as info:
        READERS[kind](path)
    text = str(info.value)
    assert name in text and message in text
    assert len(info.value.errors) == 1
    error = info.value.errors[0]
    assert error.path == str(path) and message in error.message
    if line == "any":
        assert error.line is not None and error.line > 1
        assert f"{name}:{error.line}: " in text
    elif line is None:
        assert error.line is None and text == f"{path}: {error.message}"
    else:
        assert error.line == line and f"{name}:{line}: " in text


def test_it_covers_every_bad_file_in_the_table_and_the_readme() -> None:
    files = {p.name for p in BAD.iterdir() if p.name != "README.md"}
    assert files == {case[0] for case in BAD_CASES} | set(IMPORTER_ONLY)
    assert len(files) >= 20
    readme = (BAD / "README.md").read_text()
    for name in files:
        assert f"`{name}`" in readme, name


def test_it_reads_a_run_with_an_unknown_topic_as_valid() -> None:
    assert [b.qid for b in read_all_runs(BAD / "run_unknown_topic.txt")] == ["301", "999"]


def test_it_yields_the_good_lines_before_a_truncated_gzip_error() -> None:
    entries, error = stream_run(BAD / "run_truncated.txt.gz")
    assert error is not None and "truncated gzip file" in str(error)
    assert len(entries) > 100
    assert error.errors[0].line is not None
    assert entries[-1].line == error.errors[0].line - 1
    assert entries[:2] == [RunEntry("300", "doc00000", 1000.0, 1), RunEntry("300", "doc00001", 999.0001, 2)]


# ------------------------------------------------------------------------------------ errors, API


def test_it_formats_line_errors_with_and_without_a_line() -> None:
    assert str(LineError("runs/a.txt", 7, "bad score")) == "runs/a.txt:7: bad score"
    assert str(LineError("runs/a.txt", None, "file is empty")) == "runs/a.txt: file is empty"


def test_it_shows_twenty_errors_then_counts_the_rest() -> None:
    error = FormatError([LineError("f", n, "bad") for n in range(1, 26)])
    lines = str(error).split("\n")
    assert lines[:2] == ["f:1: bad", "f:2: bad"]
    assert len(lines) == 21 and lines[-1] == "... and 5 more"
    assert isinstance(error, ValueError) and len(error.errors) == 25


def test_it_pickles_a_format_error_with_its_errors() -> None:
    error = FormatError([LineError("f", 3, "bad"), LineError("f", None, "worse")])
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 (our own bytes)
    assert copy.errors == error.errors and str(copy) == "f:3: bad\nf: worse"


def test_it_reports_a_missing_file_as_a_file_level_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    read: Callable[[Path], Iterable[Any]]
    for read in (read_run, read_qrels, read_topics, read_documents):
        errors = errors_of(cast(Callable[[], Any], lambda read=read: list(read(missing))))
        assert errors == [LineError(str(missing), None, "file not found")]


def test_it_raises_at_the_end_after_yielding_every_good_entry(tmp_path: Path) -> None:
    path = make_file(tmp_path, "1 0 a 1\n1 0 b x\n1 0 c 0\n2 0 d\n2 0 e 2\n")
    entries, error = stream_qrels(path)
    assert [e.docid for e in entries] == ["a", "c", "e"]
    assert error is not None and [e.line for e in error.errors] == [2, 4]


def test_it_stops_reading_after_max_errors(tmp_path: Path) -> None:
    path = make_file(tmp_path, "".join(f"q Q0 d{i} 1 bad t\n" for i in range(100)))
    errors = errors_of(lambda: list(read_run(path, max_errors=5)))
    assert [e.line for e in errors] == [1, 2, 3, 4, 5, 6]
    assert errors[-1].message == "stopped reading after 5 errors"
    assert len(errors_of(lambda: list(read_run(path)))) == 51


def test_it_rejects_an_unknown_format_or_kind() -> None:
    with pytest.raises(ValueError, match="unknown topics format"):
        list(read_topics(GOOD / "topics.tsv", format="csv"))
    with pytest.raises(ValueError, match="unknown documents format"):
        list(read_documents(GOOD / "docs.tsv", format="xml"))
    with pytest.raises(ValueError, match="unknown kind"):
        format_guess("x.txt", "judgements")


@pytest.mark.parametrize(
    ("path", "kind", "expected"),
    [
        ("docs.jsonl", "documents", "jsonl"),
        ("docs.json.gz", "documents", "jsonl"),
        ("docs.tsv", "documents", "tsv"),
        ("DOCS.TXT", "documents", "tsv"),
        ("docs.trec", "documents", "trec"),
        ("docs.sgml.gz", "documents", "trec"),
        ("docs.xml", "documents", "trec"),
        ("disk4/ft/FT911_1", "documents", "trec"),
        ("topics.jsonl", "topics", "jsonl"),
        ("topics.jsonl.gz", "topics", "jsonl"),
        ("topics.tsv", "topics", "tsv"),
        ("topics.301-350", "topics", "trec"),
        ("topics.txt", "topics", "trec"),
        ("run.txt.gz", "run", "trec"),
        ("qrels.txt", "qrels", "trec"),
    ],
)
def test_it_guesses_the_format_from_the_extension(path: str, kind: str, expected: str) -> None:
    assert format_guess(path, kind)[0] == expected


# --------------------------------------------------------------------------- open_lines, gzip, UTF-8


def test_it_reads_gzip_transparently_by_suffix_or_magic_bytes(tmp_path: Path) -> None:
    content = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"
    plain = list(read_run(make_file(tmp_path, content, name="run.txt")))
    assert plain == list(read_run(make_file(tmp_path, content, name="run.txt.gz", compress=True)))
    assert plain == list(read_run(make_file(tmp_path, content, name="run_no_suffix.txt", compress=True)))


def test_it_reads_an_open_binary_upload_using_its_name(tmp_path: Path) -> None:
    upload = io.BytesIO(b"q1 0 a 1\nq1 0 b oops\n")
    upload.name = "upload.qrels"
    entries, error = stream_qrels(upload)
    assert entries == [QrelEntry("q1", "a", 1, 1)]
    assert error is not None and str(error) == "upload.qrels:2: relevance 'oops' is not an integer"
    assert not upload.closed
    zipped = io.BytesIO(gzip.compress(b'{"docid": "x", "text": "y"}\n'))
    zipped.name = "docs.jsonl.gz"
    assert [d.docid for d in read_documents(zipped)] == ["x"]
    with (tmp_path / "t.tsv").open("wb") as handle:
        handle.write(b"1\tquery\n")
    with (tmp_path / "t.tsv").open("rb") as handle:
        assert [t.qid for t in read_topics(handle)] == ["1"]


def test_it_refuses_a_text_mode_file(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q Q0 d 1 1 t\n")
    with path.open() as handle, pytest.raises(TypeError, match="binary"):
        list(read_run(handle))


def test_it_names_the_line_of_invalid_utf8_and_reads_on(tmp_path: Path) -> None:
    path = make_file(tmp_path, b"q Q0 a 1 1 t\nq Q0 \xc3\x28 2 1 t\nq Q0 b 3 1 t\nq Q0 c 4 x t\n")
    entries, error = stream_run(path)
    assert [e.docid for e in entries] == ["a", "b"]
    assert error is not None
    assert [str(e) for e in error.errors] == [
        f"{path}:2: invalid UTF-8 (byte 0xc3 at byte column 6)",
        f"{path}:4: score 'x' is not a number",
    ]


def test_it_raises_from_open_lines_without_an_error_list(tmp_path: Path) -> None:
    path = make_file(tmp_path, b"ok\n\xff\n")
    with pytest.raises(FormatError, match=r":2: invalid UTF-8"):
        list(open_lines(path))


def test_it_strips_line_ends_and_a_byte_order_mark(tmp_path: Path) -> None:
    path = make_file(tmp_path, b"\xef\xbb\xbfone\r\ntwo\n\nthree")
    assert list(open_lines(path)) == [(1, "one"), (2, "two"), (3, ""), (4, "three")]


def test_it_reports_a_truncated_gzip_before_any_line_as_file_level(tmp_path: Path) -> None:
    path = make_file(tmp_path, gzip.compress(b"q Q0 a 1 1 t\n" * 10)[:12], name="run.txt.gz")
    errors = errors_of(lambda: list(read_run(path)))
    assert errors == [LineError(str(path), None, "truncated gzip file (the compressed data ends early)")]


def test_it_reports_a_gz_name_on_data_that_is_not_gzip(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q Q0 a 1 1 t\n", name="run.txt.gz")
    [error] = errors_of(lambda: list(read_run(path)))
    assert error.line is None and error.message.startswith("corrupt gzip file")


# ------------------------------------------------------------------------------------------- runs


def test_it_splits_run_lines_like_trec_eval(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "# comment\n\n  q1 \t Q0\ta  1 1.5 tag extra fields\r\n   \nq1 Q0 b notarank .5e1 t\nq1 x c 3 -0 t\n"
        "   # indented comment\nq1 Q0 d 4 +1E-2 t\n",
    )
    assert list(read_run(path)) == [
        RunEntry("q1", "a", 1.5, 3),
        RunEntry("q1", "b", 5.0, 5),
        RunEntry("q1", "c", 0.0, 6),
        RunEntry("q1", "d", 0.01, 8),
    ]


@pytest.mark.parametrize(
    ("score", "message"),
    [
        ("nan", "is not a finite number"),
        ("NaN", "is not a finite number"),
        ("inf", "is not a finite number"),
        ("+Infinity", "is not a finite number"),
        ("1e999", "is not a finite number"),
        ("high", "is not a number"),
        ("1_000", "is not a number"),
        ("0x10", "is not a number"),
        ("1.2.3", "is not a number"),
        ("١٢", "is not a number"),
        ("1,5", "is not a number"),
    ],
)
def test_it_rejects_a_score_that_is_not_a_finite_number(tmp_path: Path, score: str, message: str) -> None:
    path = make_file(tmp_path, f"q Q0 a 1 1 t\nq Q0 b 2 {score} t\n")
    [error] = errors_of(lambda: list(read_run(path)))
    assert error.line == 2 and error.message == f"score {score!r} {message}"


def test_it_rejects_a_run_line_with_fewer_than_six_fields(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q Q0 a 1 1\n")
    [error] = errors_of(lambda: list(read_run(path)))
    assert str(error) == f"{path}:1: expected 6 fields 'qid Q0 docid rank score tag', found 5"


def test_it_orders_ties_by_docid_descending_in_byte_order() -> None:
    rows = [("b", 1.0), ("a", 2.0), ("B", 1.0), ("é", 1.0), ("c", 1.0), ("ab", 1.0), ("z", 0.5), ("x", -3.0)]
    entries = [RunEntry("q", docid, score, n) for n, (docid, score) in enumerate(rows, start=1)]
    [block] = read_all_runs(run_file(entries))
    assert block.docids == ["a", "é", "c", "b", "ab", "B", "z", "x"]
    assert block.scores == [2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, -3.0]
    # Python str order is UTF-8 byte order (what trec_eval's strcmp compares).
    assert sorted(block.docids[1:6], key=lambda d: d.encode(), reverse=True) == block.docids[1:6]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "B", "aa", "a1", "é", "z", "Z", "日", "0", "10", "9"]),
            st.sampled_from([0.0, 1.0, 1.5, -2.0, 1e-9]),
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda row: row[0],
    )
)
def test_it_ranks_exactly_as_trec_eval_does(rows: list[tuple[str, float]]) -> None:
    entries = [RunEntry("q", docid, score, n) for n, (docid, score) in enumerate(rows, start=1)]
    [block] = read_all_runs(run_file(entries))
    # One topic per document, with only that document relevant: trec_eval's recip_rank is 1/its rank.
    run = {f"q{docid}": dict(rows) for docid, _ in rows}
    qrels = {f"q{docid}": {docid: 1} for docid, _ in rows}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    trec_eval_ranks = {docid: round(1 / result[f"q{docid}"]["recip_rank"]) for docid, _ in rows}
    assert {docid: rank for rank, docid in enumerate(block.docids, start=1)} == trec_eval_ranks


def test_it_ranks_a_topic_that_comes_back_with_its_earlier_rows() -> None:
    # formats' ranked_lists gave each contiguous block apart ("continued"); the one reader ranks whole
    # topics, as trec_eval does.
    entries = [
        RunEntry(q, d, 1.0, n)
        for n, (q, d) in enumerate(
            [("1", "a"), ("1", "b"), ("2", "a"), ("1", "c"), ("3", "a"), ("2", "b"), ("2", "c")], start=1
        )
    ]
    blocks = read_all_runs(run_file(entries))
    assert [(b.qid, b.docids, b.first_line) for b in blocks] == [
        ("1", ["c", "b", "a"], 1),
        ("2", ["c", "b", "a"], 3),
        ("3", ["a"], 5),
    ]


def test_it_reports_a_duplicate_on_the_second_line() -> None:
    entries = [RunEntry("q", "a", 3.0, 1), RunEntry("q", "b", 2.0, 2), RunEntry("q", "a", 9.0, 3)]
    with pytest.raises(FormatError) as info:
        read_all_runs(run_file(entries, "run.txt"))
    assert str(info.value) == "run.txt:3: duplicate docid 'a' for qid 'q' (first at line 1)"


def test_it_merges_reader_errors_and_duplicates_in_line_order(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q Q0 a 1 1 t\nq Q0 a 2 1 t\nq Q0 b 3 x t\nq Q0 b 4 1 t\nq Q0 b 5 2 t\n")
    errors = errors_of(lambda: read_all_runs(path))
    assert [(e.line, e.message.split(" ")[0]) for e in errors] == [
        (2, "duplicate"),
        (3, "score"),
        (5, "duplicate"),
    ]


@pytest.mark.parametrize("interleaved", [False, True])
def test_it_finds_a_duplicate_among_many_rows(tmp_path: Path, interleaved: bool) -> None:
    # Over 4,096 rows a topic, so the linear-time check (hash rounds) decides, not the sort of the few.
    qids = ["t2", "t1", "t3"]
    rows = [(q, f"d{i}", 100000.0 - i) for q in qids for i in range(30000)]
    if interleaved:
        rows = [rows[j * 30000 + i] for i in range(30000) for j in range(3)]
    position = rows.index(("t1", "d29990", 100000.0 - 29990))
    rows.insert(position + 1, ("t1", "d7", 0.5))  # d7 of t1 again, far from the first
    text = "".join(f"{q} Q0 {d} 1 {s} r\n" for q, d, s in rows)
    first = rows.index(("t1", "d7", 100000.0 - 7)) + 1
    path = make_file(tmp_path, text)
    errors = errors_of(lambda: trec_io.read_run(path))
    assert [(e.line, e.message) for e in errors] == [
        (position + 2, f"duplicate docid 'd7' for qid 't1' (first at line {first})")
    ]
    clean = make_file(tmp_path, "".join(line for line in text.splitlines(True) if " 0.5 " not in line))
    assert len(trec_io.read_run(clean)) == 90000


def test_it_tells_equal_keys_apart_from_colliding_slots() -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**63, 200_000, dtype=np.int64).view(np.uint64)
    assert not trec_io.keys._equal_keys_among(keys)
    assert not trec_io.keys._equal_keys_among(keys & np.uint64(0xFFFFFFFF00000000 | 0xFFFFF))  # slots crowd
    for i, j in [(0, 199_999), (5, 6), (123_456, 17)]:
        twice = keys.copy()
        twice[i] = twice[j]
        assert trec_io.keys._equal_keys_among(twice)
    many = np.repeat(keys[:1000], 300)  # every key 300 times: always found
    assert trec_io.keys._equal_keys_among(many)


def test_it_lists_a_bounded_number_of_duplicates() -> None:
    entries = [RunEntry("q", "a", 1.0, n) for n in range(1, 11)]
    errors = errors_of(lambda: read_all_runs(run_file(entries, "r"), max_errors=3))
    assert [e.line for e in errors] == [2, 3, 4, None]
    assert errors[-1].message == "... and 6 more"


def test_it_reports_an_empty_run(tmp_path: Path) -> None:
    path = make_file(tmp_path, "")
    assert errors_of(lambda: read_all_runs(path)) == [LineError(str(path), None, "file is empty")]


def test_it_streams_a_large_run_in_flat_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trec_io.blocks, "_BLOCK_BYTES", 1 << 20)  # blocks smaller than the file: it streams
    monkeypatch.setattr(trec_io.blocks, "_CHUNK_BYTES", 1 << 18)
    topics, depth = 200, 1000  # 200,000 lines, ~7 MB
    path = tmp_path / "big.run"
    with path.open("w") as handle:
        for t in range(topics):
            handle.write("".join(f"{t} Q0 doc{t}-{r} {r} {depth - r}.5 big\n" for r in range(depth)))
    tracemalloc.start()
    try:
        blocks = 0
        rows = 0
        log = trec_io.ErrorLog(str(path))
        qids: set[str] = set()
        for chunk in trec_io.iter_run(path, log):
            blocks += 1
            qids.update(chunk.qids)
            rows += len(chunk.docid)
        log.raise_if_any()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (len(qids), rows) == (topics, topics * depth) and blocks > 1
    assert peak < 5 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"


# ------------------------------------------------------------------------------------------ qrels


def test_it_reads_qrels_with_negative_grades(tmp_path: Path) -> None:
    path = make_file(tmp_path, "# header\n301\t0\td1\t2\n301 0 d2 -1 \n\n302 ignored d1 +0\n")
    assert list(read_qrels(path)) == [
        QrelEntry("301", "d1", 2, 2),
        QrelEntry("301", "d2", -1, 3),
        QrelEntry("302", "d1", 0, 5),
    ]


def test_it_refuses_a_qrels_line_with_a_field_after_the_relevance_as_trec_eval_does(tmp_path: Path) -> None:
    # trec_eval's get_qrels.c: anything but white space after the relevance makes the line malformed (where
    # get_top.c ignores what follows a run line's tag: a run line may have more fields).
    path = make_file(tmp_path, "301 0 d1 2\n301 0 d2 -1 extra\n302 0 d1 0\n")
    [error] = errors_of(lambda: list(read_qrels(path)))
    assert (error.line, error.message) == (2, "expected 4 fields 'qid iter docid rel', found 5")
    run = make_file(tmp_path, "301 Q0 d1 1 2.5 tag more fields\n", name="run.txt")
    assert read_run(run) == [RunEntry("301", "d1", 2.5, 1)]


def test_it_splits_fields_on_whitespace_as_c_isspace_does_like_trec_eval(tmp_path: Path) -> None:
    # trec_eval's get_qrels.c and get_top.c split with isspace(): space, \t, \v, \f, \r. pooling.formats once
    # refused a form feed that trec_io accepted; the one reader follows trec_eval.
    path = make_file(tmp_path, b"301\f0\fd1\f2\n301\v0\vd2\t1\r\n302 0 d\x01x 0\n")
    assert read_qrels(path) == [
        QrelEntry("301", "d1", 2, 1),
        QrelEntry("301", "d2", 1, 2),
        QrelEntry("302", "d\x01x", 0, 3),  # other control bytes are part of the field, as in C
    ]
    run = make_file(tmp_path, b"q\fQ0\fa\f1\f2.5\ft\n", name="run.txt")
    assert read_run(run) == [RunEntry("q", "a", 2.5, 1)]


@pytest.mark.parametrize("rel", ["1.0", "one", "1e0", "", "١"])
def test_it_rejects_a_non_integer_grade(tmp_path: Path, rel: str) -> None:
    path = make_file(tmp_path, f"301 0 d1 {rel}\n")
    [error] = errors_of(lambda: list(read_qrels(path)))
    assert error.line == 1
    assert error.message in (
        f"relevance {rel!r} is not an integer",
        "expected 4 fields 'qid iter docid rel', found 3",
    )


# ----------------------------------------------------------------------------------------- topics


def test_it_parses_trec_topics_with_unclosed_and_closed_tags(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "<TOP>\n<NUM> Number: 051\n<TITLE> Topic:  Airbus   Subsidies\n"
        "<dom> Domain: International Economics\n"
        "<desc> Description:\nDocument will discuss\n  government assistance.\n<smry> Summary: ignored\n"
        "<narr> Narrative:\nTo be relevant, a document must\ncite assistance.\n</TOP>\n"
        "<top><num>Number: 0</num><title>zero</title></top>   <top> <num> MB-7 <title> micro blog </top>\n",
        name="topics.51-52",
    )
    assert list(read_topics(path)) == [
        TopicEntry(
            "51",
            "Airbus Subsidies",
            "Document will discuss government assistance.",
            "To be relevant, a document must cite assistance.",
            (),
            1,
        ),
        TopicEntry("0", "zero", "", "", (), 13),
        TopicEntry("MB-7", "micro blog", "", "", (), 13),
    ]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (
            "<top>\n<num> 1\n<title> a\n<top>\n<num> 2\n<title> b\n</top>\n",
            1,
            "<top> opened here is not closed before the <top> on line 4",
        ),
        ("<top>\n<num> 1\n<title> a\n</top>\nstray\n", 5, "text outside <top> … </top>"),
        ("</top>\n<top><num> 1 <title> a</top>\n", 1, "</top> without a matching <top>"),
        ("<top>\n<num> Number:\n<title> a\n</top>\n", 1, "qid is empty"),
        ("<top>\n<num> Number: 1 2\n<title> a\n</top>\n", 1, "qid '1 2' contains whitespace"),
        (
            "<top>\n<num> Number: 7\n<title>\n<desc> only a description\n</top>\n",
            1,
            "topic '7' has no <title> (empty query)",
        ),
        (
            "<top><num>1<title>a</top>\n\n<top><num>01<title>b</top>\n",
            3,
            "duplicate qid '1' (first at line 1)",
        ),
    ],
)
def test_it_rejects_malformed_trec_topics(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = make_file(tmp_path, content, name="topics.trec")
    errors = errors_of(lambda: list(read_topics(path)))
    assert (errors[0].line, errors[0].message) == (line, message)


def test_it_parses_tsv_topics_with_optional_segments(tmp_path: Path) -> None:
    path = make_file(tmp_path, "1\tfirst query\n\n 2 \t second \t head, ,tail \n3\tthird\t\n")
    assert [(t.qid, t.query, t.segments, t.line) for t in read_topics(path, format="tsv")] == [
        ("1", "first query", (), 1),
        ("2", "second", ("head", "tail"), 3),
        ("3", "third", (), 4),
    ]


def test_it_parses_jsonl_topics_with_optional_fields(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        '{"qid": 7, "query": " seven ", "description": null, "segments": null, "other": 1}\n'
        '{"qid": "8", "query": "eight", "narrative": "n", "segments": ["tail"]}\n',
        name="topics.jsonl",
    )
    assert list(read_topics(path)) == [
        TopicEntry("7", "seven", "", "", (), 1),
        TopicEntry("8", "eight", "", "n", ("tail",), 2),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"qid": true, "query": "q"}', "field 'qid' must be a string, found a boolean"),
        ('{"qid": "", "query": "q"}', "qid is empty"),
        ('{"query": "q"}', "missing required field 'qid'"),
        ('{"qid": "1", "query": ""}', "topic '1' has an empty query"),
        ('{"qid": "1", "query": 5}', "field 'query' must be a string, found a number"),
        (
            '{"qid": "1", "query": "q", "segments": "head"}',
            "field 'segments' must be an array of non-empty strings",
        ),
        (
            '{"qid": "1", "query": "q", "segments": [""]}',
            "field 'segments' must be an array of non-empty strings",
        ),
        (
            '{"qid": "1", "query": "q", "description": ["x"]}',
            "field 'description' must be a string, found an array",
        ),
        ("null", "expected a JSON object, found null"),
    ],
)
def test_it_rejects_malformed_jsonl_topics(tmp_path: Path, line: str, message: str) -> None:
    path = make_file(tmp_path, '{"qid": "0", "query": "ok"}\n' + line + "\n", name="topics.jsonl")
    [error] = errors_of(lambda: list(read_topics(path)))
    assert (error.line, error.message) == (2, message)


# -------------------------------------------------------------------------------------- documents


def test_it_parses_classic_trec_sgml_documents(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "<DOC>\n<DOCNO> FT911-1 </DOCNO>\n<PROFILE>_AN-BEOA7AAIFT</PROFILE>\n<HEADLINE>\nFT  14 MAY 91 / "
        "<B>Bold</B> &amp; new\n</HEADLINE>\n<TEXT>\nFirst   section\nwraps.\n</TEXT>\n<!-- PJG comment -->\n"
        "<TEXT><P>Second</P> &lt;section&gt;</TEXT>\n</DOC>\n"
        "<doc><docno>LA010189-0001</docno><head>one</head><HEAD>two</HEAD><text></text><text>x</text></doc>\n"
        "<DOC>\n<DOCNO>GX000-00</DOCNO>\n<DOCHDR>\nhttp://x/ HTTP/1.1 200\n</DOCHDR>\n"
        "<URL> http://x/ </URL>\n"
        "<TITLE>Page</TITLE>\n<html><body><p>Hello <i>web</i></p></body></html>\n</DOC>\n",
        name="collection.sgml",
    )
    assert list(read_documents(path)) == [
        DocumentEntry(
            "FT911-1", "FT 14 MAY 91 / Bold & new", "First section wraps.\n\nSecond <section>", "", {}, 1
        ),
        DocumentEntry("LA010189-0001", "one two", "x", "", {}, 14),
        DocumentEntry("GX000-00", "Page", "Hello web", "http://x/", {}, 15),
    ]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("<DOC>\n<DOCNO>a</DOCNO><DOCNO>b</DOCNO>\n</DOC>\n", 1, "document has 2 <DOCNO> elements"),
        ("<DOC>\n<DOCNO> </DOCNO>\n</DOC>\n", 1, "docid is empty"),
        (
            "<DOC><DOCNO>a</DOCNO></DOC>\n<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n",
            2,
            "duplicate docid 'a' (first at line 1)",
        ),
        ("</DOC>\n", 1, "</DOC> without a matching <DOC>"),
    ],
)
def test_it_rejects_malformed_trec_documents(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = make_file(tmp_path, content, name="docs.trec")
    [error] = errors_of(lambda: list(read_documents(path)))
    assert (error.line, error.message) == (line, message)


def test_it_parses_jsonl_documents_with_int_ids_aliases_and_extra_keys(tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        '{"docid": 42, "title": null, "text": "t", "metadata": {"a": 1}, "lang": "en", "a": 2}\n'
        '{"id": "p1", "contents": "pyserini style"}\n'
        '{"doc_id": "i1", "body": "ir_datasets style", "url": "http://u"}\n',
        name="docs.jsonl",
    )
    assert list(read_documents(path)) == [
        DocumentEntry("42", "", "t", "", {"a": 1, "lang": "en"}, 1),
        DocumentEntry("p1", "", "pyserini style", "", {}, 2),
        DocumentEntry("i1", "", "ir_datasets style", "http://u", {}, 3),
    ]


def test_it_reads_json_numbers_and_strings_as_the_json_module_does(tmp_path: Path) -> None:
    # the JSONL readers parse with orjson where it agrees with the json module, which reads the rest
    path = make_file(
        tmp_path,
        '{"docid": 123456789012345678901, "metadata": {"big": -98765432109876543210, "n": 3, '
        '"x": 0.1, "inf": 1e400, "nan": NaN, "s": "\\ud83d\\ude00"}}\n'
        '{"docid": "d2", "metadata": {"u64": 18446744073709551615}}\n',
        name="docs.jsonl",
    )
    first, second = read_documents(path)
    assert first.docid == "123456789012345678901"
    meta = first.metadata
    assert meta["big"] == -98765432109876543210 and isinstance(meta["big"], int)
    assert (meta["n"], meta["x"], meta["inf"], meta["s"]) == (3, 0.1, float("inf"), "\U0001f600")
    assert meta["nan"] != meta["nan"]
    assert second.metadata == {"u64": 18446744073709551615}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"docid": 1.5}', "field 'docid' must be a string, found a number"),
        ('{"docid": null}', "missing required field 'docid'"),
        ('{"docid": "x", "title": 3}', "field 'title' must be a string, found a number"),
        ('{"docid": "x", "url": {}}', "field 'url' must be a string, found an object"),
        ("[1, 2]", "expected a JSON object, found an array"),
        ("{'docid': 'x'}", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
    ],
)
def test_it_rejects_malformed_jsonl_documents(tmp_path: Path, line: str, message: str) -> None:
    path = make_file(tmp_path, line + "\n", name="docs.jsonl")
    [error] = errors_of(lambda: list(read_documents(path)))
    assert (error.line, error.message) == (1, message)


def test_it_parses_tsv_documents_with_empty_text_and_rejects_extra_fields(tmp_path: Path) -> None:
    path = make_file(tmp_path, "a\tTitle\t\nb\t\tbody only\nc\tx\ty\tz\n", name="docs.tsv")
    entries, error = consume(read_documents(path))
    assert [(d.docid, d.title, d.text) for d in entries] == [("a", "Title", ""), ("b", "", "body only")]
    assert error is not None and str(error) == (
        f"{path}:3: expected 3 tab-separated fields 'docid<TAB>title<TAB>text', found 4"
    )


def test_it_reads_documents_gzipped_in_every_format(tmp_path: Path) -> None:
    for name in ("docs.tsv", "docs.trec", "docs.jsonl"):
        zipped = make_file(tmp_path, (GOOD / name).read_bytes(), name=name + ".gz", compress=True)
        assert list(read_documents(zipped)) == list(read_documents(GOOD / name))


# ------------------------------------------------------------------------- block-wise line reading


def reference_lines(data: bytes, name: str) -> tuple[list[tuple[int, str]], list[LineError]]:
    """What open_lines must produce, computed the obvious (whole-file) way."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    raws = data.split(b"\n")
    if raws[-1] == b"":
        raws.pop()
    lines: list[tuple[int, str]] = []
    errors: list[LineError] = []
    for number, raw in enumerate(raws, start=1):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        try:
            lines.append((number, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            message = f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at byte column {exc.start + 1})"
            errors.append(LineError(name, number, message))
    return lines, errors


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from(
            [b"a", b"bc", b" ", b"\n", b"\r\n", b"\r", b"\xff", "é".encode(), b"\xc3", b"\xef\xbb\xbf"]
        ),
        max_size=60,
    ),
    block_size=st.integers(min_value=1, max_value=9),
    compress=st.booleans(),
)
def test_it_splits_lines_across_block_boundaries_like_a_whole_file_read(
    pieces: list[bytes], block_size: int, compress: bool
) -> None:
    data = b"".join(pieces)
    upload = io.BytesIO(gzip.compress(data) if compress else data)
    upload.name = "f.gz" if compress else "f"
    errors: list[LineError] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(formats.opening, "_BLOCK_SIZE", block_size)
        lines = list(open_lines(upload, errors=errors))
    assert (lines, errors) == reference_lines(data, upload.name)


def test_it_numbers_lines_correctly_deep_into_a_large_file(tmp_path: Path) -> None:
    rows = [f"q{i // 100} Q0 d{i} 1 {i}.0 t" for i in range(50_000)]
    rows[30_000] = "q300 Q0 d\udcff 1 1 t"  # becomes an invalid UTF-8 byte below
    rows[40_000] = "q400 Q0 d40000 1 many t"
    rows[45_000] = "q450 Q0 d45000 1 1 t " + "x" * 300_000  # a line longer than several blocks
    data = "\r\n".join(rows).encode("utf-8", "surrogateescape")  # CRLF, no final line end
    path = make_file(tmp_path, data, name="big.txt.gz", compress=True)
    entries, error = stream_run(path)
    assert error is not None
    assert [(e.line, e.message.split(" (")[0]) for e in error.errors] == [
        (30_001, "invalid UTF-8"),
        (40_001, "score 'many' is not a number"),
    ]
    assert len(entries) == 49_998
    assert entries[-1] == RunEntry("q499", "d49999", 49999.0, 50_000)
    # (a docid that long is refused: see test_it_refuses_a_field_longer_than_the_limit)
    assert entries[45_000 - 2].docid == "d45000" and entries[45_000 - 2].line == 45_001


def test_it_refuses_a_field_longer_than_the_limit(tmp_path: Path) -> None:
    path = make_file(tmp_path, "q Q0 a 1 1 t\nq Q0 " + "x" * 2000 + " 2 1 t\nq Q0 c 3 1 t\n")
    entries, error = stream_run(path)
    assert [e.docid for e in entries] == ["a", "c"]
    assert error is not None and [str(e) for e in error.errors] == [
        f"{path}:2: docid longer than 1,024 bytes"
    ]


def test_it_stops_after_max_errors_of_invalid_utf8(tmp_path: Path) -> None:
    path = make_file(tmp_path, b"caf\xe9 Q0 d 1 1 t\n" * 1000)
    errors = errors_of(lambda: list(read_run(path, max_errors=3)))
    assert [e.line for e in errors] == [1, 2, 3, 4]
    assert errors[-1].message == "stopped reading after 3 errors"


def test_it_does_not_call_a_document_unclosed_when_the_gzip_stream_broke(tmp_path: Path) -> None:
    docs = "".join(
        f"<DOC>\n<DOCNO>d{i}</DOCNO>\n<TEXT>\nbody {i} {i * 7919}\n</TEXT>\n</DOC>\n" for i in range(3000)
    )
    path = make_file(tmp_path, gzip.compress(docs.encode())[:5000], name="docs.trec.gz")
    entries, error = consume(read_documents(path))
    assert entries and entries[0].docid == "d0"
    assert error is not None and [e.message for e in error.errors] == [
        "truncated gzip file (the compressed data ends early)"
    ]

"""Malformed files and parameters on every import, fuzzed: a clear error and nothing changed, never an
unexpected exception (a 500), on every path a user can take.

Three layers, each with fixed seeds (the file runs in CI on every commit, in well under a minute):

- the pure readers (documents, topics, runs, qrels, crowd labels, impressions, counts, UBI), fed valid
  samples mutated by hypothesis (derandomized): each either raises its `FormatError` or yields entries the
  database can store (the storage contract: identifiers within their columns, text PostgreSQL can hold,
  metadata jsonb can hold but for NaN and Infinity, which the documents import refuses, loggers within
  their column);
- the import services, fed a table of malformed files (and seeded random mutations of good ones): each
  raises `Refused` naming the file (and the line), and no row of any table, no archive file, changes;
- the entry points: the commands (a CommandError naming file and line), the API (a 400 naming the field,
  nothing stored, no upload kept), an upload left to its job (the job fails listing the errors, never an
  "internal error") and the manager's upload pages (the form lists the errors).

The cases first found here, each fixed where its rule lives: an identifier or url longer than its column, an
unpaired surrogate escape in a JSON string, a NaN or Infinity in documents' metadata, JSON nested deeper
than the json module can write back, a crowd field over the csv module's limit, a crowd file of a header
alone, a logger name longer than its column, more team names or loggers than the archive can code, and a
run named '.' or '..'.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from judgements import crowd_import, membership
from judgements.imports import import_judgements
from judgements.models import Judgement, JudgementRevision
from online import logformats
from online.clicklogs import MAX_LOGGERS, import_click_log
from online.logformats import read_counts, read_impressions
from online.models import ClickCount, ClickLog, QueryMapping
from online.ubi import read_ubi
from pooling import formats, imports, trec_io
from pooling.errors import ImportFailed, PoolError, Refused
from pooling.formats.jsonl import MAX_JSON_DEPTH
from pooling.formats.reader import MAX_ID_LENGTH
from pooling.models import Collection, Document, Job, Pool, PoolItem, Run, RunRow, Topic
from tests.conftest import client_for
from tests.factories import make_collection, make_pool

pytestmark = pytest.mark.usefixtures("fast_passwords")

# ------------------------------------------------------------------------------------------- samples

DOCS = {
    "jsonl": b'{"docid": "d1", "title": "T", "text": "x", "url": "http://e/1", "metadata": {"k": [1, 2.5]}}\n'
    b'{"doc_id": 2, "contents": "y", "lang": "en"}\n',
    "tsv": b"d1\tT\tx\nd2\tU\ty\n",
    "trec": b"<DOC>\n<DOCNO> d1 </DOCNO>\n<TITLE>T</TITLE><URL>http://e/1</URL>\n<TEXT>x &amp; y</TEXT>\n"
    b"</DOC>\n<DOC><DOCNO>d2</DOCNO><TEXT>y</TEXT></DOC>\n",
}
TOPICS = {
    "jsonl": b'{"qid": "q1", "query": "a b", "segments": ["head"]}\n{"qid": 2, "query": "c"}\n',
    "tsv": b"q1\ta b\thead,tail\nq2\tc\n",
    "trec": b"<top>\n<num> Number: 301\n<title> a b\n<desc> Description:\nd\n<narr> Narrative:\nn\n</top>\n",
}
RUN = b"q1 Q0 d001 1 2.5 r\nq1 Q0 d002 2 1.5 r\nq2 Q0 d010 1 3 r\n"
QRELS = b"q1 0 d001 2\nq1 0 d002 0\nq2 0 d010 1\n"
CROWD = b"worker,qid,docid,label,seconds\nw1,q1,d001,2,3.5\nw1,q1,d002,0,4\n"
IMPRESSIONS = (
    b'{"session": "s1", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1], "dwell": [3.5], '
    b'"teams": ["A", "B"], "ranker": "bm25"}\n'
    b'{"query": "Text", "docids": ["d003"], "clicks": []}\n'
)
COUNTS = b"q1 d001 1 10 2\nq1 d002 2 10 1 bm25\n"
UBI_QUERIES = (
    b'{"query_id": "u1", "user_query": "a", "query_attributes": {"qid": "q1", "ranker": "r"}, '
    b'"query_response_hit_ids": ["d001", "d002"]}\n'
)
UBI_EVENTS = (
    b'{"event_id": "e1", "query_id": "u1", "action_name": "click", "event_attributes": '
    b'{"object": {"object_id": "d001"}, "position": {"ordinal": 1}}}\n'
)

#: Bytes a mutation inserts or puts in place of a field: what the readers must refuse, or take.
TOKENS = [
    b"\x00", b"\xef\xbb\xbf", b"\r\n", b"\r", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\t", b" ", b"\n", b"\n\n",
    b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1", b"-inf", b"nan", b"99999999999999999999999", b"1_0",
    b'"\\ud800"', b'"\\udc00x"', b'"\\u0000"', b"[" * 600, b"[" * 1100, b"{", b"}", b"[]", b"null", b"true",
    b'"', b",", b":", b"x" * 300, b"9" * 150, b"<DOC>", b"</DOC>", b"<DOCNO>", b"<top>", b"</top>", b"<num>",
    b"#", b"\\", b"<URL>" + b"u" * 2100 + b"</URL>", b'"ranker": "' + b"r" * 250 + b'", ', b"y" * 5000,
]  # fmt: skip
#: A line limit the fuzz can pass cheaply (the last token is longer): the same check as 1 MiB.
LINE_BYTES = 4096

MUTATION = st.lists(
    st.tuples(
        st.sampled_from(["insert", "replace", "truncate", "delete", "duplicate_line", "gzip"]),
        st.floats(min_value=0, max_value=1),
        st.integers(min_value=0, max_value=len(TOKENS) - 1),
    ),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, steps: Iterable[tuple[str, float, int]]) -> bytes:
    """`data` changed by each step, at the place its fraction names."""
    for op, where, token_index in steps:
        at = int(where * len(data))
        token = TOKENS[token_index]
        if op == "insert":
            data = data[:at] + token + data[at:]
        elif op == "replace":  # the field (up to the next separator) at `at` becomes the token
            end = at
            while end < len(data) and data[end : end + 1] not in b' \t\n,":':
                end += 1
            data = data[:at] + token + data[end:]
        elif op == "truncate":
            data = data[:at]
        elif op == "delete":
            data = data[:at] + data[at + 1 + token_index % 7 :]
        elif op == "duplicate_line":
            lines = data.split(b"\n")
            pick = int(where * (len(lines) - 1)) if lines else 0
            data = b"\n".join(lines[: pick + 1] + lines[pick:])
        elif op == "gzip":  # compressed, then maybe cut or damaged
            packed = gzip.compress(data)
            cut = max(10, int(len(packed) * (0.5 + where / 2)))
            data = packed[:cut] if token_index % 3 == 0 else packed
            if token_index % 3 == 1 and len(data) > 20:
                data = data[:-6] + bytes([data[-6] ^ 0xFF]) + data[-5:]
    return data


class Named(io.BytesIO):
    """An in-memory binary file with a name (the readers name their errors by it)."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def storable_text(*values: Any, allow_nan: bool = False) -> None:
    """What PostgreSQL text and jsonb can hold: UTF-8 without NUL; finite numbers (`allow_nan`: numbers
    the import itself refuses), not too deep."""
    for value in values:
        text = json.dumps(value, allow_nan=allow_nan, ensure_ascii=False)
        text.encode("utf-8")  # a lone surrogate cannot be
        assert "\x00" not in text and "\\u0000" not in text


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def check_document(entry: formats.DocumentEntry) -> None:
    assert 0 < len(entry.docid) <= Document._meta.get_field("docid").max_length  # type: ignore[operator]  # a CharField's max_length is set
    assert len(entry.url) <= Document._meta.get_field("url").max_length  # type: ignore[operator]  # a CharField's max_length is set
    # NaN and Infinity in metadata are read (as the json module reads them) and refused by the import
    storable_text(entry.docid, entry.title, entry.text, entry.url, entry.metadata, allow_nan=True)
    assert depth(entry.metadata) <= MAX_JSON_DEPTH


def check_topic(entry: formats.TopicEntry) -> None:
    assert 0 < len(entry.qid) <= Topic._meta.get_field("qid").max_length  # type: ignore[operator]  # a CharField's max_length is set
    storable_text(entry.qid, entry.query, entry.description, entry.narrative, list(entry.segments))


def check_page(page: logformats.Page) -> None:
    assert len(page.logger) <= ClickCount._meta.get_field("logger").max_length  # type: ignore[operator]  # a CharField's max_length is set
    storable_text(page.query, page.session, page.user, page.logger, page.shown, page.teams)


def check_count(row: logformats.CountRow) -> None:
    assert len(row.logger) <= ClickCount._meta.get_field("logger").max_length  # type: ignore[operator]  # a CharField's max_length is set
    storable_text(row.qid, row.docid, row.logger)


def read_all(read: Callable[[], Iterable[Any]], check: Callable[[Any], None]) -> None:
    """Read a file whole: the reader's FormatError is a refusal; anything else must not happen."""
    with formats.limits(line_bytes=LINE_BYTES):
        try:
            entries = list(read())
        except formats.FormatError as exc:
            assert exc.errors and all(isinstance(error, formats.LineError) for error in exc.errors)
            return
    for entry in entries:
        check(entry)


FUZZ = hypothesis_settings(
    max_examples=60,
    derandomize=True,  # fixed seeds: the same cases on every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ------------------------------------------------------------------------------- the pure readers


def test_the_readers_and_the_columns_agree_on_the_limits() -> None:
    assert {
        "qid": Topic._meta.get_field("qid").max_length,
        "docid": Document._meta.get_field("docid").max_length,
    } == MAX_ID_LENGTH
    assert Document._meta.get_field("url").max_length == formats.documents.MAX_URL_LENGTH
    assert ClickCount._meta.get_field("logger").max_length == logformats.MAX_LOGGER_LENGTH


@pytest.mark.parametrize("fmt", sorted(DOCS))
@FUZZ
@given(steps=MUTATION)
def test_fuzzed_documents_are_refused_or_storable(fmt: str, steps: list[tuple[str, float, int]]) -> None:
    data = mutate(DOCS[fmt], steps)
    read_all(lambda: formats.read_documents(Named(data, f"docs.{fmt}"), format=fmt), check_document)


@pytest.mark.parametrize("fmt", sorted(TOPICS))
@FUZZ
@given(steps=MUTATION)
def test_fuzzed_topics_are_refused_or_storable(fmt: str, steps: list[tuple[str, float, int]]) -> None:
    data = mutate(TOPICS[fmt], steps)
    read_all(lambda: formats.read_topics(Named(data, f"topics.{fmt}"), format=fmt), check_topic)


@FUZZ
@given(steps=MUTATION)
def test_fuzzed_runs_and_qrels_are_refused_or_read(steps: list[tuple[str, float, int]]) -> None:
    run, qrels = mutate(RUN, steps), mutate(QRELS, steps)
    read_all(lambda: [trec_io.read_run(Named(run, "run.txt"))], lambda table: None)
    read_all(lambda: [trec_io.read_qrels(Named(qrels, "qrels.txt"))], lambda table: None)


@FUZZ
@given(steps=MUTATION)
def test_fuzzed_click_logs_are_refused_or_storable(steps: list[tuple[str, float, int]]) -> None:
    read_all(lambda: read_impressions(Named(mutate(IMPRESSIONS, steps), "log.jsonl")), check_page)
    read_all(lambda: read_counts(Named(mutate(COUNTS, steps), "counts.txt")), check_count)
    queries, events = mutate(UBI_QUERIES, steps), mutate(UBI_EVENTS, steps)
    read_all(lambda: read_ubi(Named(queries, "q.jsonl"), Named(UBI_EVENTS, "e.jsonl")), check_page)
    read_all(lambda: read_ubi(Named(UBI_QUERIES, "q.jsonl"), Named(events, "e.jsonl")), check_page)


@FUZZ
@given(steps=MUTATION)
def test_fuzzed_crowd_files_are_refused_or_read(steps: list[tuple[str, float, int]]) -> None:
    data = mutate(CROWD, steps)
    errors: list[str] = []
    with formats.limits(line_bytes=LINE_BYTES):
        try:
            rows = crowd_import._read_rows(Named(data, "crowd.csv"), "crowd.csv", errors)
        except ImportFailed as exc:
            assert exc.errors[0].startswith("crowd.csv:")
            return
    assert errors or rows, "a file without a row must be an error"
    assert all(error.startswith("crowd.csv") for error in errors)


# ------------------------------------------------------------------------------ the import services


@pytest.fixture
def world(db: None, manager: Any) -> dict[str, Any]:
    """A collection `news` (d000…d019, q1, q2) with a built pool `crowd` over it, a rater and a worker."""
    collection = make_collection(name="news", managers=[manager])
    pool = make_pool(collection=collection, raters=[manager], name="crowd", managers=[manager])
    membership.create_worker_account(worker_id="w1")
    return {"collection": collection, "pool": pool, "manager": manager}


def snapshot() -> dict[str, Any]:
    """Every row an import may write, and every file under MEDIA_ROOT (an empty folder of a collection's
    click logs may stay: the next import of the collection's logs takes it)."""
    media = Path(settings.MEDIA_ROOT)
    return {
        "documents": sorted(Document.objects.values_list("pk", "docid", "title", "text", "url")),
        "topics": sorted(Topic.objects.values_list("pk", "qid", "query", "description", "narrative")),
        "runs": sorted(Run.objects.values_list("pk", "name", "num_rows")),
        "rows": RunRow.objects.count(),
        "judgements": sorted(Judgement.objects.values_list("pk", "grade", "unrateable")),
        "revisions": JudgementRevision.objects.count(),
        "items": sorted(PoolItem.objects.values_list("pk", "num_judgements")),
        "clicks": (ClickLog.objects.count(), ClickCount.objects.count(), QueryMapping.objects.count()),
        "jobs": Job.objects.count(),
        "users": sorted(membership.worker_accounts({"w1", "w2", "w9"})),
        "collections": Collection.objects.count(),
        "pools": Pool.objects.count(),
        "files": sorted(str(p) for p in media.rglob("*") if p.is_file()) if media.exists() else [],
    }


def importer(kind: str, world: dict[str, Any]) -> Callable[[Path], Any]:
    """The service that imports a file of `kind` into the world."""
    collection, pool = world["collection"], world["pool"]
    calls: dict[str, Callable[[Path], Any]] = {
        "documents": lambda path: imports.import_documents(collection=collection, path=path),
        "topics": lambda path: imports.import_topics(collection=collection, path=path),
        "run": lambda path: imports.import_run(collection=collection, path=path, name="fuzzed"),
        "qrels": lambda path: import_judgements(pool=pool, path=path, rater=world["manager"]),
        "crowd": lambda path: crowd_import.import_crowd_judgements(pool=pool, path=path, create_raters=True),
        "jsonl": lambda path: import_click_log(
            collection=collection, name="log", format="jsonl", paths=[str(path)]
        ),
        "counts": lambda path: import_click_log(
            collection=collection, name="log", format="counts", paths=[str(path)]
        ),
    }
    return calls[kind]


def big_run_of_teams() -> bytes:
    return b"".join(
        json.dumps({"qid": "q1", "docids": ["d001"], "teams": [f"team{i}"]}).encode() + b"\n"
        for i in range(130)
    )


#: (name, kind, bytes, the line the first error names (None: file-level), words of its message)
CASES: list[tuple[str, str, bytes, int | None, str]] = [
    # the defects this file found, one each
    (
        "long_docid.jsonl",
        "documents",
        b'{"docid": "' + b"x" * 256 + b'"}\n',
        1,
        "characters long (at most 255)",
    ),
    ("long_docid.tsv", "documents", b"d1\ta\tb\n" + b"x" * 300 + b"\ta\tb\n", 2, "at most 255"),
    ("long_docid.trec", "documents", b"<DOC><DOCNO>" + b"x" * 300 + b"</DOCNO></DOC>\n", 1, "at most 255"),
    ("long_url.jsonl", "documents", b'{"docid": "d1", "url": "' + b"u" * 2001 + b'"}\n', 1, "at most 2,000"),
    (
        "long_url.trec",
        "documents",
        b"<DOC><DOCNO>d1</DOCNO><URL>" + b"u" * 2001 + b"</URL></DOC>\n",
        1,
        "url",
    ),
    ("surrogate.jsonl", "documents", b'{"docid": "d1", "title": "\\ud800"}\n', 1, "unpaired surrogate"),
    ("surrogate_key.jsonl", "documents", b'{"docid": "d1", "metadata": {"\\udfff": 1}}\n', 1, "surrogate"),
    ("nan.jsonl", "documents", b'{"docid": "d1", "metadata": {"x": [NaN]}}\n', 1, "not finite"),
    ("inf.jsonl", "documents", b'{"docid": "d1", "score": 1e400}\n', 1, "not finite"),
    (
        "deep.jsonl",
        "documents",
        b'{"docid": "d1", "m": ' + b"[" * 900 + b"]" * 900 + b"}\n",
        1,
        "nested too deeply",
    ),
    (
        "deep_nul.jsonl",
        "documents",
        b'{"docid": "d1", "m": ' + b"[" * 700 + b'"\\u0000"' + b"]" * 700 + b"}\n",
        1,
        "nested too deeply",
    ),
    ("long_qid.jsonl", "topics", b'{"qid": "' + b"9" * 101 + b'", "query": "q"}\n', 1, "at most 100"),
    ("long_qid.tsv", "topics", b"q1\ta\n" + b"q" * 101 + b"\tb\n", 2, "at most 100"),
    ("long_qid.trec", "topics", b"<top><num> Number: " + b"7" * 101 + b"<title> q</top>\n", 1, "at most 100"),
    ("surrogate.jsonl", "topics", b'{"qid": "q9", "query": "a", "segments": ["\\ud801"]}\n', 1, "surrogate"),
    ("header_only.csv", "crowd", b"worker,qid,docid,label\n", None, "no rows found (only a header)"),
    (
        "big_field.csv",
        "crowd",
        b"worker,qid,docid,label,note\nw1,q1,d001,2," + b"n" * 140_000 + b"\n",
        2,
        "field larger than field limit",
    ),
    ("big_header.tsv", "crowd", b"worker\tqid\tdocid\tlabel\t" + b"h" * 140_000 + b"\n", 1, "cannot be read"),
    (
        "late_header.csv",
        "crowd",
        b"\n\nworker,qid,label\nw1,q1,2\n",
        3,
        "the header lacks the column(s) docid",
    ),
    (
        "long_ranker.jsonl",
        "jsonl",
        b'{"qid": "q1", "docids": ["d001"], "ranker": "' + b"r" * 201 + b'"}\n',
        1,
        "at most 200",
    ),
    ("surrogate_query.jsonl", "jsonl", b'{"query": "a\\udc00", "docids": ["d001"]}\n', 1, "surrogate"),
    (
        "surrogate_session.jsonl",
        "jsonl",
        b'{"qid": "q1", "session": "\\ud800", "docids": ["d001"]}\n',
        1,
        "surrogate",
    ),
    ("teams.jsonl", "jsonl", big_run_of_teams(), 128, "more than 127 team names"),
    ("long_logger.txt", "counts", b"q1 d001 1 5 1 " + b"l" * 201 + b"\n", 1, "at most 200"),
    # what the existing tests did not feed these imports
    (
        "bom_crlf_nul.csv",
        "crowd",
        b"\xef\xbb\xbfworker,qid,docid,label\r\nw1,q1,d0\x0001,2\r\n",
        2,
        "NUL byte",
    ),
    (
        "bad_utf8.csv",
        "crowd",
        b"worker,qid,docid,label\nw1,q1,d001,2\nw1,q\xff1,d002,1\n",
        3,
        "invalid UTF-8",
    ),
    (  # the header line is not UTF-8: named as the header, not the next line taken for one
        "bad_utf8_header.csv",
        "crowd",
        b"worker,q\xffid,docid,label\nw1,q1,d001,2\n",
        1,
        "invalid UTF-8",
    ),
    ("truncated.csv.gz", "crowd", gzip.compress(CROWD * 50)[:-30], None, "truncated gzip"),
    ("nan_seconds.csv", "crowd", b"worker,qid,docid,label,seconds\nw1,q1,d001,2,NaN\n", 2, "not a number"),
    ("short_row.csv", "crowd", b"worker,qid,docid,label\nw1,q1\n", 2, "fewer than the header"),
    ("huge_grade.qrels", "qrels", b"q1 0 d001 99999999999999999999999\n", 1, "not an integer"),
    ("bom_crlf.qrels", "qrels", b"\xef\xbb\xbfq1 0 d001 7\r\n", 1, "grade 7 is not on the rubric"),
    ("nul.qrels", "qrels", b"q1 0 d001 1\nq1 0 d0\x0002 1\n", 2, "NUL"),
    ("corrupt.qrels.gz", "qrels", gzip.compress(QRELS)[:-8] + b"\x00" * 8, None, "gzip"),
    ("empty.qrels", "qrels", b"", None, "file is empty"),
    ("negative_rank.run", "run", b"q1 Q0 d001 -5 1.0 r\nq1 Q0 d002 1 NaN r\n", 2, "not a finite number"),
    ("huge_score.run", "run", b"q1 Q0 d001 1 1e400 r\n", 1, "not a finite number"),
    ("bom.run", "run", b"\xef\xbb\xbfq1 Q0 d001 1 1 r\nq1 Q0 d001 2 0.5 r\n", 2, "duplicate docid"),
    ("not_object.jsonl", "jsonl", b"[1, 2]\n", 1, "expected a JSON object"),
    ("wrong_types.jsonl", "jsonl", b'{"qid": "q1", "docids": "d001"}\n', 1, "non-empty array"),
    ("huge_count.txt", "counts", b"q1 d001 1 99999999999999999999 1\n", 1, "more than a count can hold"),
    ("negative.txt", "counts", b"q1 d001 -3 5 1\n", 1, "must be 1 or more"),
    ("empty.txt.gz", "counts", gzip.compress(b""), None, "file is empty"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "kind", "data", "line", "message"), CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES]
)
def test_a_malformed_file_is_refused_naming_file_and_line_and_stores_nothing(
    world: dict[str, Any], tmp_path: Path, name: str, kind: str, data: bytes, line: int | None, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    before = snapshot()

    with pytest.raises(Refused) as refused:
        importer(kind, world)(path)

    assert snapshot() == before
    errors = refused.value.errors
    first = errors[0]
    where = f"{path}:{line}: " if line is not None else f"{path}:"
    assert first.startswith(where), errors
    assert message in "\n".join(errors), errors


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["documents", "topics", "run", "qrels", "crowd", "jsonl", "counts"])
def test_a_directory_for_a_file_is_refused_by_every_import(
    world: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / "folder.txt"
    folder.mkdir()
    before = snapshot()

    with pytest.raises(Refused) as refused:
        importer(kind, world)(folder)

    assert snapshot() == before
    assert f"{folder}: is a directory, not a file" in refused.value.errors


@pytest.mark.django_db
def test_more_loggers_than_the_archive_codes_is_refused_and_leaves_no_archive(
    world: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "loggers.jsonl"
    path.write_bytes(
        b"".join(b'{"qid": "q1", "docids": ["d001"], "ranker": "r%d"}\n' % i for i in range(MAX_LOGGERS + 1))
    )
    before = snapshot()

    with pytest.raises(ImportFailed) as refused:
        importer("jsonl", world)(path)

    assert snapshot() == before
    assert refused.value.errors == [
        f"{path.name}: more than {MAX_LOGGERS:,} loggers (ranker names) in one log"
    ]


@pytest.mark.django_db
def test_more_loggers_than_the_cells_keys_hold_is_refused_not_merged(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log's cells are counted under one int64 key (logger, topic, document, position): past its space the
    keys would wrap and two cells merge silently. Here the space is made to hold two loggers' cells."""
    from online import clicklogs

    collection = world["collection"]
    space = collection.topics.count() * collection.documents.count() * clicklogs.MAX_POSITION
    monkeypatch.setattr(clicklogs, "KEY_SPACE", 2 * space + 1, raising=False)
    path = tmp_path / "three.jsonl"
    path.write_bytes(b"".join(b'{"qid": "q1", "docids": ["d001"], "ranker": "r%d"}\n' % i for i in range(3)))
    before = snapshot()

    with pytest.raises(ImportFailed) as refused:
        importer("jsonl", world)(path)

    assert snapshot() == before
    assert (
        len(refused.value.errors) == 1
        and "more than 2 loggers (ranker names) in one log" in (refused.value.errors[0])
    )
    path.write_bytes(b"".join(b'{"qid": "q1", "docids": ["d001"], "ranker": "r%d"}\n' % i for i in range(2)))
    importer("jsonl", world)(path)  # two fit


#: Good files of each kind, mutated at random (fixed seeds) through the services.
GOOD = {
    "documents": (DOCS["jsonl"], "docs.jsonl"),
    "topics": (TOPICS["tsv"], "topics.tsv"),
    "run": (RUN, "run.txt"),
    "qrels": (QRELS, "qrels.txt"),
    "crowd": (CROWD, "crowd.csv"),
    "jsonl": (IMPRESSIONS, "log.jsonl"),
    "counts": (COUNTS, "counts.txt"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(GOOD))
def test_randomly_mutated_files_either_import_or_change_nothing(
    world: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    good, name = GOOD[kind]
    rng = random.Random(f"fuzz-{kind}")  # a fixed seed per kind
    for attempt in range(12):
        steps = [
            (
                rng.choice(["insert", "replace", "truncate", "delete", "duplicate_line", "gzip"]),
                rng.random(),
                rng.randrange(len(TOKENS)),
            )
            for _ in range(rng.randint(1, 3))
        ]
        path = tmp_path / f"{attempt}-{name}"
        path.write_bytes(mutate(good, steps))
        before = snapshot()
        try:
            with formats.limits(line_bytes=LINE_BYTES):
                importer(kind, world)(path)
        except Refused as exc:
            assert snapshot() == before, steps
            assert all(str(path) in error or not error.startswith("/") for error in exc.errors), exc.errors
        else:  # it was good: undo it, so the next attempt starts from the same world
            ClickLog.objects.all().delete()
            Run.objects.filter(name="fuzzed").delete()


# ---------------------------------------------------------------------------------- the entry points


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("command", "name", "data", "line"),
    [
        ("import_documents", "docs.jsonl", b'{"docid": "' + b"x" * 300 + b'"}\n', 1),
        ("import_topics", "topics.jsonl", b'{"qid": "q9", "query": "\\ud800"}\n', 1),
        (
            "import_judgements",
            "crowd.csv",
            b"worker,qid,docid,label,x\nw1,q1,d001,1," + b"x" * 140_000 + b"\n",
            2,
        ),
        (
            "import_clicks",
            "log.jsonl",
            b'{"qid": "q1", "docids": ["d001"], "ranker": "' + b"r" * 300 + b'"}\n',
            1,
        ),
    ],
)
def test_the_commands_exit_with_an_error_naming_file_and_line(
    world: dict[str, Any], tmp_path: Path, command: str, name: str, data: bytes, line: int
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    args = {
        "import_documents": ["news", str(path)],
        "import_topics": ["news", str(path)],
        "import_judgements": ["crowd", str(path), "--crowd"],
        "import_clicks": ["news", str(path), "--name", "log"],
    }[command]
    before = snapshot()

    with pytest.raises(CommandError) as error:
        call_command(command, *args, stdout=io.StringIO(), stderr=io.StringIO())

    assert snapshot() == before
    assert f"{path}:{line}: " in str(error.value)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [".", ".."])
def test_a_run_name_that_is_no_url_segment_is_refused_before_anything(
    world: dict[str, Any], tmp_path: Path, name: str
) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(RUN)
    before = snapshot()

    with pytest.raises(PoolError) as refused:
        imports.import_run(collection=world["collection"], path=path, name=name)
    response = client_for(world["manager"]).post(
        "/api/collections/news/imports/",
        {"kind": "run", "name": name, "file": SimpleUploadedFile("run.txt", RUN)},
        format="multipart",
    )

    assert list(refused.value.fields) == ["name"]
    assert response.status_code == 400 and list(response.json()) == ["name"], response.content
    assert snapshot() == before
    with pytest.raises(PoolError):  # a name taken from the file's: '...txt' less its extension is '..'
        imports.check_run_name(name=None, file_name="...txt")


def api_upload(world: dict[str, Any], kind: str, name: str, data: bytes, /, **fields: Any) -> Any:
    client = client_for(world["manager"])
    upload = SimpleUploadedFile(name, data)
    if kind in ("documents", "topics", "run"):
        form = {"kind": kind, "file": upload, **fields}
        return client.post("/api/collections/news/imports/", form, format="multipart")
    if kind == "crowd":
        return client.post(
            "/api/judging/crowd/crowd-imports/", {"file": upload, **fields}, format="multipart"
        )
    return client.post(
        "/api/click-logs/", {"collection": "news", "name": "log", "format": kind, "file": upload, **fields},
        format="multipart",
    )  # fmt: skip


API_CASES = [
    ("documents", "docs.jsonl", b'{"docid": "' + b"x" * 300 + b'"}\n', 1),
    ("documents", "docs.jsonl", b'{"docid": "d1", "metadata": {"x": NaN}}\n', 1),
    ("documents", "docs.jsonl", b'{"docid": "d1", "text": "\\udc80"}\n', 1),
    ("topics", "topics.tsv", b"q" * 150 + b"\tquery\n", 1),
    ("crowd", "crowd.csv", b"worker,qid,docid,label\n", None),
    ("crowd", "crowd.csv", b"worker,qid,docid,label,x\nw1,q1,d001,1," + b"x" * 140_000 + b"\n", 2),
    ("jsonl", "log.jsonl", b'{"qid": "q1", "docids": ["d001"], "ranker": "' + b"r" * 300 + b'"}\n', 1),
    ("jsonl", "log.jsonl", b'{"query": "\\ud800", "docids": ["d001"]}\n', 1),
    ("counts", "c.txt", b"q1 d001 1 5 1 " + b"l" * 300 + b"\n", 1),
]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "name", "data", "line"), API_CASES)
def test_the_api_answers_400_on_the_file_and_keeps_nothing(
    world: dict[str, Any], kind: str, name: str, data: bytes, line: int | None,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    before = snapshot()

    with django_capture_on_commit_callbacks(execute=True):
        response = api_upload(world, kind, name, data)

    assert response.status_code == 400, response.content
    errors = response.json()["file"]
    assert errors[0].startswith(f"{name}:{line}: " if line else f"{name}: "), errors
    assert snapshot() == before


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "name", "data", "line"), API_CASES)
def test_an_upload_too_large_to_check_fails_its_job_with_the_errors(
    world: dict[str, Any], kind: str, name: str, data: bytes, line: int | None,
    django_capture_on_commit_callbacks: Any, settings: Any,
) -> None:  # fmt: skip
    settings.IMPORT_CHECK_MAX_BYTES = 0  # every upload goes to its job unchecked
    before = snapshot()

    with django_capture_on_commit_callbacks(execute=True):
        response = api_upload(world, kind, name, data)

    assert response.status_code == 202, response.content
    job = client_for(world["manager"]).get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "failed"
    assert job["errors"][0].startswith(f"{name}:{line}: " if line else f"{name}: "), job["errors"]
    assert not any(error.startswith("internal error") for error in job["errors"])
    after = snapshot()
    assert after["jobs"] == before["jobs"] + 1
    assert {k: v for k, v in after.items() if k not in ("jobs", "files")} == {
        k: v for k, v in before.items() if k not in ("jobs", "files")
    }
    assert not [f for f in after["files"] if "/clicklogs/" in f]  # no archive left behind


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "fields", "field"),
    [
        ("documents", {"format": "../../etc"}, "format"),
        ("documents", {"kind": "documents/../run"}, "kind"),
        ("run", {"name": "../x"}, "name"),
        ("run", {"name": "x" * 201}, "name"),
        ("crowd", {"duplicates": "first"}, "duplicates"),
        ("crowd", {"unrateable_labels": "-2,x"}, "unrateable_labels"),
        ("jsonl", {"name": "../x"}, "name"),
        ("jsonl", {"format": "../ubi"}, "format"),
        ("jsonl", {"ordinal_base": "2"}, "ordinal_base"),
        ("jsonl", {"collection": "nowhere"}, "collection"),
        ("ubi", {}, "events"),
    ],
)
def test_the_api_answers_400_naming_a_bad_parameter(
    world: dict[str, Any], kind: str, fields: dict[str, str], field: str
) -> None:
    before = snapshot()
    good = {"documents": DOCS["jsonl"], "run": RUN, "crowd": CROWD, "jsonl": IMPRESSIONS, "ubi": UBI_QUERIES}[
        kind
    ]

    response = api_upload(world, kind, "file.jsonl", good, **fields)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert snapshot() == before


@pytest.mark.django_db
def test_the_upload_pages_list_the_errors_and_keep_nothing(world: dict[str, Any], client: Any) -> None:
    client.force_login(world["manager"])
    before = snapshot()

    documents = client.post(
        "/collections/news/",
        {
            "kind": "documents",
            "file": SimpleUploadedFile("docs.jsonl", b'{"docid": "' + b"x" * 300 + b'"}\n'),
        },
    )
    crowd = client.post("/manage/pools/crowd/crowd/", {
        "file": SimpleUploadedFile("crowd.csv", b"worker,qid,docid,label\n"), "duplicates": "last",
    })  # fmt: skip

    assert documents.status_code == 200  # the page again, its form listing the errors
    assert "docs.jsonl:1: docid" in documents.content.decode()
    assert crowd.status_code == 400
    assert "crowd.csv: no rows found (only a header)" in crowd.content.decode()
    assert snapshot() == before

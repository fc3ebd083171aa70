"""The import commands end to end: create_collection, import_documents, import_topics, import_run.

Every test drives the real management command (`call_command`) against the database and checks the rows
stored, the summary line printed, and the refusals. Stored ranks are checked against an independent sort
in trec_eval order (score descending, ties by docid descending in byte order).
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pooling import formats, trec_io
from pooling.models import Collection, Document, Run, RunRow, Topic

DATA = Path(__file__).resolve().parent.parent / "data"
GOOD = DATA / "good"
INGEST = DATA / "ingest"

pytestmark = pytest.mark.django_db

SECONDS = r"\d+\.\d s"

# The good data set in trec_eval order (tests/data/good/README.md), worked out by hand.
RUN_A = {
    "301": [("d01", 12.5), ("d04", 9.75), ("d02", 9.75), ("d03", 3.0)],
    "302": [("d08", 8.0), ("d05", 7.5), ("d07", 1.25)],
    "303": [("d09", 11.0), ("d12", 10.0), ("d11", 2.5)],
}
RUN_B = {
    "301": [("d02", -1.2), ("d01", -2.5), ("d05", -3.0)],
    "302": [("d05", -0.5), ("d06", -0.9), ("d08", -1.1)],
    "303": [("d10", -0.3), ("d12", -0.4), ("d09", -0.4)],
}
TOPICS = {
    "301": ("international organized crime", ["head"]),
    "302": ("poliomyelitis and post-polio", ["tail"]),
    "303": ("hubble telescope achievements", ["head", "navigational"]),
}


# ------------------------------------------------------------------------------------------- helpers


@dataclass
class Output:
    out: str
    err: str


def run(command: str, *args: str | Path, **options: object) -> Output:
    """Run a management command, capturing what it writes."""
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *[str(arg) for arg in args], stdout=out, stderr=err, **options)
    return Output(out.getvalue(), err.getvalue())


def make_file(tmp_path: Path, name: str, content: str | bytes, *, compress: bool = False) -> Path:
    data = content.encode() if isinstance(content, str) else content
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def run_lines(rows: list[tuple[str, str, float]], *, tag: str = "t") -> str:
    """A TREC run file of (qid, docid, score) rows in the order given; the rank column is the file order."""
    return "".join(f"{qid} Q0 {docid} {i} {score!r} {tag}\n" for i, (qid, docid, score) in enumerate(rows, 1))


def trec_order(rows: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval's order, computed independently: score descending, ties by docid descending in bytes."""
    by_docid = sorted(rows, key=lambda row: row[0].encode("utf-8"), reverse=True)
    return sorted(by_docid, key=lambda row: row[1], reverse=True)


def ranked(run_name: str, collection: str = "news") -> dict[str, list[tuple[str, float]]]:
    """Every topic's stored ranked list of a run, read through `Run.ranked_list`."""
    stored = Run.objects.get(collection__name=collection, name=run_name)
    topics = Topic.objects.filter(collection=stored.collection).order_by("qid")
    lists = {topic.qid: stored.ranked_list(topic) for topic in topics}
    return {qid: rows for qid, rows in lists.items() if rows}


def stored_ranks(run_name: str) -> dict[str, list[int]]:
    """The rank column of each topic, in order: 1..n without gaps when stored right."""
    ranks: dict[str, list[int]] = {}
    for qid, rank in (
        RunRow.objects.filter(run__name=run_name)
        .order_by("topic__qid", "rank")
        .values_list("topic__qid", "rank")
    ):
        ranks.setdefault(qid, []).append(rank)
    return ranks


def counts() -> tuple[int, int, int, int]:
    return (Document.objects.count(), Topic.objects.count(), Run.objects.count(), RunRow.objects.count())


@pytest.fixture
def collection() -> Collection:
    run("create_collection", "news", description="a tiny newswire collection")
    return Collection.objects.get(name="news")


@pytest.fixture
def loaded(collection: Collection) -> Collection:
    """The good collection: 12 documents d01..d12 and topics 301..303."""
    run("import_documents", "news", GOOD / "docs.jsonl")
    run("import_topics", "news", GOOD / "topics.jsonl")
    return collection


# ------------------------------------------------------------------------------------- collections


def test_it_creates_a_collection(collection: Collection) -> None:
    assert collection.description == "a tiny newswire collection"
    assert run("create_collection", "other").out.strip() == "created collection other"
    assert list(Collection.objects.values_list("name", flat=True)) == ["news", "other"]


def test_it_refuses_a_duplicate_collection_name(collection: Collection) -> None:
    with pytest.raises(CommandError, match="collection 'news' already exists"):
        run("create_collection", "news")
    # a name that differs only in case is the same name: lists and URLs would tell the two apart by case
    refused = "collection 'News' already exists as 'news' \\(names that differ only in case are one\\)"
    with pytest.raises(CommandError, match=refused):
        run("create_collection", "News")
    assert Collection.objects.count() == 1


def test_it_refuses_to_import_into_a_missing_collection(db: None) -> None:
    for command, path in (
        ("import_documents", GOOD / "docs.jsonl"),
        ("import_topics", GOOD / "topics.jsonl"),
        ("import_run", GOOD / "run_a.txt"),
    ):
        with pytest.raises(CommandError, match="no collection named 'nowhere'"):
            run(command, "nowhere", path)
    assert counts() == (0, 0, 0, 0)


# --------------------------------------------------------------------------------------- documents


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz", "docs.tsv", "docs.trec"])
def test_it_imports_documents_in_every_format(collection: Collection, name: str) -> None:
    output = run("import_documents", "news", GOOD / name)

    assert re.fullmatch(rf"documents: 12 rows, 12 created, 0 updated, {SECONDS}\n", output.out)
    expected = {
        entry.docid: (entry.title, entry.text, entry.url, entry.metadata)
        for entry in formats.read_documents(GOOD / name)
    }
    stored = {
        doc.docid: (doc.title, doc.text, doc.url, doc.metadata)
        for doc in Document.objects.filter(collection=collection)
    }
    assert stored == expected
    assert sorted(stored) == [f"d{i:02d}" for i in range(1, 13)]
    assert stored["d01"][0] == "Mafia networks cross borders"


def test_it_keeps_url_and_metadata_of_jsonl_documents(collection: Collection) -> None:
    run("import_documents", "news", GOOD / "docs.jsonl")

    d01 = Document.objects.get(docid="d01")
    assert d01.url == "https://news.example.org/1991/mafia-networks"
    assert d01.metadata == {"source": "newswire", "year": 1991}
    assert Document.objects.get(docid="d02").metadata == {}


def test_it_updates_documents_already_in_the_collection(collection: Collection, tmp_path: Path) -> None:
    run("import_documents", "news", GOOD / "docs.tsv")
    ids = dict(Document.objects.values_list("docid", "id"))
    changed = make_file(
        tmp_path,
        "more.jsonl",
        json.dumps({"docid": "d01", "title": "Renamed", "text": "New body"})
        + "\n"
        + json.dumps({"docid": "d13", "title": "Thirteen", "text": "A new document"})
        + "\n",
    )

    output = run("import_documents", "news", changed)

    assert re.fullmatch(rf"documents: 2 rows, 1 created, 1 updated, {SECONDS}\n", output.out)
    assert Document.objects.count() == 13
    d01 = Document.objects.get(docid="d01")
    assert (d01.id, d01.title, d01.text) == (ids["d01"], "Renamed", "New body")
    assert Document.objects.get(docid="d02").title == "Interpol report on trafficking"


def test_it_guesses_the_document_format_from_the_extension_and_obeys_format(
    collection: Collection, tmp_path: Path
) -> None:
    # JSONL content under a name that says TREC SGML: the guess fails, --format jsonl reads it.
    misnamed = tmp_path / "docs.sgml"
    shutil.copy(GOOD / "docs.jsonl", misnamed)
    with pytest.raises(CommandError, match=r"docs\.sgml:1: text outside <DOC>"):
        run("import_documents", "news", misnamed)
    assert Document.objects.count() == 0

    output = run("import_documents", "news", misnamed, format="jsonl")
    assert output.out.startswith("documents: 12 rows, 12 created")

    # TSV content in a .txt file is guessed as TSV; --format trec on it is refused on line 1.
    as_txt = tmp_path / "more.txt"
    as_txt.write_text("d20\tTwenty\tbody twenty\n")
    with pytest.raises(CommandError, match=r"more\.txt:1: text outside <DOC>"):
        run("import_documents", "news", as_txt, format="trec")
    assert run("import_documents", "news", as_txt).out.startswith("documents: 1 rows, 1 created")
    assert Document.objects.get(docid="d20").title == "Twenty"


def test_it_imports_many_documents_in_batches(collection: Collection, tmp_path: Path) -> None:
    lines = "".join(f"doc{i:05d}\ttitle {i}\ttext {i}\n" for i in range(12_001))
    path = make_file(tmp_path, "many.tsv.gz", lines, compress=True)

    output = run("import_documents", "news", path)

    assert output.out.startswith("documents: 12001 rows, 12001 created, 0 updated")
    assert Document.objects.count() == 12_001
    assert Document.objects.get(docid="doc12000").text == "text 12000"


# ------------------------------------------------------------------------------------------ topics


@pytest.mark.parametrize("name", ["topics.jsonl", "topics.tsv", "topics.trec"])
def test_it_imports_topics_in_every_format(collection: Collection, name: str) -> None:
    output = run("import_topics", "news", GOOD / name)

    assert re.fullmatch(rf"topics: 3 rows, 3 topics, 3 created, 0 updated, {SECONDS}\n", output.out)
    stored = {t.qid: (t.query, t.segments) for t in Topic.objects.filter(collection=collection)}
    if name == "topics.trec":  # the TREC format has no segments
        assert stored == {qid: (query, []) for qid, (query, _) in TOPICS.items()}
    else:
        assert stored == TOPICS


def test_it_keeps_description_and_narrative(collection: Collection) -> None:
    run("import_topics", "news", GOOD / "topics.trec")

    topic = Topic.objects.get(qid="302")
    assert topic.description == "Is the disease of poliomyelitis (polio) under control in the world?"
    assert topic.narrative == "Relevant documents discuss polio cases, vaccination or post-polio syndrome."


def test_it_reads_gzipped_topics_and_updates_existing_ones(collection: Collection, tmp_path: Path) -> None:
    run("import_topics", "news", GOOD / "topics.tsv")
    path = make_file(tmp_path, "topics.jsonl.gz", (GOOD / "topics.jsonl").read_bytes(), compress=True)

    output = run("import_topics", "news", path)

    assert re.fullmatch(rf"topics: 3 rows, 3 topics, 0 created, 3 updated, {SECONDS}\n", output.out)
    assert Topic.objects.count() == 3
    assert Topic.objects.get(qid="303").description.startswith("Identify positive accomplishments")


def test_it_guesses_the_topic_format_and_obeys_format(collection: Collection, tmp_path: Path) -> None:
    misnamed = tmp_path / "topics.txt"  # anything not .tsv/.jsonl is guessed as TREC
    shutil.copy(GOOD / "topics.tsv", misnamed)
    with pytest.raises(CommandError, match=r"topics\.txt:1: text outside <top>"):
        run("import_topics", "news", misnamed)
    assert Topic.objects.count() == 0

    assert run("import_topics", "news", misnamed, format="tsv").out.startswith("topics: 3 rows")
    assert Topic.objects.get(qid="303").segments == ["head", "navigational"]


# -------------------------------------------------------------------------------------------- runs


@pytest.mark.parametrize(
    ("name", "run_name", "expected"), [("run_a.txt", "run_a", RUN_A), ("run_b.txt.gz", "run_b", RUN_B)]
)
def test_it_imports_a_run_in_trec_eval_order(
    loaded: Collection, name: str, run_name: str, expected: dict[str, list[tuple[str, float]]]
) -> None:
    output = run("import_run", "news", GOOD / name, description="a baseline")

    rows = sum(len(v) for v in expected.values())
    assert re.fullmatch(rf"run: {rows} rows, 3 topics, {SECONDS}\n", output.out)
    stored = Run.objects.get(name=run_name)
    assert (stored.num_rows, stored.num_topics, stored.source_file, stored.description) == (
        rows,
        3,
        name,
        "a baseline",
    )
    assert ranked(run_name) == expected
    assert stored_ranks(run_name) == {qid: list(range(1, len(v) + 1)) for qid, v in expected.items()}


def test_it_names_a_run_from_the_option(loaded: Collection) -> None:
    run("import_run", "news", GOOD / "run_a.txt", name="bm25")
    run("import_run", "news", GOOD / "run_a.txt", name="bm25-copy")

    assert sorted(Run.objects.values_list("name", flat=True)) == ["bm25", "bm25-copy"]
    assert ranked("bm25") == ranked("bm25-copy") == RUN_A


def test_it_refuses_a_run_name_already_taken_without_replace(loaded: Collection) -> None:
    run("import_run", "news", GOOD / "run_a.txt", name="bm25")
    before = counts()

    taken = r"a run named 'bm25' already exists \(to replace its rows: --replace, the upload form's Replace"
    with pytest.raises(CommandError, match=taken):
        run("import_run", "news", GOOD / "run_b.txt.gz", name="bm25")

    assert counts() == before
    assert ranked("bm25") == RUN_A


def test_it_swaps_the_rows_of_a_run_with_replace(loaded: Collection) -> None:
    run("import_run", "news", GOOD / "run_a.txt", name="bm25", description="first")
    first = Run.objects.get(name="bm25")

    output = run("import_run", "news", GOOD / "run_b.txt.gz", name="bm25", replace=True)

    assert output.out.startswith("run: 9 rows, 3 topics, ")
    again = Run.objects.get(name="bm25")
    assert again.pk == first.pk
    assert (again.num_rows, again.source_file, again.description) == (9, "run_b.txt.gz", "first")
    assert ranked("bm25") == RUN_B
    assert RunRow.objects.count() == 9


def test_it_keeps_the_old_rows_when_a_replacement_is_bad(loaded: Collection, tmp_path: Path) -> None:
    run("import_run", "news", GOOD / "run_a.txt", name="bm25")
    bad = make_file(tmp_path, "bad.txt", "301 Q0 d01 1 1.0 x\n301 Q0 d02 2 oops x\n")

    with pytest.raises(CommandError, match=r"bad\.txt:2: score 'oops' is not a number"):
        run("import_run", "news", bad, name="bm25", replace=True)

    assert ranked("bm25") == RUN_A
    assert Run.objects.get(name="bm25").num_rows == 10


def test_it_refuses_unknown_topics_naming_them(loaded: Collection, tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "unknown.txt",
        run_lines(
            [
                ("301", "d01", 2.0),
                ("999", "d02", 1.0),
                ("999", "d03", 0.5),
                ("302", "d05", 1.0),
                ("998", "d06", 1.0),
            ]
        ),
    )

    with pytest.raises(CommandError) as info:
        run("import_run", "news", path)

    message = str(info.value)
    # One error per block of the unknown topic, on its first line, with the count of its rows.
    assert f"{path}:2: unknown topic '999' (not in the collection; 2 rows from here)" in message
    assert f"{path}:5: unknown topic '998' (not in the collection; 1 row from here)" in message
    assert f"{path}:3:" not in message
    assert counts()[2:] == (0, 0)


def test_it_skips_unknown_topics_with_a_warning_and_the_count(loaded: Collection, tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "unknown.txt",
        run_lines(
            [
                ("301", "d01", 2.0),
                ("999", "d02", 1.0),
                ("999", "d03", 0.5),
                ("998", "d03", 0.5),
                ("302", "d05", 1.0),
            ]
        ),
    )

    output = run("import_run", "news", path, skip_unknown_topics=True)

    assert output.out.startswith("run: 2 rows, 2 topics, ")
    assert "warning:" in output.err
    assert "skipped 3 rows of 2 topics" in output.err
    assert "998, 999" in output.err
    assert ranked("unknown") == {"301": [("d01", 2.0)], "302": [("d05", 1.0)]}


def test_it_refuses_unknown_documents(loaded: Collection, tmp_path: Path) -> None:
    path = make_file(tmp_path, "docs.txt", run_lines([("301", "d01", 2.0), ("301", "nowhere", 1.0)]))

    with pytest.raises(CommandError, match=rf"{re.escape(str(path))}:2: unknown document 'nowhere'"):
        run("import_run", "news", path, skip_unknown_topics=True)
    assert counts()[2:] == (0, 0)


def test_it_refuses_a_run_whose_topics_are_all_unknown_even_when_skipping(
    loaded: Collection, tmp_path: Path
) -> None:
    path = make_file(tmp_path, "elsewhere.txt", run_lines([("999", "d01", 2.0)]))

    with pytest.raises(CommandError, match="no rows to import"):
        run("import_run", "news", path, skip_unknown_topics=True)
    assert counts()[2:] == (0, 0)


def test_it_stores_ranks_in_trec_eval_order_for_shuffled_tied_rows(
    loaded: Collection, tmp_path: Path
) -> None:
    rng = random.Random(7)
    docids = [f"d{i:02d}" for i in range(1, 13)]
    for trial in range(5):
        rows: list[tuple[str, str, float]] = []
        for qid in ("301", "302", "303"):
            chosen = rng.sample(docids, rng.randint(1, 12))
            # few distinct scores: many ties, broken by docid descending
            rows += [(qid, docid, rng.choice([0.0, 1.5, -2.25, 3.0, 1e-3])) for docid in chosen]
        blocks = [[row for row in rows if row[0] == qid] for qid in ("301", "302", "303")]
        for block in blocks:
            rng.shuffle(block)  # the file order within a topic is irrelevant
        path = make_file(
            tmp_path, f"shuffled{trial}.txt", run_lines([row for block in blocks for row in block])
        )

        run("import_run", "news", path)

        expected = {
            qid: trec_order([(docid, score) for q, docid, score in rows if q == qid])
            for qid in ("301", "302", "303")
        }
        assert ranked(f"shuffled{trial}") == expected


def test_it_orders_ties_by_docid_bytes_descending(collection: Collection, tmp_path: Path) -> None:
    docids = ["a", "B", "b", "é", "z", "Z10", "Z9", "ä"]
    run("import_documents", "news", make_file(tmp_path, "d.tsv", "".join(f"{d}\tt\tx\n" for d in docids)))
    run("import_topics", "news", make_file(tmp_path, "t.tsv", "1\tq\n"))
    path = make_file(tmp_path, "ties.txt", run_lines([("1", d, 1.0) for d in docids]))

    run("import_run", "news", path)

    # UTF-8 byte order: é (c3 a9) > ä (c3 a4) > z > b > a > Z9 > Z10 > B
    assert [docid for docid, _ in ranked("ties")["1"]] == ["é", "ä", "z", "b", "a", "Z9", "Z10", "B"]


def test_it_merges_a_topic_whose_rows_are_not_contiguous(loaded: Collection) -> None:
    path = INGEST / "run_noncontiguous.txt"

    output = run("import_run", "news", path)

    entries = trec_io.read_run(path).to_dict()
    assert output.out.startswith(f"run: {sum(map(len, entries.values()))} rows, 3 topics, ")
    expected = {qid: trec_order(list(entries[qid].items())) for qid in ("301", "302", "303")}
    assert ranked("run_noncontiguous") == expected
    assert [docid for docid, _ in expected["301"]] == ["d04", "d03", "d02", "d01"]  # two blocks, merged
    assert stored_ranks("run_noncontiguous") == {
        qid: list(range(1, len(v) + 1)) for qid, v in expected.items()
    }
    assert Run.objects.get().num_topics == 3


def test_it_imports_an_interleaved_run_to_the_rows_of_its_sorted_version(
    collection: Collection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trec_io.by_topic, "TOPIC_PIECE_ROWS", 500)  # ranked a few topics at a time
    rng = random.Random(11)
    docids = [f"doc{i:03d}" for i in range(300)]
    run("import_documents", "news", make_file(tmp_path, "d.tsv", "".join(f"{d}\tt\tx\n" for d in docids)))
    run("import_topics", "news", make_file(tmp_path, "t.tsv", "".join(f"q{i}\tquery\n" for i in range(40))))
    # Scores drawn from few values, so that many ties are broken by docid; one topic is unknown (skipped).
    rows = [(f"q{t}", d, float(rng.randint(0, 9))) for t in range(41) for d in rng.sample(docids, 200)]
    interleaved = rows[:]
    rng.shuffle(interleaved)
    sorted_path = make_file(tmp_path, "sorted.txt", run_lines(rows))
    interleaved_path = make_file(tmp_path, "interleaved.txt.gz", run_lines(interleaved), compress=True)

    sorted_out = run("import_run", "news", sorted_path, skip_unknown_topics=True)
    interleaved_out = run("import_run", "news", interleaved_path, skip_unknown_topics=True)

    assert sorted_out.out.startswith("run: 8000 rows, 40 topics, ")
    assert interleaved_out.out.startswith("run: 8000 rows, 40 topics, ")
    assert "skipped 200 rows of 1 topics" in interleaved_out.err + interleaved_out.out

    def stored(name: str) -> list[tuple[int, int, int, float]]:
        return sorted(
            RunRow.objects.filter(run__name=name).values_list("topic_id", "rank", "document_id", "score")
        )

    assert stored("interleaved") == stored("sorted")
    assert ranked("interleaved")["q7"] == trec_order([(d, s) for q, d, s in rows if q == "q7"])


def test_it_refuses_a_duplicate_split_across_blocks(loaded: Collection, tmp_path: Path) -> None:
    path = make_file(
        tmp_path,
        "split.txt",
        run_lines([("301", "d01", 3.0), ("301", "d02", 2.0), ("302", "d05", 1.0), ("301", "d01", 1.0)]),
    )
    before = counts()

    with pytest.raises(CommandError) as info:
        run("import_run", "news", path)

    assert counts() == before
    # One message for a duplicate, whether its rows are in one block or not.
    assert f"{path}:4: duplicate docid 'd01' for qid '301' (first at line 1)" in str(info.value)


def test_it_refuses_a_duplicate_split_across_blocks_of_a_gzipped_run_with_skipped_topics(
    loaded: Collection, tmp_path: Path
) -> None:
    rows = [("301", "d01", 3.0), ("999", "d02", 2.0), ("302", "d05", 1.0), ("999", "d02", 2.0)]
    rows += [("301", "d02", 1.0), ("301", "d01", 1.0)]
    path = make_file(tmp_path, "split.txt.gz", run_lines(rows), compress=True)
    before = counts()

    with pytest.raises(CommandError) as info:
        run("import_run", "news", path, skip_unknown_topics=True)

    assert counts() == before
    assert f"{path}:6: duplicate docid 'd01' for qid '301' (first at line 1)" in str(info.value)


def test_it_imports_a_large_gzipped_run_in_batches(collection: Collection, tmp_path: Path) -> None:
    rng = random.Random(3)
    docids = [f"doc{i:04d}" for i in range(1000)]
    run("import_documents", "news", make_file(tmp_path, "d.tsv", "".join(f"{d}\tt\tx\n" for d in docids)))
    run(
        "import_topics",
        "news",
        make_file(tmp_path, "t.tsv", "".join(f"q{i}\tquery {i}\n" for i in range(25))),
    )
    rows = [(f"q{t}", d, float(rng.randint(0, 400))) for t in range(25) for d in rng.sample(docids, 1000)]
    path = make_file(tmp_path, "big.txt.gz", run_lines(rows), compress=True)

    output = run("import_run", "news", path)

    assert output.out.startswith("run: 25000 rows, 25 topics, ")
    assert RunRow.objects.count() == 25_000
    stored = ranked("big")
    for qid in ("q0", "q13", "q24"):
        assert stored[qid] == trec_order([(d, s) for q, d, s in rows if q == qid])


@pytest.mark.django_db
def test_a_directory_is_named_as_such_by_every_import(tmp_path) -> None:
    # import_documents and import_topics ended in an IsADirectoryError traceback; runs said it already.
    call_command("create_collection", "dirs")
    for command in ("import_documents", "import_topics", "import_run"):
        with pytest.raises(CommandError) as info:
            call_command(command, "dirs", str(tmp_path))
        assert f"{tmp_path}: is a directory, not a file" in str(info.value), command

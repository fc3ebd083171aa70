"""What no file may do to the readers or to a web request: hold a NUL, expand without bound (a gzip
bomb), or have a line without end. Every reader refuses a NUL on its line; a line longer than
IMPORT_MAX_LINE_BYTES is an error on its line and is never held whole; the check inside a web request
reads at most IMPORT_CHECK_MAX_DECOMPRESSED_BYTES and leaves a file that expands further to its job."""

from __future__ import annotations

import gzip
import io
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from pooling import formats, trec_io
from pooling.models import Collection, Document, Job, Topic
from tests.conftest import client_for

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"


def write(tmp_path: Path, name: str, data: bytes, *, compress: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, compresslevel=9) if compress else data)
    return path


def errors_of(read: Any) -> list[str]:
    with pytest.raises(formats.FormatError) as info:
        read()
    return [str(error) for error in info.value.errors]


# ---------------------------------------------------------------------------------------------- NUL


def test_it_refuses_a_raw_nul_byte_in_a_tsv_topics_file_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.tsv", b"1\tfirst\n2\tsec\x00ond\n3\tthird\n")
    assert errors_of(lambda: list(formats.read_topics(path))) == [
        f"{path}:2: NUL byte at byte column 6 (text may not contain NUL)"
    ]


def test_it_refuses_an_escaped_nul_in_any_json_string_but_not_an_escaped_backslash(tmp_path: Path) -> None:
    topics = write(
        tmp_path, "t.jsonl", b'{"qid": "1", "query": "a\\u0000b"}\n{"qid": "2", "query": "\\\\u0000"}\n'
    )
    assert errors_of(lambda: list(formats.read_topics(topics))) == [
        f"{topics}:1: NUL character (\\u0000) in a JSON string (text may not contain NUL)"
    ]
    docs = write(tmp_path, "d.jsonl", b'{"docid": "x", "metadata": {"k": ["ok", "\\u0000"]}}\n')
    assert errors_of(lambda: list(formats.read_documents(docs))) == [
        f"{docs}:1: NUL character (\\u0000) in a JSON string (text may not contain NUL)"
    ]


def test_it_refuses_a_nul_byte_in_a_run_or_qrels_file_on_its_line(tmp_path: Path) -> None:
    run = write(tmp_path, "r.txt", b"q Q0 a 1 1 t\nq Q0 b\x00c 2 1 t\n")
    with pytest.raises(formats.FormatError) as info:
        trec_io.read_run(run)
    assert [str(e) for e in info.value.errors] == [
        f"{run}:2: NUL byte at byte column 7 (text may not contain NUL)"
    ]
    qrels = write(tmp_path, "q.txt", b"1 0 a 1\n1 0 b 1\x00\n")
    with pytest.raises(formats.FormatError) as info:
        trec_io.read_qrels(qrels)
    assert [str(e) for e in info.value.errors] == [
        f"{qrels}:2: NUL byte at byte column 8 (text may not contain NUL)"
    ]


# ------------------------------------------------------------------------------------ line length


def bomb(size: int = 100_000_000) -> bytes:
    """One line of `size` zeros (the digit), compressed: about 100 kB that expand to 100 MB."""
    return gzip.compress(b"0" * size, compresslevel=9)


@pytest.mark.parametrize("kind", ["topics", "documents", "run", "qrels"])
def test_it_reads_a_gzip_bomb_of_one_line_in_bounded_memory_and_time(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "bomb.gz"
    path.write_bytes(bomb())
    assert path.stat().st_size < 200_000
    read = {
        "topics": lambda: list(formats.read_topics(path, format="tsv")),
        "documents": lambda: list(formats.read_documents(path, format="tsv")),
        "run": lambda: trec_io.read_run(path),
        "qrels": lambda: trec_io.read_qrels(path),
    }[kind]
    started = time.monotonic()
    tracemalloc.start()
    try:
        messages = errors_of(read)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert messages == [f"{path}:1: line longer than the limit of 1,048,576 bytes"]
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # a fixed buffer, not the 100 MB
    assert time.monotonic() - started < 10


def test_it_names_the_long_line_among_short_ones(tmp_path: Path) -> None:
    data = b"1\tone\n2\ttwo\n3\t" + b"x" * 5000 + b"\n4\tfour\n"
    path = write(tmp_path, "t.tsv", data)
    with formats.limits(line_bytes=4096):
        assert errors_of(lambda: list(formats.read_topics(path))) == [
            f"{path}:3: line longer than the limit of 4,096 bytes"
        ]
    run = write(tmp_path, "r.txt", b"q Q0 a 1 1 t\nq Q0 b 2 1 " + b"t" * 5000 + b"\n")
    with formats.limits(line_bytes=4096), pytest.raises(formats.FormatError) as info:
        trec_io.read_run(run)
    assert [str(e) for e in info.value.errors] == [f"{run}:2: line longer than the limit of 4,096 bytes"]


def test_it_stops_at_the_decompressed_limit_without_calling_the_file_bad(tmp_path: Path) -> None:
    topics = write(tmp_path, "t.tsv.gz", b"".join(b"%d\tq\n" % i for i in range(300_000)), compress=True)
    run = write(tmp_path, "r.txt.gz", b"q Q0 d 1 1 t\n" * 300_000, compress=True)
    with formats.limits(total_bytes=1 << 20):
        with pytest.raises(formats.SizeLimitReached, match="more than 1,048,576 bytes"):
            list(formats.read_topics(topics))
        with pytest.raises(formats.SizeLimitReached):
            trec_io.read_run(run)
    assert len(list(formats.read_topics(topics))) == 300_000  # no limit outside the block


# ------------------------------------------------------------------------------ imports, the API


@pytest.fixture
def news(db: None) -> Collection:
    call_command("create_collection", "news")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    return Collection.objects.get(name="news")


def managing(collection: Collection, manager: Any) -> Any:
    """An API client of a manager of the collection."""
    collection.managers.add(manager)
    return client_for(manager)


def upload(client: Any, name: str, data: bytes, kind: str = "topics") -> Any:
    handle = io.BytesIO(data)
    handle.name = name
    return client.post("/api/collections/news/imports/", {"kind": kind, "file": handle}, format="multipart")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("t.tsv", b"301\tok\n302\tbad\x00query\n", "t.tsv:2: NUL byte at byte column 8"),
        ("t.jsonl", b'{"qid": "301", "query": "x\\u0000"}\n', "t.jsonl:1: NUL character (\\u0000)"),
    ],
)
def test_the_api_refuses_a_topics_upload_with_a_nul_with_400_and_stores_nothing(
    news: Collection, manager: Any, name: str, data: bytes, message: str
) -> None:
    response = upload(managing(news, manager), name, data)
    assert response.status_code == 400
    [error] = response.json()["file"]
    assert error.startswith(message)
    assert not Topic.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_the_import_command_names_the_line_of_a_nul(news: Collection, tmp_path: Path) -> None:
    path = write(tmp_path, "t.tsv", b"301\tok\n302\tbad\x00\n")
    with pytest.raises(CommandError, match=rf"{path}:2: NUL byte at byte column 8"):
        call_command("import_topics", "news", str(path))
    assert not Topic.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["topics", "documents", "run"])
def test_the_api_refuses_a_one_line_gzip_bomb_with_400_in_bounded_memory(
    news: Collection, manager: Any, kind: str
) -> None:
    client = managing(news, manager)
    documents = Document.objects.count()
    data = bomb()
    started = time.monotonic()
    tracemalloc.start()
    try:
        response = upload(client, f"bomb.{'txt' if kind == 'run' else 'tsv'}.gz", data, kind)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 400
    assert response.json()["file"] == [
        f"bomb.{'txt' if kind == 'run' else 'tsv'}.gz:1: line longer than the limit of 1,048,576 bytes"
    ]
    assert peak < 48 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # the file expands to 100 MB
    assert time.monotonic() - started < 15
    assert Document.objects.count() == documents and not Job.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_a_line_over_a_lowered_limit(news: Collection, manager: Any, settings: Any) -> None:
    settings.IMPORT_MAX_LINE_BYTES = 100
    response = upload(managing(news, manager), "t.tsv", b"301\tshort\n302\t" + b"q" * 200 + b"\n")
    assert response.status_code == 400
    assert response.json()["file"] == ["t.tsv:2: line longer than the limit of 100 bytes"]


@pytest.mark.django_db
def test_the_api_leaves_a_file_expanding_past_the_check_limit_to_its_job(
    news: Collection, manager: Any, settings: Any
) -> None:
    settings.IMPORT_CHECK_MAX_DECOMPRESSED_BYTES = 1 << 20
    # 4.5 MB of run lines, compressed to a few kB: more than the check may decompress.
    data = gzip.compress(b"x Q0 d01 1 1 t\n" * 300_000, compresslevel=9)
    assert len(data) < settings.IMPORT_CHECK_MAX_BYTES
    started = time.monotonic()
    response = upload(managing(news, manager), "many.txt.gz", data, "run")
    assert response.status_code == 202, response.content
    assert time.monotonic() - started < 10
    job = Job.objects.get()
    assert job.status == Job.Status.QUEUED
    # the job, in a worker, reads it whole (the limit is only the web request's)
    from pooling import errors as pooling_errors
    from pooling import imports

    with pytest.raises(pooling_errors.ImportFailed) as info:
        imports.import_file(kind="run", collection=news, path=job.upload.path, display_name="many.txt.gz")
    assert [str(e) for e in info.value.errors] == [
        "many.txt.gz:1: unknown topic 'x' (not in the collection; 300000 rows from here)"
    ]

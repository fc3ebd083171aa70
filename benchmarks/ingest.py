"""Benchmark: `manage.py import_run` into PostgreSQL against PostgreSQL's own COPY of the same rows.

A run of 5,000 topics × 1,000 documents (5 million lines, `qid Q0 docid rank score tag`, scores with 4
decimals so that some tie) over a collection of 100,000 documents is imported with `manage.py import_run`
in a subprocess (wall time, and its peak RSS from `os.wait4`). The topics and documents are imported
first, through the same services, and not timed. The anchor is the floor for this database: the same
rows, already resolved to ids and ranks (run_id, topic_id, document_id, rank, score) in a TSV file,
loaded with psycopg's COPY into a plain unindexed table. Each timed load starts on a quiet disk: the
files written so far are flushed (`os.sync`, else the kernel writes back the 300 MB of files just made
during the first import, and the import pays for it while the COPY, timed later, does not) and a
CHECKPOINT follows. The imports and the COPY alternate REPEATS (3) times and the best time of each is
reported (the figure needs a quiet machine; on a shared one a single run is noisy), with the largest
peak RSS. For reference, a 500,000-line slice (the first 500 topics) is imported into a fresh SQLite
database.

The same lines are then imported a second time with their topics interleaved (rank 1 of every topic,
then rank 2 of every topic, ...: no two consecutive lines share a topic), and the stored rows of the two
runs are compared (they must be identical). Each import is given against COPY; the last line is the
interleaved one's ratio.

The benchmark creates its own database `labeling_bench` (or BENCH_DB; dropped and recreated) on
postgres://postgres@127.0.0.1:5432, dropped again at the end unless --keep, and writes its files to a
temp dir, removed at the end. The last lines are `ratio import/COPY (sorted): X.XX` and `ratio import/COPY
(interleaved): X.XX` (target ≤ 1.25 each, issue 17); peak RSS must stay under 400 MB.

Usage: .venv/bin/python benchmarks/ingest.py [--small] [--topics N] [--repeats N] [--profile N] [--keep]
  --small      500 topics instead of 5,000 (and a 50,000-line SQLite slice)
  --repeats N  time each load N times, alternating, and keep the best (default 3)
  --profile N  also import the run in process under cProfile and print the N costliest functions
  --keep       keep the database labeling_bench afterwards (dropped by default)
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import (  # noqa: E402
    SERVER,
    SETTINGS_VARIABLES,
    child_env,
    drop_database,
    fresh_database,
    print_profile,
)

DATABASE = os.environ.get("BENCH_DB", "labeling_bench")  # BENCH_DB: another name, as pool.py takes
COLLECTION = "bench"
DOCUMENTS = 100_000
DEPTH = 1_000
MEMORY_LIMIT_MB = 400
TARGET = 1.25  # issue 17 (was 2.0)
REPEATS = 3


def recreate_database(*, create: bool = True) -> None:
    if create:
        fresh_database(DATABASE)
    else:
        drop_database(DATABASE)


def manage(env: dict[str, str], *args: str) -> tuple[float, str]:
    """Run a management command; (wall seconds, stdout)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", *args, "--skip-checks"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stdout


# Starts the command from a fresh, small interpreter and reports the command's own peak RSS. Linux counts
# in a child's ru_maxrss the memory of the process it was forked (or vforked) from, so a command started
# straight from this benchmark, once it holds a whole run file in memory (write_interleaved), would report
# this benchmark's peak, not its own (the 490 MB once put down to the interleaved import).
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\nPEAK_RSS_KB {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def manage_measured(env: dict[str, str], *args: str) -> tuple[float, int, str]:
    """Like `manage`, plus the peak RSS (kB) of this one command, measured by LAUNCHER (not
    RUSAGE_CHILDREN, which is the maximum over every child so far)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        started = time.perf_counter()
        command = [sys.executable, "-c", LAUNCHER, sys.executable, "manage.py", *args, "--skip-checks"]
        process = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=err)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        errors = err.read()
        if process.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed ({process.returncode}):\n{errors}")
        peak = re.search(r"PEAK_RSS_KB (\d+)", errors)
        return elapsed, int(peak.group(1)) if peak else 0, out.read()


def write_collection(tmp: Path, topics: int) -> tuple[Path, Path]:
    docs = tmp / "docs.tsv"
    with docs.open("w") as out:
        for i in range(DOCUMENTS):
            out.write(f"doc{i:06d}\tdocument {i}\tbody of document {i}\n")
    queries = tmp / "topics.tsv"
    with queries.open("w") as out:
        for t in range(topics):
            out.write(f"{t + 1}\tquery {t + 1}\n")
    return docs, queries


def write_run(
    tmp: Path,
    topics: int,
    *,
    topic_ids: dict[str, int],
    document_ids: dict[str, int],
    run_id: int,
    slice_topics: int,
) -> tuple[Path, Path, Path]:
    """The run file, its first `slice_topics` topics (for SQLite), and the COPY file of ids in trec order."""
    rng = random.Random(20240601)
    run_path, slice_path, copy_path = tmp / "bench.txt", tmp / "slice.txt", tmp / "copy.tsv"
    docids = [f"doc{i:06d}" for i in range(DOCUMENTS)]
    with run_path.open("w") as run, slice_path.open("w") as part, copy_path.open("w") as floor:
        for t in range(topics):
            qid = str(t + 1)
            chosen = rng.sample(docids, DEPTH)
            scores = sorted((f"{rng.uniform(0, 50):.4f}" for _ in range(DEPTH)), key=float, reverse=True)
            lines = "".join(
                f"{qid} Q0 {docid} {rank} {score} bench\n"
                for rank, (docid, score) in enumerate(zip(chosen, scores, strict=True), 1)
            )
            run.write(lines)
            if t < slice_topics:
                part.write(lines)
            # trec_eval order: score descending, ties by docid descending
            ordered = sorted(zip(map(float, scores), chosen, strict=True), reverse=True)
            topic_id = topic_ids[qid]
            floor.write(
                "".join(
                    f"{run_id}\t{topic_id}\t{document_ids[docid]}\t{rank}\t{score!r}\n"
                    for rank, (score, docid) in enumerate(ordered, 1)
                )
            )
    return run_path, slice_path, copy_path


def write_interleaved(run_path: Path, topics: int) -> Path:
    """The run's lines in round-robin order of topics: line r of every topic, for r = 1, 2, ..."""
    import numpy as np

    data = run_path.read_bytes()
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    starts = np.concatenate([[0], ends[:-1]])
    order = np.arange(len(ends)).reshape(topics, DEPTH).T.reshape(-1)
    path = run_path.with_name("interleaved.txt")
    with path.open("wb") as out:
        for block in np.array_split(order, max(1, len(order) // 100_000)):
            out.write(
                b"".join(data[s:e] for s, e in zip(starts[block].tolist(), ends[block].tolist(), strict=True))
            )
    return path


def same_rows(first: int, second: int) -> bool:
    """Whether two runs stored exactly the same (topic, rank, document, score) rows."""
    from django.db import connection

    query = "SELECT topic_id, rank, document_id, score FROM pooling_runrow WHERE run_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) FROM ({query} EXCEPT {query}) a)"
            f" + (SELECT count(*) FROM ({query} EXCEPT {query}) b)",
            [first, second, second, first],
        )
        (differences,) = cursor.fetchone()
    return differences == 0


def quiesce() -> None:
    """Start a timed load on a quiet disk: the page cache's dirty pages written back (the files this
    benchmark has just written), then a CHECKPOINT (the database's)."""
    import psycopg

    os.sync()
    with psycopg.connect(f"{SERVER}/{DATABASE}", autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def import_measured(env: dict[str, str], run_path: Path, name: str) -> tuple[float, int, float, int, int]:
    """`manage.py import_run` of `run_path` as run `name`, after `quiesce`: (wall seconds, peak RSS kB,
    the seconds the service reports, the run's id, its stored rows)."""
    from django.db import connection

    connection.close()
    quiesce()
    seconds, peak_kb, out = manage_measured(env, "import_run", COLLECTION, str(run_path), "--name", name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, num_rows FROM pooling_run WHERE name = %s", [name])
        run_id, num_rows = cursor.fetchone()
    connection.close()
    return seconds, peak_kb, service_seconds(out), run_id, num_rows


def copy_floor(copy_path: Path) -> float:
    import psycopg

    with psycopg.connect(f"{SERVER}/{DATABASE}") as conn:
        conn.execute("DROP TABLE IF EXISTS copy_floor")
        conn.execute(
            "CREATE TABLE copy_floor (run_id bigint, topic_id bigint, document_id bigint, rank int, "
            "score double precision)"
        )
        conn.commit()
        quiesce()
        started = time.perf_counter()
        with (
            conn.cursor() as cursor,
            cursor.copy("COPY copy_floor (run_id, topic_id, document_id, rank, score) FROM STDIN") as copy,
            copy_path.open("rb") as source,
        ):
            while chunk := source.read(1 << 20):
                copy.write(chunk)
        conn.commit()
        elapsed = time.perf_counter() - started
        (count,) = conn.execute("SELECT count(*) FROM copy_floor").fetchone()  # type: ignore[misc]  # count(*): one row
        conn.execute("DROP TABLE copy_floor")
        conn.commit()
    return elapsed if count else float("nan")


def sqlite_reference(tmp: Path, docs: Path, queries: Path, slice_path: Path) -> tuple[int, float, float]:
    """(rows, wall seconds of the command, seconds in the service) for the slice on a fresh SQLite file."""
    data_dir = tmp / "sqlite"
    data_dir.mkdir()
    env = child_env(f"sqlite:///{data_dir / 'db.sqlite3'}", data_dir)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "create_collection", COLLECTION)
    manage(env, "import_topics", COLLECTION, str(queries))
    manage(env, "import_documents", COLLECTION, str(docs))
    elapsed, out = manage(env, "import_run", COLLECTION, str(slice_path), "--name", "slice")
    rows = int(re.match(r"run: (\d+) rows", out).group(1))  # type: ignore[union-attr]  # the command prints it
    return rows, elapsed, service_seconds(out)


def service_seconds(summary: str) -> float:
    """The seconds the import service reports on its summary line (`run: N rows, T topics, S s`)."""
    return float(re.search(r", ([\d.]+) s$", summary.strip()).group(1))  # type: ignore[union-attr]  # the command prints it


def profile_in_process(run_path: Path, limit: int) -> None:
    from pooling import imports
    from pooling.models import Collection, Run

    collection = Collection.objects.get(name=COLLECTION)
    Run.objects.filter(name="profiled").delete()
    profiler = cProfile.Profile(time.process_time)  # CPU time: wall time on a shared machine is noise
    profiler.enable()
    summary = imports.import_run(collection=collection, path=run_path, name="profiled")
    profiler.disable()
    print(f"profile ({summary.rows:,} rows in process, {summary.seconds:.1f} s under cProfile):")
    print_profile(profiler, limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="500 topics instead of 5,000")
    parser.add_argument("--topics", type=int, help="number of topics (overrides --small)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="best of N timings (default 3)")
    parser.add_argument("--profile", type=int, metavar="N", help="print the N costliest functions")
    parser.add_argument("--keep", action="store_true", help=f"keep the database {DATABASE} afterwards")
    args = parser.parse_args()
    topics = args.topics or (500 if args.small else 5_000)
    slice_topics = max(1, min(500, topics // 10))

    tmp = Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    database_url = f"{SERVER}/{DATABASE}"
    env = child_env(database_url, tmp)
    for key, value in env.items():
        if key in SETTINGS_VARIABLES or key in ("DJANGO_SETTINGS_MODULE", "DATA_DIR", "LOG_LEVEL"):
            os.environ[key] = value
    for key in SETTINGS_VARIABLES:
        if key not in env:
            os.environ.pop(key, None)
    sys.path.insert(0, str(ROOT))
    try:
        recreate_database()
        import django

        django.setup()
        from django.core.management import call_command

        from pooling import imports
        from pooling.models import Document, Topic

        call_command("migrate", "--noinput", verbosity=0)
        collection = imports.create_collection(name=COLLECTION)
        docs, queries = write_collection(tmp, topics)
        imports.import_topics(collection=collection, path=queries)
        imports.import_documents(collection=collection, path=docs)
        topic_ids = dict(Topic.objects.filter(collection=collection).values_list("qid", "id"))
        document_ids = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
        # The import creates run id 1 in this fresh database; the floor file uses the same id.
        run_path, slice_path, copy_path = write_run(
            tmp, topics, topic_ids=topic_ids, document_ids=document_ids, run_id=1, slice_topics=slice_topics
        )
        lines = topics * DEPTH
        size_mb = run_path.stat().st_size / 1e6
        print(f"run: {topics:,} topics × {DEPTH:,} documents = {lines:,} lines ({size_mb:.0f} MB); "
              f"collection of {DOCUMENTS:,} documents")  # fmt: skip

        from django.db import connection

        from pooling.deletion import delete_run
        from pooling.models import Run

        interleaved_path = write_interleaved(run_path, topics)
        # The machine may be shared: each load's figures are those of its fastest repeat (wall and service
        # seconds from the same import), the loads alternating; its peak RSS the largest. The first
        # repeat's runs are kept (run id 1 is the one the floor file names; the two are compared), the
        # later ones deleted once their rows are counted.
        timings: dict[str, list[tuple[float, float, int]]] = {"sorted": [], "interleaved": []}
        copies: list[float] = []
        for repeat in range(args.repeats):
            ids = []
            for key, path in (("sorted", run_path), ("interleaved", interleaved_path)):
                name = key + (f"-{repeat + 1}" if repeat else "")
                seconds, peak_kb, service_s, run_id, num_rows = import_measured(env, path, name)
                if num_rows != lines or (name == "sorted" and run_id != 1):
                    raise SystemExit(f"unexpected run after import: id {run_id}, {num_rows} rows")
                timings[key].append((seconds, service_s, peak_kb))
                ids.append(run_id)
            if repeat == 0:
                identical = same_rows(*ids)
            else:
                for run in Run.objects.filter(id__in=ids):
                    delete_run(run=run)
            connection.close()
            copies.append(copy_floor(copy_path))
        (import_s, service_s, _), (mixed_s, mixed_service_s, _) = (min(timings[key]) for key in timings)
        peak_kb, mixed_peak_kb = (max(kb for *_, kb in timings[key]) for key in timings)
        copy_s = min(copies)
        sqlite_rows, sqlite_s, sqlite_service_s = sqlite_reference(tmp, docs, queries, slice_path)

        if args.profile:
            profile_in_process(slice_path, args.profile)

        peak_mb, mixed_peak_mb = peak_kb / 1024, mixed_peak_kb / 1024
        print(f"best of {args.repeats}, the loads alternating:")
        print(f"import_run (PostgreSQL): {import_s:7.2f} s wall ({service_s:.2f} s in the service), "
              f"{lines / import_s:,.0f} rows/s")  # fmt: skip
        print(f"import_run, topics interleaved: {mixed_s:7.2f} s wall ({mixed_service_s:.2f} s in the "
              f"service), {lines / mixed_s:,.0f} rows/s; rows identical to the sorted run: "
              f"{'yes' if identical else 'NO'}")  # fmt: skip
        print(f"COPY floor (PostgreSQL): {copy_s:7.2f} s, {lines / copy_s:,.0f} rows/s")
        over = "" if max(peak_mb, mixed_peak_mb) < MEMORY_LIMIT_MB else "  OVER THE LIMIT"
        print(f"import_run peak RSS: {peak_mb:.0f} MB sorted, {mixed_peak_mb:.0f} MB interleaved "
              f"(limit {MEMORY_LIMIT_MB} MB){over}")  # fmt: skip
        sqlite_rate = sqlite_rows / sqlite_service_s
        print(f"import_run (SQLite, reference): {sqlite_rows:,} rows in {sqlite_s:.2f} s wall "
              f"({sqlite_service_s:.2f} s in the service), {sqlite_rate:,.0f} rows/s")  # fmt: skip
        ratio, mixed_ratio = import_s / copy_s, mixed_s / copy_s
        met = ratio <= TARGET and mixed_ratio <= TARGET and identical
        print(f"interleaved/sorted: {mixed_s / import_s:.2f} (target ≤ 2.0)")
        print(f"target ≤ {TARGET}: {'met' if met else 'MISSED'}")
        print(f"ratio import/COPY (sorted): {ratio:.2f}")
        print(f"ratio import/COPY (interleaved): {mixed_ratio:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not args.keep:
            from django.db import connections

            connections.close_all()
            recreate_database(create=False)


if __name__ == "__main__":
    main()

"""Benchmark: `manage.py release_qrels` on PostgreSQL against PostgreSQL's own COPY of the same content.

Data (seeded, inserted with COPY through psycopg, not timed): 5,000 topics × 100 pool items = 500,000
items, two raters, two judgements per item = 1,000,000 judgements (about 1% unrateable, some facets and
notes with non-ASCII text, seconds as arbitrary doubles, timestamps with microseconds, 0.1% of the items
adjudicated), plus one run retrieving each topic's 100 items and 10 documents that were never pooled (so
the manifest's unpooled count has work to do); then VACUUM ANALYZE. A second pool over the first half of
the topics (250,000 items, 500,000 judgements) shows whether the release's memory grows with the number of
judgements; a third (1,000 topics) is the one --profile profiles. SECRET_KEY is fixed (pseudonyms depend
on it), so the printed SHA-256 of each file compares across runs and code versions.

Timed:
- `manage.py release_qrels POOL -o DIR` (qrels.txt, judgements.jsonl, manifest.json) in a subprocess:
  wall time and peak RSS (RUSAGE_CHILDREN of a small launcher process, see `LAUNCHER`: the largest of the
  command and the second process it forks), at full and half size. Both sizes are above
  `release_halves.MIN_ROWS`, so the command writes each release in two processes; RELEASE_PROCESSES=1 in
  the environment measures one;
- the floor: PostgreSQL's `COPY (…) TO STDOUT` of the 500,000 aggregated (qid, docid, min(grade)) rows and
  of the 1,000,000 judgement rows (qid, docid, rater, grade, unrateable, facets, note, seconds, created,
  updated, imported), both in the release's order (qid, docid in byte order), read through psycopg's copy
  and written to files, both together;
- release and COPY alternate, REPEATS (3) times: the best time of each is reported, and the largest RSS
  (the figure needs a quiet machine: on a shared one each run is noisy, hence the min of 3);
- `judgements.agreement.cohen_kappa(a, b, labels=[0, 1, 2, 3])` against
  `sklearn.metrics.cohen_kappa_score` on the pool's graded pairs (the items both raters graded, about
  492,000 of the 500,000; best of 3, after a warm-up); the agreement command and the release manifest
  must give the same kappa;
- `manage.py agreement POOL --format json` end to end (its default bootstrap of 1,000 resamples).

The database `labeling_release_bench` (or BENCH_DB) on postgres://postgres@127.0.0.1:5432 is dropped and
recreated, and dropped at the end (unless --keep); files go to a temp dir, removed at the end. The last line
is `ratio release/COPY: X.XX` (target ≤ 1.5).

Usage: .venv/bin/python benchmarks/release.py [--small] [--keep] [--reuse] [--profile N]
  --small      200 topics (20,000 items) instead of 5,000
  --keep       keep the database afterwards; --reuse uses a kept one instead of loading it again
  --profile N  also run create_release in process under cProfile on a 100,000-item pool (1,000 topics;
               with --small, the whole pool) and print the N costliest functions
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import (  # noqa: E402
    SERVER,
    SETTINGS_VARIABLES,
    best_of,
    child_env,
    drop_database,
    fresh_database,
    print_profile,
)

DATABASE = os.environ.get("BENCH_DB", "labeling_release_bench")  # BENCH_DB: another name, as ingest.py takes
ITEMS_PER_TOPIC = 100
UNPOOLED_PER_TOPIC = 10
PROFILE_TOPICS = 1_000
TARGET = 1.5
REPEATS = 3
KAPPA_TARGET = 1.5
LABELS = [0, 1, 2, 3]
SEED = 20240601
# Pseudonyms depend on it: fixed, so the files' hashes compare across runs.
SECRET_KEY = "release-benchmark-secret-key-not-for-production-0123456789abcdef"
FILES = ("qrels.txt", "judgements.jsonl", "manifest.json")


def database_exists() -> bool:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone()
    return row is not None


# A child's ru_maxrss counts the memory of the process it was forked from (Linux keeps the high-water mark
# across exec), so a command started straight from this big process would report at least this process's
# size. A small launcher starts the command instead and reports its RUSAGE_CHILDREN peak.
LAUNCHER = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:])
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write(f"\\nlaunched {elapsed!r} {peak}\\n")
sys.exit(code)
"""


def manage_measured(env: dict[str, str], *args: str) -> tuple[float, int, str]:
    """Run a management command in a subprocess: (its wall seconds, its peak RSS in kB, its stdout)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        command = [sys.executable, "manage.py", *args, "--skip-checks"]
        code = subprocess.call(
            [sys.executable, "-c", LAUNCHER, *command], cwd=ROOT, env=env, stdout=out, stderr=err
        )
        out.seek(0)
        err.seek(0)
        errors = err.read()
        if code != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{errors}")
        elapsed, peak_kb = errors.rsplit("launched ", 1)[1].split()
        return float(elapsed), int(peak_kb), out.read()


# ------------------------------------------------------------------------------------------------ data


def _timestamp(seconds: float) -> str:
    """A timestamptz literal with microseconds, `seconds` after 2024-03-01 UTC."""
    from datetime import UTC, datetime, timedelta

    base = datetime(2024, 3, 1, tzinfo=UTC)
    return (base + timedelta(seconds=seconds)).isoformat()


def load(topics: int) -> dict[str, Any]:
    """Fill the (migrated, empty) database through COPY; returns the pools' names and the graded pairs
    of the full pool as two arrays."""
    import psycopg
    from django.contrib.auth.models import User
    from django.db import connection

    from judgements import membership, rubrics
    from pooling.models import Collection, Pool, Run

    rng = np.random.default_rng(SEED)
    collection = Collection.objects.create(name="bench")
    alice = User.objects.create_user("alice", password="x")
    bob = User.objects.create_user("bob", password="x")
    boss = User.objects.create_user("boss", password="x")
    rubric = rubrics.default_rubric()
    run = Run.objects.create(collection=collection, name="bm25", num_topics=topics)
    pools = {
        "full": Pool.objects.create(name="bench-full", collection=collection, judgements_per_item=2),
        "half": Pool.objects.create(name="bench-half", collection=collection, judgements_per_item=2),
        "profile": Pool.objects.create(name="bench-profile", collection=collection, judgements_per_item=2),
    }
    for pool in pools.values():
        membership.setup_judging(pool=pool, rubric=rubric, raters=[alice, bob])
    sizes = {"full": topics, "half": topics // 2, "profile": min(PROFILE_TOPICS, topics)}
    connection.close()

    per_topic = ITEMS_PER_TOPIC + UNPOOLED_PER_TOPIC
    n_docs = topics * per_topic
    # Docids in an order unrelated to insertion order, so the byte-order sort has work to do.
    doc_number = rng.permutation(n_docs)
    facets_pool = ['{"freshness": "recent"}', '{"authority": "hoch – ü", "freshness": "stale"}']
    notes_pool = ['näh — "quoted", with a \\ backslash', "broken page\tand a tab", "ok ✓"]
    pairs_a: list[np.ndarray] = []
    pairs_b: list[np.ndarray] = []
    with psycopg.connect(f"{SERVER}/{DATABASE}") as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY pooling_topic (id, collection_id, qid, query, description, narrative, segments) FROM STDIN"
        ) as copy:
            for t in range(topics):
                segment = '["head"]' if t % 3 else '["tail", "navigational"]'
                copy.write_row((t + 1, collection.pk, str(t + 1), f"query {t + 1}", "", "", segment))
        with cur.copy(
            "COPY pooling_document (id, collection_id, docid, title, text, url, metadata) FROM STDIN"
        ) as copy:
            for d in range(n_docs):
                copy.write_row(
                    (d + 1, collection.pk, f"doc-{doc_number[d]:07d}", f"title {d}", f"text {d}", "", "{}")
                )
        with cur.copy("COPY pooling_runrow (run_id, topic_id, document_id, rank, score) FROM STDIN") as copy:
            for d in range(n_docs):
                rank = d % per_topic + 1
                copy.write_row((run.pk, d // per_topic + 1, d + 1, rank, 100.0 - rank))
        item_id = 0
        judgement_id = 0
        adjudications: list[tuple[int, int | None, bool]] = []
        for name in ("full", "half", "profile"):
            pool = pools[name]
            n_items = sizes[name] * ITEMS_PER_TOPIC
            first_item = item_id + 1
            grade_a = rng.choice(4, n_items, p=[0.45, 0.25, 0.18, 0.12])
            grade_b = np.where(rng.random(n_items) < 0.6, grade_a, rng.choice(4, n_items))
            unrateable_a = rng.random(n_items) < 0.01
            unrateable_b = np.where(unrateable_a, rng.random(n_items) < 0.5, rng.random(n_items) < 0.005)
            if name == "full":
                graded = ~unrateable_a & ~unrateable_b
                pairs_a.append(grade_a[graded])
                pairs_b.append(grade_b[graded])
            with cur.copy(
                "COPY pooling_poolitem (id, pool_id, topic_id, document_id, blind_key, required_judgements,"
                " num_judgements, active_leases, gold, selected, selected_order, added_at) FROM STDIN"
            ) as copy:
                blind = rng.integers(0, 2**62, n_items)
                for i in range(n_items):
                    t, k = divmod(i, ITEMS_PER_TOPIC)
                    copy.write_row((first_item + i, pool.pk, t + 1, t * per_topic + k + 1, int(blind[i]), 2,
                                    2, 0, False, True, None, "2024-03-01T00:00:00+00:00"))  # fmt: skip
            item_id += n_items
            with cur.copy(
                "COPY judgements_judgement (id, item_id, rater_id, rubric_id, grade, unrateable, facets,"
                " note, seconds, imported, created_at, updated_at) FROM STDIN"
            ) as copy:
                kinds = rng.random((n_items, 2, 3))
                seconds = rng.gamma(2.0, 12.0, (n_items, 2))
                starts = rng.uniform(0, 90 * 86400, (n_items, 2))
                edits = rng.uniform(0, 3600, (n_items, 2)) * (rng.random((n_items, 2)) < 0.1)
                for i in range(n_items):
                    for r, (rater, grade, unrateable) in enumerate(
                        ((alice, grade_a[i], unrateable_a[i]), (bob, grade_b[i], unrateable_b[i]))
                    ):
                        judgement_id += 1
                        kind = kinds[i, r]
                        copy.write_row((
                            judgement_id, first_item + i, rater.pk, rubric.pk,
                            None if unrateable else int(grade), bool(unrateable),
                            facets_pool[int(kind[0] * 20)] if kind[0] < 0.1 else "{}",
                            notes_pool[int(kind[1] * 60)] if kind[1] < 0.05 else "",
                            0.0 if kind[2] < 0.02 else float(seconds[i, r]),
                            bool(kind[2] > 0.95),
                            _timestamp(float(starts[i, r])),
                            _timestamp(float(starts[i, r] + edits[i, r])),
                        ))  # fmt: skip
            for i in rng.choice(n_items, n_items // 1000, replace=False).tolist():
                unrateable = bool(rng.random() < 0.1)
                adjudications.append(
                    (first_item + i, None if unrateable else int(rng.integers(4)), unrateable)
                )
        with cur.copy(
            "COPY judgements_adjudication (item_id, grade, unrateable, note, adjudicator_id, decided_at) "
            "FROM STDIN"
        ) as copy:
            for n, (item, grade, unrateable) in enumerate(adjudications):
                copy.write_row((item, grade, unrateable, "decided", boss.pk, _timestamp(100 * 86400 + n)))
        for table, count in (("pooling_topic", topics), ("pooling_document", n_docs),
                             ("pooling_poolitem", item_id),
                             ("judgements_judgement", judgement_id)):  # fmt: skip
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {count})")
        cur.execute("UPDATE pooling_run SET num_rows = %s WHERE id = %s", [n_docs, run.pk])
        conn.commit()
    analyze()
    return {
        "pools": {name: pools[name].name for name in pools},
        "sizes": {name: sizes[name] * ITEMS_PER_TOPIC for name in sizes},
        "pairs": (np.concatenate(pairs_a), np.concatenate(pairs_b)),
    }


def analyze() -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/{DATABASE}", autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def graded_pairs(pool_name: str) -> tuple[np.ndarray, np.ndarray]:
    """The (rater a, rater b) grades of every item of the pool that both graded (from the database)."""
    import psycopg

    with psycopg.connect(f"{SERVER}/{DATABASE}") as conn:
        rows = conn.execute(
            """SELECT a.grade, b.grade FROM judgements_judgement a
               JOIN judgements_judgement b ON b.item_id = a.item_id AND b.rater_id > a.rater_id
               JOIN pooling_poolitem i ON i.id = a.item_id
               JOIN pooling_pool p ON p.id = i.pool_id
               WHERE p.name = %s AND a.grade IS NOT NULL AND b.grade IS NOT NULL ORDER BY a.item_id""",
            [pool_name],
        ).fetchall()
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].copy()


# ----------------------------------------------------------------------------------------------- floor

FLOOR_QRELS = """
COPY (SELECT t.qid, d.docid, min(j.grade)
      FROM pooling_poolitem i
      JOIN pooling_topic t ON t.id = i.topic_id
      JOIN pooling_document d ON d.id = i.document_id
      LEFT JOIN judgements_judgement j ON j.item_id = i.id
      WHERE i.pool_id = {pool} AND i.selected
      GROUP BY i.id, t.qid, d.docid
      ORDER BY t.qid COLLATE "C", d.docid COLLATE "C") TO STDOUT
"""
FLOOR_JUDGEMENTS = """
COPY (SELECT t.qid, d.docid, j.rater_id, j.grade, j.unrateable, j.facets, j.note, j.seconds,
             j.created_at, j.updated_at, j.imported
      FROM judgements_judgement j
      JOIN pooling_poolitem i ON i.id = j.item_id
      JOIN pooling_topic t ON t.id = i.topic_id
      JOIN pooling_document d ON d.id = i.document_id
      WHERE i.pool_id = {pool} AND i.selected
      ORDER BY t.qid COLLATE "C", d.docid COLLATE "C", j.rater_id) TO STDOUT
"""


def copy_floor(pool_name: str, out_dir: Path) -> tuple[float, dict[str, int]]:
    """Seconds for both COPYs together (connect included), and the lines each wrote (counted after)."""
    import psycopg

    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with psycopg.connect(f"{SERVER}/{DATABASE}") as conn, conn.cursor() as cur:
        (pool_id,) = cur.execute("SELECT id FROM pooling_pool WHERE name = %s", [pool_name]).fetchone()  # type: ignore[misc]  # the pool exists: one row
        for name, sql in (("qrels.tsv", FLOOR_QRELS), ("judgements.tsv", FLOOR_JUDGEMENTS)):
            with open(out_dir / name, "wb") as out, cur.copy(sql.format(pool=int(pool_id))) as copy:
                for block in copy:
                    out.write(block)
    elapsed = time.perf_counter() - started
    return elapsed, {
        name: (out_dir / name).read_bytes().count(b"\n") for name in ("qrels.tsv", "judgements.tsv")
    }


# ------------------------------------------------------------------------------------------- agreement


def kappa_timings(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    from sklearn.metrics import cohen_kappa_score

    from judgements.agreement import cohen_kappa

    ours_t, ours = best_of(lambda: cohen_kappa(a, b, labels=LABELS), 3)
    ref_t, ref = best_of(lambda: cohen_kappa_score(a, b, labels=LABELS), 3)
    if ours is None or abs(ours - ref) > 1e-12:
        raise SystemExit(f"MISMATCH: cohen_kappa {ours!r}, sklearn {ref!r}")
    return ours_t, ref_t, ours


# ---------------------------------------------------------------------------------------------- helpers


def profile_in_process(pool_name: str, limit: int) -> None:
    from judgements import releases
    from pooling.models import Pool

    pool = Pool.objects.get(name=pool_name)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    releases.create_release(pool=pool)
    profiler.disable()
    elapsed = time.perf_counter() - started
    items = pool.items.count()
    print(
        f"profile: create_release of {pool_name} ({items:,} items) in process, {elapsed:.1f} s under cProfile"
    )
    print_profile(profiler, limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="200 topics (20,000 items) instead of 5,000")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="use a kept database instead of loading one")
    parser.add_argument("--profile", type=int, metavar="N", help="print the N costliest functions")
    args = parser.parse_args()
    topics = 200 if args.small else 5_000

    tmp = Path(tempfile.mkdtemp(prefix="release-bench-"))
    database_url = f"{SERVER}/{DATABASE}"
    env = child_env(database_url, tmp, SECRET_KEY=SECRET_KEY)
    for key in SETTINGS_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="labeling.settings", DATABASE_URL=database_url, DATA_DIR=str(tmp),
        LOG_LEVEL="ERROR", SECRET_KEY=SECRET_KEY,
    )  # fmt: skip
    sys.path.insert(0, str(ROOT))
    reuse = args.reuse and database_exists()
    try:
        if not reuse:
            fresh_database(DATABASE)
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from judgements.release_manifest import sha256_of
        from pooling.models import Pool

        if not reuse:
            call_command("migrate", "--noinput", verbosity=0)
            started = time.perf_counter()
            info = load(topics)
            print(f"loaded in {time.perf_counter() - started:.1f} s (not timed)")
        names = {"full": "bench-full", "half": "bench-half", "profile": "bench-profile"}
        sizes = {key: Pool.objects.get(name=name).items.count() for key, name in names.items()}
        connection.close()
        a, b = info["pairs"] if not reuse else graded_pairs(names["full"])
        judgements_full = 2 * sizes["full"]
        print(f"pool: {sizes['full']:,} items, {judgements_full:,} judgements (2 raters), "
              f"{a.size:,} graded pairs; half pool: {sizes['half']:,} items")  # fmt: skip

        # The machine may be shared: each timing is the best of REPEATS, release and COPY alternating.
        figures: dict[str, tuple[float, int]] = {}
        hashes: dict[str, str] = {}
        copy_s = float("inf")
        for _ in range(REPEATS):
            for key in ("half", "full"):
                out_dir = tmp / f"out-{key}"
                seconds, peak_kb, _out = manage_measured(env, "release_qrels", names[key], "-o", str(out_dir))
                best_s, most_kb = figures.get(key, (float("inf"), 0))
                figures[key] = (min(best_s, seconds), max(most_kb, peak_kb))
                if key == "full":
                    run_hashes = {name: sha256_of(out_dir / name) for name in FILES}
                    if hashes and run_hashes != hashes:
                        raise SystemExit("two releases of the same data differ")
                    hashes = run_hashes
                    manifest = json.loads((out_dir / "manifest.json").read_text())
                    jsonl_lines = (out_dir / "judgements.jsonl").read_bytes().count(b"\n")
                    qrels_lines = (out_dir / "qrels.txt").read_bytes().count(b"\n")
                    if jsonl_lines != judgements_full or qrels_lines != sizes["full"]:
                        raise SystemExit(f"unexpected release: {qrels_lines} qrels, {jsonl_lines} judgements")
                shutil.rmtree(out_dir)
                shutil.rmtree(tmp / "media", ignore_errors=True)
            seconds, copy_lines = copy_floor(names["full"], tmp / "floor")
            copy_s = min(copy_s, seconds)
            if copy_lines != {"qrels.tsv": sizes["full"], "judgements.tsv": judgements_full}:
                raise SystemExit(f"unexpected COPY output: {copy_lines}")
            shutil.rmtree(tmp / "floor")

        ours_t, ref_t, kappa = kappa_timings(a, b)
        agreement_s, agreement_kb, agreement_out = manage_measured(
            env, "agreement", names["full"], "--format", "json"
        )
        summary = json.loads(agreement_out)
        if summary["n_pairs"] != a.size or abs(summary["cohen_kappa"] - kappa) > 1e-12:
            raise SystemExit(
                f"agreement command disagrees: {summary['n_pairs']} pairs, κ {summary['cohen_kappa']}"
            )
        if (
            manifest["agreement"]["pairs"] != a.size
            or abs(manifest["agreement"]["cohen_kappa"]["unweighted"] - kappa) > 1e-12
        ):
            raise SystemExit("the release manifest's kappa disagrees with sklearn")

        if args.profile:
            profile_in_process(names["profile"] if not args.small else names["full"], args.profile)

        release_s, release_kb = figures["full"]
        half_s, half_kb = figures["half"]
        for name in FILES:
            print(f"sha256 {name}: {hashes[name]}")
        print(f"release_qrels ({sizes['half']:,} items, {sizes['half'] * 2:,} judgements): {half_s:7.2f} s, "
              f"peak RSS {half_kb / 1024:.0f} MB")  # fmt: skip
        print(f"release_qrels ({sizes['full']:,} items, {judgements_full:,} judgements): {release_s:7.2f} s, "
              f"peak RSS {release_kb / 1024:.0f} MB")  # fmt: skip
        print(f"peak RSS full/half: {release_kb / half_kb:.2f} (1.00 = flat in the number of judgements)")
        print(f"COPY floor (qrels + judgements rows, same order): {copy_s:7.2f} s")
        print(f"cohen_kappa on {a.size:,} pairs: ours {ours_t * 1e3:.2f} ms, sklearn {ref_t * 1e3:.2f} ms, "
              f"ratio {ours_t / ref_t:.2f} (target ≤ {KAPPA_TARGET}; κ = {kappa:.6f})")  # fmt: skip
        print(f"agreement command (--format json, bootstrap 1000): {agreement_s:7.2f} s, "
              f"peak RSS {agreement_kb / 1024:.0f} MB")  # fmt: skip
        ratio = release_s / copy_s
        print(f"target ≤ {TARGET}: {'met' if ratio <= TARGET else 'MISSED'}")
        print(f"ratio release/COPY: {ratio:.2f}")
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(DATABASE)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

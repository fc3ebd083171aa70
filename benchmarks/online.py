"""Benchmark: a click log end to end (import + propensity estimation + IPS labels) against a plain numpy
pass over the same file.

A log of N result pages (10 positions each) is simulated with `online.simulate` (PBM users, θ of issue 14,
RandTop-10 interventions, 1,000 queries × 10 documents, grades 0–4) and written in the impressions JSONL
format. Ours, in a subprocess on PostgreSQL: `import_click_log` (streaming, atomic: counts table and
impression archive), `estimate_propensity(method="randtop")`, `derive_click_labels(estimator="ips")`
(labels stored). The topics and documents are created first and not timed. The anchor, in a subprocess:
a plain Python/numpy pass that reads the same file line by line with `json.loads` into arrays (a chunk at
a time), computes the CTR per position, θ_k = CTR_k/CTR_1 and the same IPS sums per (query, document);
its result is checked equal to ours. Peak RSS of each subprocess: its VmHWM (`peak_rss_mb`).

Ours runs at two sizes (N/10 and N) to show memory is flat; the ratio ours/numpy is at size N and is the
last line (target ≤ 3.0).

Database: BENCH_DB (default labeling_clicks_bench) on postgres://postgres@127.0.0.1:5432, dropped and
recreated, dropped at the end.

Usage: .venv/bin/python benchmarks/online.py [--small] [--pages N]
  --small   N = 200,000 instead of 10,000,000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._common import SERVER, drop_database, fresh_database  # noqa: E402

DATABASE = os.environ.get("BENCH_DB", "labeling_clicks_bench")
QUERIES, DOCS, K = 1000, 10, 10
TARGET = 3.0


def generate(path: Path, pages: int, seed: int = 0) -> None:
    from online.simulate import gamma_from_grades, jsonl_lines, simulate

    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 5, (QUERIES, DOCS))
    ranking = np.argsort(-grades, axis=1)
    qids = [f"q{q}" for q in range(QUERIES)]
    docids = [[f"d{q}-{d}" for d in range(DOCS)] for q in range(QUERIES)]
    with open(path, "w") as out:
        done = 0
        while done < pages:
            n = min(200_000, pages - done)
            sim = simulate(
                rng, rankings=[ranking], gamma=gamma_from_grades(grades), sessions=n, intervention="randtop"
            )
            out.write("\n".join(jsonl_lines(sim, qids=qids, docids=docids, loggers=["prod"], start=done)))
            out.write("\n")
            done += n


def child_ours(path: str) -> dict[str, float]:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from online import services
    from online.clicklogs import import_click_log
    from pooling.models import Collection, Document, Topic

    collection = Collection.objects.create(name=f"bench{int(time.time())}")
    Topic.objects.bulk_create(
        Topic(collection=collection, qid=f"q{q}", query=f"query {q}") for q in range(QUERIES)
    )
    Document.objects.bulk_create(
        Document(collection=collection, docid=f"d{q}-{d}") for q in range(QUERIES) for d in range(DOCS)
    )
    started, cpu = time.perf_counter(), time.process_time()
    log = import_click_log(collection=collection, name="bench", format="jsonl", paths=[path])
    imported = time.perf_counter()
    estimate = services.estimate_propensity(log=log, method="randtop", params={"n": K})
    estimated = time.perf_counter()
    labels = services.derive_click_labels(log=log, estimator="ips", propensity_estimate=estimate)
    done = time.perf_counter()
    total = sum(labels.labels.values_list("score", flat=True))
    return {
        "seconds": done - started,
        "cpu": time.process_time() - cpu,
        "import": imported - started,
        "propensity": estimated - imported,
        "labels": done - estimated,
        "check": float(total),
        "theta": estimate.theta,
    }


def child_numpy(path: str) -> dict[str, float]:
    qindex: dict[str, int] = {}
    dindex: dict[str, int] = {}
    imp = np.zeros(0)
    clicks_at = np.zeros(0)
    pair_pos_imp = np.zeros((0, K))
    pair_pos_clk = np.zeros((0, K))
    started, cpu = time.perf_counter(), time.process_time()
    with open(path) as handle:
        while True:
            lines = handle.readlines(1 << 24)
            if not lines:
                break
            pairs: list[int] = []
            clicked: list[int] = []
            for line in lines:
                page = json.loads(line)
                q = qindex.setdefault(page["qid"], len(qindex))
                base = len(pairs)
                pairs.extend(dindex.setdefault((q, d), len(dindex)) for d in page["docids"])  # type: ignore[arg-type]  # a page's docids are a list
                clicked.extend(base + p - 1 for p in page["clicks"])
            pair = np.array(pairs, dtype=np.int64)
            click = np.zeros(len(pair))
            click[np.array(clicked, dtype=np.int64)] = 1
            position = np.tile(np.arange(K), len(pair) // K)
            size = len(dindex)
            if pair_pos_imp.shape[0] < size:
                grow = size - pair_pos_imp.shape[0]
                pair_pos_imp = np.vstack([pair_pos_imp, np.zeros((grow, K))])
                pair_pos_clk = np.vstack([pair_pos_clk, np.zeros((grow, K))])
            flat = pair * K + position
            pair_pos_imp += np.bincount(flat, minlength=size * K).reshape(size, K)
            pair_pos_clk += np.bincount(flat, weights=click, minlength=size * K).reshape(size, K)
    imp = pair_pos_imp.sum(axis=0)
    clicks_at = pair_pos_clk.sum(axis=0)
    ctr = clicks_at / imp
    theta = np.clip(ctr / ctr[0], 1e-6, 1.0)
    theta = np.round(theta, 6)  # as stored
    ips = (pair_pos_clk / theta).sum(axis=1) / pair_pos_imp.sum(axis=1)
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "check": float(ips.sum()),
        "theta": theta.tolist(),
    }


def peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM on Linux (ru_maxrss keeps the parent's peak across fork and exec,
    so the children would all report the generator's), ru_maxrss elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(kind: str, path: Path, env: dict[str, str]) -> tuple[dict[str, float], float]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", kind, str(path)], cwd=ROOT, env=env, stdout=subprocess.PIPE
    )
    out, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{kind} failed ({proc.returncode})")
    result = json.loads(out.decode().strip().splitlines()[-1])
    return result, float(result.pop("rss_mb"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--pages", type=int)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, path = args.child
        result = child_ours(path) if kind == "ours" else child_numpy(path)
        result["rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return

    pages = args.pages or (200_000 if args.small else 10_000_000)
    fresh_database(DATABASE)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-online-") as tmp:
            env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CACHE_URL")}
            env.update(
                DATABASE_URL=f"{SERVER}/{DATABASE}",
                DATA_DIR=tmp,
                LOG_LEVEL="ERROR",
                DJANGO_SETTINGS_MODULE="labeling.settings",
            )
            rows = []
            for size in (pages // 10, pages):
                path = Path(tmp) / f"log-{size}.jsonl"
                started = time.perf_counter()
                generate(path, size)
                print(
                    f"generated {size:,} pages ({path.stat().st_size / 1e6:,.0f} MB) in "
                    f"{time.perf_counter() - started:.1f} s",
                    flush=True,
                )
                ours, ours_rss = run_child("ours", path, env)
                print(
                    f"ours  {size:>11,} pages: {ours['seconds']:8.1f} s wall, {ours['cpu']:.1f} s CPU "
                    f"(import {ours['import']:.1f}, propensity {ours['propensity']:.1f}, "
                    f"labels {ours['labels']:.1f}), peak RSS {ours_rss:6.0f} MB",
                    flush=True,
                )
                rows.append((size, ours, ours_rss))
                if size != pages:
                    path.unlink()
            last_size, last, last_rss = rows[-1]
            anchor, anchor_rss = run_child("numpy", path, env)
            print(
                f"numpy {last_size:>11,} pages: {anchor['seconds']:8.1f} s wall, {anchor['cpu']:.1f} s CPU, "
                f"peak RSS {anchor_rss:6.0f} MB"
            )
            agree = abs(anchor["check"] - last["check"]) <= 1e-6 * max(1.0, abs(anchor["check"]))
            print(
                f"IPS sums agree: {agree} ({last['check']:.6f} vs {anchor['check']:.6f}); "
                f"θ ours {[round(t, 3) for t in last['theta']]}"
            )
            print(
                f"peak RSS ours: {rows[0][2]:.0f} MB at {rows[0][0]:,} pages, {last_rss:.0f} MB at "
                f"{last_size:,} (ratio {last_rss / rows[0][2]:.2f})"
            )
            # wall is the figure; on a shared machine the process CPU (ours excludes the PostgreSQL
            # server's share of the COPY) says how much of it was waiting for a core
            print(
                f"ratio ours/numpy: {last['seconds'] / anchor['seconds']:.2f} wall, "
                f"{last['cpu'] / anchor['cpu']:.2f} CPU (target ≤ {TARGET})"
            )
    finally:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()

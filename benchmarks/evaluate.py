"""Benchmark: evaluation.metrics.evaluate end to end against pytrec_eval and ranx.

Generates (seeded, in a temp dir) a run of 5,000 topics x 1,000 documents and qrels of 100 documents per
topic (graded 0-3, 60 of them retrieved by the run, mostly near the top), then times, each including the
reading of both files:
  - ours:        trec_io.read_qrels + trec_io.read_run + metrics.evaluate
  - pytrec_eval: parse_qrel + parse_run + RelevanceEvaluator(...).evaluate
  - ranx:        Qrels.from_file + Run.from_file + evaluate (warm: numba compiled beforehand on a tiny input)
with the measures map, ndcg_cut_10, P_10, recall_100, recip_rank and every per-topic value computed. It
checks that the three agree (means, and every per-topic value of a sample of topics), prints the best of
--repeat timings (3 by default; the contenders alternate, so a busy machine slows each alike).

Then, as a user runs them, each as a process from start to exit (interpreter start-up, imports, reading,
scoring, printing every per-topic line to /dev/null), in the same run:
  - ours:        python manage.py evaluate QRELS RUN -q -m ... (the file fast path: no Django)
  - pytrec_eval: python -c "parse_qrel, parse_run, RelevanceEvaluator.evaluate, print every value"
once with the benchmark's measures and once with -m all_trec (pytrec_eval: every measure it supports).
Each command runs once untimed (the file is in the page cache, Python's bytecode cache written, as an
installed Python has it), then --repeat times, alternating; the best wall time and the best CPU time (user
+ system, from the child's rusage) are printed, and the load average, since the machine may be shared (the
CPU ratio moves less with the load than the wall one). LAST line: ``ratio process ours/pytrec_eval: X.XX``
(wall, the benchmark's measures). Targets: library <= 0.33, process <= 0.25.

Usage: .venv/bin/python benchmarks/evaluate.py [--small] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation import metrics  # noqa: E402
from pooling import trec_io  # noqa: E402

MEASURES = ["map", "ndcg_cut_10", "P_10", "recall_100", "recip_rank"]
RANX_NAMES = {
    "map": "map",
    "ndcg_cut_10": "ndcg@10",
    "P_10": "precision@10",
    "recall_100": "recall@100",
    "recip_rank": "mrr",
}


def generate(
    directory: Path, *, n_topics: int, n_docs: int, n_qrels: int, seed: int = 42
) -> tuple[Path, Path]:
    """Write run.txt and qrels.txt. Scores strictly decrease with rank (no ties), so that ranx, which does not
    break ties by docid as trec_eval does, ranks exactly as the other two."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = directory / "run.txt", directory / "qrels.txt"
    n_retrieved_judged = n_qrels * 6 // 10
    with run_path.open("w") as run_file, qrels_path.open("w") as qrels_file:
        for t in range(n_topics):
            qid = str(101 + t)
            docs = np.unique(rng.integers(0, 50_000_000, n_docs + n_qrels + 64))
            rng.shuffle(docs)
            retrieved = docs[:n_docs]
            others = docs[n_docs : n_docs + n_qrels]
            scores = 40.0 - np.arange(n_docs) * 0.03 - rng.random(n_docs) * 0.02
            run_file.write(
                "".join(
                    f"{qid} Q0 D{d:08d} {i + 1} {s:.6f} bench\n"
                    for i, (d, s) in enumerate(zip(retrieved.tolist(), scores.tolist(), strict=True))
                )
            )
            ranks = np.unique(
                np.minimum(rng.exponential(120, n_retrieved_judged * 3).astype(int), n_docs - 1)
            )
            ranks = ranks[:n_retrieved_judged]
            judged = np.concatenate([retrieved[ranks], others[: n_qrels - len(ranks)]])
            grades = rng.choice(4, len(judged), p=[0.5, 0.25, 0.15, 0.1])
            qrels_file.write(
                "".join(
                    f"{qid} 0 D{d:08d} {g}\n" for d, g in zip(judged.tolist(), grades.tolist(), strict=True)
                )
            )
    return run_path, qrels_path


def run_ours(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float], dict[str, dict[str, float]]]:
    start = time.perf_counter()
    qrels = trec_io.read_qrels(qrels_path)
    run = trec_io.read_run(run_path)
    result = metrics.evaluate(qrels, run, MEASURES)
    per_topic = {m: result.values[m] for m in MEASURES}  # all per-topic values are computed arrays
    elapsed = time.perf_counter() - start
    assert all(len(v) == len(result.topics) for v in per_topic.values())
    return elapsed, result.means, result.per_topic


def run_pytrec_eval(
    qrels_path: Path, run_path: Path
) -> tuple[float, dict[str, float], dict[str, dict[str, float]]]:
    import pytrec_eval

    start = time.perf_counter()
    with qrels_path.open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    with run_path.open() as f:
        run = pytrec_eval.parse_run(f)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))
    per_topic = evaluator.evaluate(run)
    elapsed = time.perf_counter() - start
    means = {m: float(np.mean([v[m] for v in per_topic.values()])) for m in MEASURES}
    return elapsed, means, per_topic


def warm_ranx(directory: Path) -> None:
    """Run ranx once on a tiny input, through the same calls, so numba's compilation is not timed."""
    tiny = directory / "tiny"
    tiny.mkdir()
    run_path, qrels_path = generate(tiny, n_topics=3, n_docs=20, n_qrels=10, seed=1)
    run_ranx(qrels_path, run_path)


def run_ranx(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float], dict[str, dict[str, float]]]:
    from ranx import Qrels, Run, evaluate

    start = time.perf_counter()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    means = evaluate(qrels, run, list(RANX_NAMES.values()), make_comparable=True)
    elapsed = time.perf_counter() - start
    per_topic: dict[str, dict[str, float]] = {}
    for ours, theirs in RANX_NAMES.items():
        for qid, value in run.scores[theirs].items():
            per_topic.setdefault(qid, {})[ours] = float(value)
    return elapsed, {ours: float(means[theirs]) for ours, theirs in RANX_NAMES.items()}, per_topic


ROOT = Path(__file__).resolve().parent.parent
PYTREC_PROCESS = """
import sys
import pytrec_eval
measures = set(sys.argv[3].split(",")) if sys.argv[3] != "all" else set(pytrec_eval.supported_measures)
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
per_topic = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
lines = (f"{m:<22}\\t{q}\\t{v:6.4f}\\n" for q in sorted(per_topic) for m, v in per_topic[q].items())
sys.stdout.write("".join(lines))
"""
OUR_MEASURES = ["-m", "map", "-m", "ndcg_cut.10", "-m", "P.10", "-m", "recall.100", "-m", "recip_rank"]


# As installed Python runs: with its bytecode cache (an environment that turns it off would make every
# start compile the project's modules again, a cost no user pays twice).
PROCESS_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_process(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``command`` to its exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=PROCESS_ENV
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:4])} ... failed: {done.stderr.decode(errors='replace')}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def process_commands(qrels_path: Path, run_path: Path) -> dict[str, list[str]]:
    ours = [sys.executable, "manage.py", "evaluate", str(qrels_path), str(run_path), "-q"]
    theirs = [sys.executable, "-c", PYTREC_PROCESS, str(qrels_path), str(run_path)]
    return {
        "ours": ours + OUR_MEASURES,
        "pytrec_eval": theirs + [",".join(MEASURES)],
        "ours all_trec": ours + ["-m", "all_trec"],
        "pytrec_eval all": theirs + ["all"],
    }


def check(
    name: str,
    means: dict[str, float],
    per_topic: dict[str, dict[str, float]],
    ref_means: dict[str, float],
    ref_per_topic: dict[str, dict[str, float]],
    sample: list[str],
) -> None:
    for m in MEASURES:
        if abs(means[m] - ref_means[m]) > 1e-6:
            raise SystemExit(f"{name}: mean {m} = {means[m]:.6f}, pytrec_eval {ref_means[m]:.6f}")
    for qid in sample:
        for m in MEASURES:
            if abs(per_topic[qid][m] - ref_per_topic[qid][m]) > 1e-6:
                raise SystemExit(
                    f"{name}: {m} of topic {qid} = {per_topic[qid][m]}, pytrec_eval {ref_per_topic[qid][m]}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="500 topics x 200 documents (a smoke run)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="time each contender N times, keep the best (3)"
    )
    args = parser.parse_args()
    n_topics, n_docs, n_qrels = (500, 200, 100) if args.small else (5000, 1000, 100)

    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as tmp:
        start = time.perf_counter()
        run_path, qrels_path = generate(Path(tmp), n_topics=n_topics, n_docs=n_docs, n_qrels=n_qrels)
        print(
            f"data: {n_topics} topics x {n_docs} docs = {n_topics * n_docs:,} run lines, "
            f"{n_topics * n_qrels:,} qrels lines ({run_path.stat().st_size / 1e6:.0f} MB run), "
            f"generated in {time.perf_counter() - start:.1f}s"
        )
        warm_ranx(Path(tmp))
        times: dict[str, float] = {"ours": np.inf, "pytrec_eval": np.inf, "ranx": np.inf}
        outputs = {}
        for _ in range(max(1, args.repeat)):
            for name, fn in (("pytrec_eval", run_pytrec_eval), ("ours", run_ours), ("ranx", run_ranx)):
                elapsed, means, per_topic = fn(qrels_path, run_path)
                times[name] = min(times[name], elapsed)
                outputs[name] = (means, per_topic)
        commands = process_commands(qrels_path, run_path)
        for command in commands.values():  # once untimed: the bytecode cache is written, the file cached
            time_process(command)
        process_times = dict.fromkeys(commands, np.inf)
        process_cpu = dict.fromkeys(commands, np.inf)
        for _ in range(max(1, args.repeat)):
            for name, command in commands.items():
                wall, cpu = time_process(command)
                process_times[name] = min(process_times[name], wall)
                process_cpu[name] = min(process_cpu[name], cpu)

    ref_means, ref_per_topic = outputs["pytrec_eval"]
    rng = np.random.default_rng(0)
    topics = sorted(ref_per_topic)
    sample = [topics[i] for i in rng.choice(len(topics), size=min(200, len(topics)), replace=False)]
    check("ours", *outputs["ours"], ref_means, ref_per_topic, sample)
    check("ranx", *outputs["ranx"], ref_means, ref_per_topic, sample)
    print("values agree (means and 200 sampled topics x 5 measures, to 1e-6): ours = pytrec_eval = ranx")
    for m in MEASURES:
        print(f"  {m:<12} {ref_means[m]:.4f}")
    for name in ("ours", "pytrec_eval", "ranx"):
        print(f"time {name:<12} {times[name]:.2f}s")
    print(f"ratio ours/ranx: {times['ours'] / times['ranx']:.2f}")
    print(f"ratio ours/pytrec_eval: {times['ours'] / times['pytrec_eval']:.2f}")
    for name, elapsed in process_times.items():
        print(f"process {name:<16} {elapsed:.2f}s wall, {process_cpu[name]:.2f}s CPU")
    cpu_ratio = process_cpu["ours"] / process_cpu["pytrec_eval"]
    cpu_all_ratio = process_cpu["ours all_trec"] / process_cpu["pytrec_eval all"]
    print(f"ratio process CPU ours/pytrec_eval: {cpu_ratio:.2f}; with -m all_trec: {cpu_all_ratio:.2f}")
    print("load average (1, 5, 15 min) at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    all_ratio = process_times["ours all_trec"] / process_times["pytrec_eval all"]
    print(f"ratio process ours/pytrec_eval with -m all_trec: {all_ratio:.2f}")
    print(f"ratio process ours/pytrec_eval: {process_times['ours'] / process_times['pytrec_eval']:.2f}")


if __name__ == "__main__":
    main()

"""The demo's click log: users simulated over the demo's three rankers, imported, its propensities
estimated and click labels derived beside the human ones, with the services a user calls.

Each simulated page is one ranker's top 10 for a topic (the three rankers are the three loggers, so
documents change rank between them: EM and intervention harvesting have something to work on). Users
follow the position-based model with the θ of issue 14; a document's attractiveness comes from its grade
in the demo's seed qrels (`qrels_seed.txt`: 3 → 0.9, 2 → 0.5, 1 → 0.2, unjudged 0.05). Small enough to
load in a second or two; idempotent (an existing log is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from judgements import agreement
from online import services
from online.clicklogs import import_click_log
from online.models import ClickLog
from online.simulate import THETA, jsonl_lines, simulate
from pooling.models import Pool, Run

LOG_NAME = "demo-clicks"
SESSIONS = 20_000
K = 10
GAMMA = {3: 0.9, 2: 0.5, 1: 0.2}
UNJUDGED = 0.05
THRESHOLDS = "0.08:1,0.2:2,0.45:3"


def load_clicks(*, pool: Pool, runs: tuple[str, ...], data_dir: Path, log: Callable[[str], None]) -> None:
    """Simulate, import and analyse the demo click log of `pool` (nothing if it exists already)."""
    if ClickLog.objects.filter(collection=pool.collection_id, name=LOG_NAME).exists():
        return
    seed_grades: dict[tuple[str, str], int] = {}
    seed = data_dir / "qrels_seed.txt"
    if seed.exists():
        for line in seed.read_text().splitlines():
            qid, _, docid, grade = line.split()
            seed_grades[(qid, docid)] = int(grade)
    rankers = [Run.objects.get(collection=pool.collection_id, name=name) for name in runs]
    qids: list[str] = []
    candidates: list[list[str]] = []
    rankings: list[list[list[int]]] = [[] for _ in rankers]  # per logger, per topic: indexes into the union
    for topic in pool.topics():
        lists = [[docid for docid, _ in run.ranked_list(topic)[:K]] for run in rankers]
        if any(len(found) < K for found in lists):
            continue  # a topic some ranker answers with fewer than K documents: not shown
        union = list(dict.fromkeys(docid for found in lists for docid in found))
        qids.append(topic.qid)
        candidates.append(union)
        for logger, found in enumerate(lists):
            rankings[logger].append([union.index(docid) for docid in found])
    if not qids:
        log("click log: no topic with 10 results from every ranker; skipped")
        return
    width = max(len(c) for c in candidates)
    gamma = np.full((len(qids), width), UNJUDGED)
    for q, (qid, union) in enumerate(zip(qids, candidates, strict=True)):
        for d, docid in enumerate(union):
            gamma[q, d] = GAMMA.get(seed_grades.get((qid, docid), 0), UNJUDGED)
    sim = simulate(
        np.random.default_rng(14),
        rankings=[np.array(r, dtype=np.int64) for r in rankings],
        gamma=gamma,
        sessions=SESSIONS,
        theta=THETA,
    )
    path = data_dir / "clicks.jsonl"
    path.write_text(
        "\n".join(jsonl_lines(sim, qids=qids, docids=candidates, loggers=list(runs), users=500)) + "\n"
    )
    click_log = import_click_log(
        collection=pool.collection, name=LOG_NAME, format="jsonl", paths=[str(path)], pool=pool
    )
    em = services.estimate_propensity(log=click_log, method="em", name="demo-em")
    services.estimate_propensity(log=click_log, method="harvest", name="demo-harvest")
    labels = services.derive_click_labels(
        log=click_log,
        estimator="ips",
        propensity_estimate=em,
        thresholds=THRESHOLDS,
        replicates=20,
        name="demo-ips",
    )
    theta = " ".join(f"{t:.2f}" for t in em.theta)
    log(
        f"click log {LOG_NAME}: {click_log.counts['pages']:,} simulated pages over {len(qids)} topics "
        f"by {', '.join(runs)}; EM θ = {theta} (true θ/θ₁ = "
        f"{' '.join(f'{t / THETA[0]:.2f}' for t in THETA)})"
    )
    gate = labels.agreement or {}
    log(
        f"click labels demo-ips: {labels.labels.count()} pairs; agreement with the pool's human judgements "
        f"over {gate.get('n', 0)} pairs (κ {_kappa(gate.get('kappa'))})"
        + ("; judge the pool, then derive again" if not gate.get("n") else "")
    )
    rows = labels.labels.values_list("topic__qid", "document__docid", "grade")
    seed_pairs = [(seed_grades.get((q, d), 0), g) for q, d, g in rows if g is not None]
    if seed_pairs:
        kappa = agreement.cohen_kappa(
            [a for a, _ in seed_pairs], [b for _, b in seed_pairs], labels=[0, 1, 2, 3]
        )
        log(
            f"  the same click grades against the grades the simulation drew its clicks from (the seed "
            f"qrels; a document they do not list is simulated as grade 0): κ {_kappa(kappa)} over "
            f"{len(seed_pairs)} pairs"
        )


def _kappa(value: float | None) -> str:
    """A kappa as the pages show it (three decimals); undefined where there was nothing to compare."""
    return "undefined" if value is None or value != value else f"{value:.3f}"

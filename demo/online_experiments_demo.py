"""The demo's interleaving experiments and offline–online tracker (called by `load_demo`; idempotent, a few
seconds on the quick collection).

What it makes, on the demo collection and pool:
- human labels for the tracker's offline deltas: when nobody has judged the pool yet, the demo's seed qrels
  are imported as the judgements of two demo raters (the pool wants two per item), and a release is made
  if there is none;
- four ranking changes besides the three demo rankers: reciprocal-rank fusions (k = 60) of two or three of
  them, imported as runs like any other;
- eight changes (baseline → treatment), each interleaved (team draft) against its baseline for simulated
  searchers — position-based users whose relevance is the seed labels with a quarter of them off by one
  grade, as real users' usefulness differs from raters' topicality — each with its impressions logged
  through the API's service and its result computed;
- each change tracked: nDCG@10 on the release against the treatment's interleaving preference, so the
  tracker page has several experiments, their correlation and its verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from judgements import releases
from judgements.imports import import_judgements
from judgements.models import Judgement, Release
from online import experiments, impressions, serving, simulate, tracking
from online.experiment_models import InterleavingExperiment, TrackedExperiment
from pooling import imports
from pooling.models import Collection, Pool, Run

FUSIONS = {
    "rrf-bm25-tfidf": ("bm25", "tfidf"),
    "rrf-bm25-lsa": ("bm25", "lsa"),
    "rrf-tfidf-lsa": ("tfidf", "lsa"),
    "rrf-all": ("bm25", "tfidf", "lsa"),
}
CHANGES = [
    ("bm25", "tfidf"),
    ("bm25", "lsa"),
    ("tfidf", "lsa"),
    ("bm25", "rrf-bm25-tfidf"),
    ("bm25", "rrf-bm25-lsa"),
    ("bm25", "rrf-all"),
    ("lsa", "rrf-tfidf-lsa"),
    ("tfidf", "rrf-all"),
]
#: Simulated searchers (`online.simulate`'s position-based users, its θ by position): the click probability
#: of an examined document by its grade on the demo's 0–3 rubric.
GAMMA_BY_GRADE = (0.05, 0.25, 0.55, 0.9)
SEARCHERS = 150
QUERIES_PER_SEARCHER = 3
SEED = 14


def _read_run(path: Path) -> dict[str, list[str]]:
    ranked: dict[str, list[tuple[int, str]]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            qid, _, docid, rank, *_ = line.split()
            ranked.setdefault(qid, []).append((int(rank), docid))
    return {qid: [d for _, d in sorted(rows)] for qid, rows in ranked.items()}


def _fusion_runs(collection: Collection, data_dir: Path, log: Callable[[str], None]) -> None:
    """The reciprocal-rank fusions (score Σ 1/(60 + rank)), imported as runs (once)."""
    lists = {name: _read_run(data_dir / "runs" / f"{name}.txt") for name in ("bm25", "tfidf", "lsa")}
    out = data_dir / "runs" / "changes"
    out.mkdir(parents=True, exist_ok=True)
    for name, parts in FUSIONS.items():
        if Run.objects.filter(collection=collection, name=name).exists():
            continue
        path = out / f"{name}.txt"
        with path.open("w", encoding="utf-8") as handle:
            for qid in sorted(set().union(*(lists[p] for p in parts))):
                scores: dict[str, float] = {}
                for part in parts:
                    for rank, docid in enumerate(lists[part].get(qid, []), 1):
                        scores[docid] = scores.get(docid, 0.0) + 1.0 / (60 + rank)
                ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:100]
                for rank, (docid, score) in enumerate(ranked, 1):
                    handle.write(f"{qid} Q0 {docid} {rank} {score:.6f} {name}\n")
        imports.import_run(
            collection=collection, path=path, name=name, description=f"RRF of {' + '.join(parts)}"
        )
        log(f"imported the ranking change {name} (RRF of {', '.join(parts)})")


def _release(pool: Pool, data_dir: Path, raters: list, log: Callable[[str], None]) -> Release:
    """The pool's latest release; when nobody has judged the pool, the seed qrels first, as two raters."""
    if not Judgement.objects.filter(item__pool=pool).exists():
        for rater in raters[:2]:
            import_judgements(pool=pool, path=data_dir / "qrels_seed.txt", rater=rater, skip_unpooled=True)
        log(f"imported the seed qrels as the judgements of {', '.join(r.username for r in raters[:2])}")
    release = Release.objects.filter(pool=pool).first()
    if release is None:
        release = releases.create_release(pool=pool)
        log(f"released the pool's labels (release {release.pk})")
    return release


def _user_grades(data_dir: Path, rng: np.random.Generator) -> dict[tuple[str, str], int]:
    """The simulated searchers' grades: the seed labels, a quarter of them one grade off."""
    grades = {}
    with (data_dir / "qrels_seed.txt").open(encoding="utf-8") as handle:
        for line in handle:
            qid, _, docid, grade = line.split()
            shift = int(rng.choice([-1, 0, 0, 0, 0, 0, 0, 1]))
            grades[(qid, docid)] = min(3, max(0, int(grade) + shift))
    return grades


def _simulate(
    experiment: InterleavingExperiment,
    qids: list[str],
    grades: dict[tuple[str, str], int],
    rng: np.random.Generator,
) -> None:
    shown_all = []
    for searcher in range(SEARCHERS):
        for qid in rng.choice(qids, size=QUERIES_PER_SEARCHER, replace=False).tolist():
            user = f"searcher-{searcher:03d}"
            shown = serving.serve(experiment=experiment, qid=qid, user=user)
            gamma = np.array([[GAMMA_BY_GRADE[grades.get((qid, d), 0)] for d in shown.docids]])
            clicks = (np.flatnonzero(simulate.pbm_clicks(rng, simulate.THETA, gamma)[0]) + 1).tolist()
            shown_all.append(
                impressions.Shown(qid=qid, user=user, docids=shown.docids, teams=shown.teams, clicks=clicks)
            )
    impressions.log_impressions(experiment=experiment, shown=shown_all)


def load(
    *, collection_name: str, pool_name: str, data_dir: Path, raters: list, log: Callable[[str], None]
) -> None:
    """Everything in the module docstring, once: nothing is made again when the tracker has experiments."""
    collection = Collection.objects.get(name=collection_name)
    if TrackedExperiment.objects.filter(collection=collection).exists():
        return
    pool = Pool.objects.get(name=pool_name)
    release = _release(pool, data_dir, raters, log)
    _fusion_runs(collection, data_dir, log)
    rng = np.random.default_rng(SEED)
    grades = _user_grades(data_dir, rng)
    qids = sorted({qid for qid, _ in grades})
    for baseline, treatment in CHANGES:
        name = f"{treatment}-vs-{baseline}"
        experiment = InterleavingExperiment.objects.filter(name=name).first()
        if experiment is None:
            experiment = experiments.create_experiment(
                name=name, collection=collection, run_a=baseline, run_b=treatment,
                description=f"Simulated searchers: does {treatment} beat {baseline}?",
            )  # fmt: skip
        if not experiment.impressions.exists():
            _simulate(experiment, qids, grades, rng)
        result = experiments.compute_result(experiment=experiment, resamples=1000)
        tracking.track_experiment(
            collection=collection, name=f"{baseline} → {treatment}", release=release, metric="ndcg_cut_10",
            baseline=baseline, treatment=treatment, interleaving=result,
            description="A ranking change of the demo, interleaved for simulated searchers.",
        )  # fmt: skip
    log(f"{len(CHANGES)} ranking changes interleaved and tracked: /online/interleaving/ and /online/tracker/")

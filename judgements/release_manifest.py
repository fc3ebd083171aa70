"""What a release says about itself: the description of each file (size, lines, SHA-256), the agreement
summary and the manifest, written beside the files. `releases.create_release` calls them once the files
are written."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from judgements import agreement
from judgements.exclusions import excluded_rater_ids
from judgements.queries import unpooled_by_run
from judgements.release_files import UNJUDGED_TOPICS_FILE, Tally
from pooling.models import Pool, PoolItem

#: Every file a release may hold, the only names its download pages and endpoints serve.
RELEASE_FILES = ("qrels.txt", UNJUDGED_TOPICS_FILE, "judgements.jsonl", "manifest.json")
QRELS_LAYOUT = (
    "qrels.txt has every topic with at least one judged item (grade >= 0): its judged items and its "
    "pending and unrateable items as -1. A topic with no judged item has its -1 lines in "
    "qrels.unjudged.txt instead, so trec_eval, pytrec_eval, ir_measures and ranx read qrels.txt unchanged "
    "(on a topic whose every line is -1 trec_eval aborts and pytrec_eval scores 0, or crashes). "
    "LC_ALL=C sort -k1,1 -k3,3 qrels.txt qrels.unjudged.txt restores the single explicit file."
)
QRELS_LAYOUT_OMIT = "qrels.txt has the judged items only; a topic with no judged item has no line."


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_files(work: Path, *, tally: Tally, explicit: bool) -> dict[str, dict[str, Any]]:
    """The SHA-256 (hashed as the files were written, `hashed_files.HashedFile`) and line count of each
    data file (the manifest's `files`); without `explicit`, `qrels.unjudged.txt` is removed (such topics
    have no line at all)."""
    files: dict[str, dict[str, Any]] = {
        "qrels.txt": {"sha256": tally.sha256["qrels.txt"], "lines": tally.lines["qrels.txt"]},
        "judgements.jsonl": {"sha256": tally.sha256["judgements.jsonl"], "lines": tally.counts["judgements"]},
    }
    if explicit:
        files[UNJUDGED_TOPICS_FILE] = {
            "sha256": tally.sha256[UNJUDGED_TOPICS_FILE],
            "lines": tally.lines[UNJUDGED_TOPICS_FILE],
        }
    else:
        (work / UNJUDGED_TOPICS_FILE).unlink()
    return files


def agreement_summary(pairs: Counter[tuple[int, int]], labels: list[Any]) -> dict[str, Any]:
    """Cohen's kappa (unweighted, linear, quadratic) of the pairs of grades, with its Landis-Koch band."""
    n_pairs = sum(pairs.values())
    position = {value: i for i, value in enumerate(labels)}
    if (
        labels
        and len(position) == len(labels)
        and all(type(value) is int and -(2**63) <= value < 2**63 for value in labels)
        and all(pa in position and pb in position for pa, pb in pairs)
    ):
        # The confusion matrix that cohen_kappa(a, b, labels=labels) builds from the pairs (rows: the
        # earlier rater's grade), without the pairs themselves: memory flat in the number of pairs.
        confusion = np.zeros((len(labels), len(labels)), dtype=np.int64)
        for (pa, pb), n in pairs.items():
            confusion[position[pa], position[pb]] += n

        def kappa(weights: Any) -> float | None:
            return agreement.kappa_from_confusion(confusion, weights=weights)

    else:  # anything unusual: cohen_kappa on the pairs themselves, errors included
        repeats = list(pairs.values())
        a = np.repeat(np.asarray([pa for pa, _ in pairs], dtype=np.int64), repeats)
        b = np.repeat(np.asarray([pb for _, pb in pairs], dtype=np.int64), repeats)

        def kappa(weights: Any) -> float | None:
            return agreement.cohen_kappa(a, b, labels=labels, weights=weights)

    kappas = {
        name: (kappa(weights) if n_pairs else None)
        for name, weights in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic"))
    }
    return {"pairs": n_pairs, "cohen_kappa": kappas, "band": agreement.landis_koch_band(kappas["unweighted"])}


def pool_facts(*, pool: Pool) -> dict[str, Any]:
    """What the manifest says of the pool beyond the pass's counts: its unselected candidates, the
    documents each run retrieved and how many were never pooled (`queries.unpooled_by_run`), and how many
    raters are excluded. Read in the release's transaction (`release_files.write_qrels_and_judgements`),
    so on the snapshot its files are written from; in a release of two processes by the second, while the
    first still writes."""
    return {
        "unselected_candidates": PoolItem.objects.filter(pool=pool, selected=False).count(),
        "runs": unpooled_by_run(pool=pool),
        "excluded_raters": len(excluded_rater_ids(pool=pool)),
    }


def release_manifest(
    *,
    pool: Pool,
    policy: str,
    unjudged: str,
    rubric: Any,
    tally: Tally,
    files: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """What `manifest.json` says (its own hash is added to `files` once it is written), from the pass's
    `tally` (with its `facts`, `pool_facts`)."""
    facts = tally.facts
    assert facts is not None, "the tally of write_qrels_and_judgements has the pool's facts"
    labels = rubric.labels
    counts = tally.counts
    explicit = unjudged == "explicit"
    manifest = {
        "format": "relevance-release/1",
        "pool": pool.name,
        "collection": pool.collection.name,
        "strategy": pool.strategy,
        "depth": pool.depth,
        "policy": policy,
        "unjudged": unjudged,
        "unjudged_label": -1 if explicit else None,
        "relevance_level": pool.relevance_level,
        "rubric": {"name": rubric.name, "version": rubric.version, "labels": labels},
        "counts": {
            "items": counts["judged"] + counts["unrateable"] + counts["pending"],
            "judged": counts["judged"],
            "unrateable": counts["unrateable"],
            "pending": counts["pending"],
            "ties": counts["ties"],
            "judgements": counts["judgements"],
            "unselected_candidates": facts["unselected_candidates"],
            "grades": {str(g): tally.grades[g] for g in labels},
        },
        "runs": facts["runs"],
        "agreement": agreement_summary(tally.pairs, labels),
        "data_as_of": tally.latest or None,
        "files": files,
        "topics": {
            "judged": tally.topics["judged"],
            "not_judged": tally.topics["not_judged"],
            "not_judged_file": UNJUDGED_TOPICS_FILE if explicit else None,
            "layout": QRELS_LAYOUT if explicit else QRELS_LAYOUT_OMIT,
        },
    }
    if facts["excluded_raters"]:  # the labels of these raters are not in the release (exclude_rater)
        manifest["excluded_raters"] = facts["excluded_raters"]
    return manifest


def write_manifest(work: Path, manifest: dict[str, Any]) -> None:
    """Write `manifest.json` and add its own hash to `manifest["files"]` (the row's list of files)."""
    data = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    (work / "manifest.json").write_bytes(data)
    manifest["files"]["manifest.json"] = {"sha256": hashlib.sha256(data).hexdigest(), "lines": 0}

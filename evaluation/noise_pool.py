"""The noise floor of a pool's campaign: its runs, current labels and every rater's votes read from the
database and handed to the pure :mod:`evaluation.noise_floor` report."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from evaluation import noise_bodies, noise_floor
from evaluation.services import _runs, run_as_dict
from judgements import aggregation, crowd
from judgements.crowd_policies import fit_policy
from judgements.models import Judging
from judgements.release_rows import stream_items
from judgements.releases import current_qrels
from pooling.models import Pool

#: Bounds of what a request may ask for (the API refuses beyond them).
MAX_TOPIC_SAMPLES = 5000
MAX_LABEL_SAMPLES = 1000
MAX_SPLITS = 200


def pool_votes(
    *, pool: Pool
) -> tuple[dict[tuple[str, str], list[tuple[str, int | None]]], dict[tuple[str, str], int]]:
    """Every selected item's current votes ``{(qid, docid): [(username, grade or None), ...]}`` and the
    adjudicated items ``{(qid, docid): grade, or -1 for unrateable}`` (a decision no resample changes)."""
    names = dict(
        get_user_model().objects.filter(judgements__item__pool=pool).values_list("pk", "username").distinct()
    )
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    fixed: dict[tuple[str, str], int] = {}
    with transaction.atomic(), contextlib.closing(stream_items(pool=pool)) as items:
        for item, _rows in items:
            key = (item.qid, item.docid)
            votes[key] = [(names.get(rater, str(rater)), grade) for rater, grade in item.votes]
            if item.adjudicated is not None:
                fixed[key] = -1 if item.adjudicated == "unrateable" else int(item.adjudicated)
    return votes, fixed


@dataclass(frozen=True)
class _OfPool:
    """The pool a noise-floor report is of, the policy its labels are read under and its topics."""

    pool: str
    policy: str
    topics: int


# `_OfPool` last among the bases: a dataclass takes its bases' fields from the last base on, so the
# pool's come first, as the answer has always put them.
@dataclass(frozen=True)
class PoolNoiseFloor(noise_bodies.NoiseReport, _OfPool):
    """A pool's noise-floor report (`noise_pool.pool_noise_floor`): the pool, the policy its labels are
    read under and how many topics it has, then the report of its campaign (`noise_bodies.NoiseReport`):
    its runs, by measure every pair of runs and the measure's summary, and the raters' stability."""


def pool_noise_floor(
    *,
    pool: Pool,
    policy: str = aggregation.DEFAULT_POLICY,
    measures: Sequence[str] = noise_floor.DEFAULT_MEASURES,
    seed: int = 0,
    topic_samples: int = 1000,
    label_samples: int = 200,
    splits: int = 20,
) -> dict[str, Any]:
    """The noise-floor report of every run of the pool's collection on the pool's current labels under
    ``policy`` (see :func:`evaluation.noise_floor.report`): rater stability, label uncertainty from the
    raters' votes, the topic bootstrap, discriminative power, the topic planner and a verdict per pair.
    Topics nobody judged are listed apart and never scored. The answer is a `PoolNoiseFloor`, as a dict."""
    topics = [topic.qid for topic in pool.topics()]
    consensus = current_qrels(pool=pool, policy=policy)
    votes, fixed = pool_votes(pool=pool)
    runs = {}
    for run in _runs(pool, None):
        run_dict = run_as_dict(run=run, qids=topics)
        if run_dict:
            runs[run.name] = run_dict
    campaign = noise_floor.Campaign.of(
        runs,
        consensus,
        votes,
        measures=measures,
        fixed=fixed,
        relevance_level=pool.relevance_level,
        topics=topics,
    )
    posterior = model_posterior(pool=pool, policy=policy, campaign=campaign, votes=votes, fixed=fixed)
    data = noise_floor.report_body(
        campaign,
        n_topic_samples=topic_samples,
        n_label_samples=label_samples,
        n_splits=splits,
        seed=seed,
        posterior=posterior,
        policy=policy,  # the report's resamples follow it (``noise_floor.label_source``, ``split_policy``)
    )
    return asdict(PoolNoiseFloor(pool=pool.name, policy=policy, topics=len(topics), **vars(data)))


def model_posterior(
    *,
    pool: Pool,
    policy: str,
    campaign: noise_floor.Campaign,
    votes: dict[tuple[str, str], list[tuple[str, int | None]]],
    fixed: dict[tuple[str, str], int],
) -> np.ndarray | None:
    """Under a model policy (Dawid–Skene, MACE, GLAD, gold-weighted), each item's posterior over the grades
    from the fitted model, for the label samples to draw from (items × grades; a zero row for an item the
    model does not decide: adjudicated, pending or unrateable). None under any other policy."""
    if policy not in aggregation.MODEL_POLICIES:
        return None
    fitted = fit_policy(aggregation.parse_policy(policy), pool=pool).fitted
    ids = dict(
        get_user_model().objects.filter(judgements__item__pool=pool).values_list("username", "pk").distinct()
    )
    grades = sorted(Judging.objects.select_related("rubric").get(pool=pool).rubric.labels)
    out = np.zeros((len(campaign.scorer.items), max(grades) + 1))
    for i, key in enumerate(campaign.scorer.items.keys):
        if key in fixed or campaign.consensus[i] < 0:
            continue
        found = fitted.posteriors.get(crowd.signature((ids.get(r, r), g) for r, g in votes.get(key, ())))
        for grade, p in (found or {}).items():
            out[i, grade] = p
    return out


def verdicts_by_pair(data: dict[str, Any]) -> dict[tuple[str, str], str]:
    """The key measure's verdict of each pair ``(a, b)`` of a noise-floor report."""
    return {(row["a"], row["b"]): row["verdict"] for row in data["pairs"].get(data["key_measure"], [])}

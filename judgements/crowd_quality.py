"""Per-rater quality of a pool's crowd, read from the database: the records, the consensus under the
pool's policy, the gold labels, and who is excluded (the numbers are `rater_quality`'s)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from judgements import rater_quality
from judgements.aggregation import DEFAULT_POLICY
from judgements.exclusions import excluded_rater_ids
from judgements.models import GoldLabel, Judgement, Judging
from judgements.releases import current_qrels
from pooling.models import Pool, PoolItem


@dataclass(frozen=True)
class QualityThresholds:
    """The thresholds of the flags (`rater_quality`): the share of one grade that is `constant` and
    `near-constant`, the ratio to the other raters' median time that is `fast`, the κ below which a rater
    is `near-chance`, and the votes a flag needs."""

    constant_share: float
    near_constant_share: float
    fast_ratio: float
    chance_kappa: float
    min_votes: int


@dataclass(frozen=True)
class RaterQualityReport:
    """The quality of a pool's raters (`pool_rater_quality`): each rater who judged in the pool (excluded
    ones too) against gold, the consensus under `policy` and the other raters, with their flags; the
    confusion matrices' rows and columns are in the order of `labels`. An undefined figure is null."""

    pool: str
    policy: str
    labels: list[int]
    raters: list[rater_quality.RaterQualityRow]
    thresholds: QualityThresholds


def pool_rater_quality(*, pool: Pool, policy: str = DEFAULT_POLICY) -> dict[str, Any]:
    """Every rater who judged in the pool: confusion matrices and exact accuracy against gold and against
    the consensus under `policy` (which leaves excluded raters out), κ with the consensus and with the
    other raters (excluded ones left out), the flags, and whether the rater is excluded now. Excluded
    raters are measured too. Accuracy against gold is the one rule's (`rater_quality.gold_accuracy`, as
    the rater statistics give it: every answer to a gold item, an unrateable one a miss); κ and the
    confusion matrices compare grades, over the graded answers. A `RaterQualityReport` as a dict."""
    judging = Judging.objects.select_related("rubric").get(pool=pool)
    labels = sorted(judging.rubric.labels)
    key_of = {
        (q, d): pk
        for pk, q, d in PoolItem.objects.filter(pool=pool).values_list("pk", "topic__qid", "document__docid")
    }
    consensus = {
        key_of[(q, d)]: grade
        for q, docs in current_qrels(pool=pool, policy=policy).items()
        for d, grade in docs.items()
        if grade >= 0 and (q, d) in key_of
    }
    gold = dict(GoldLabel.objects.filter(item__pool=pool).values_list("item_id", "grade"))
    records = [
        (item, rater, None if unrateable else grade, seconds)
        for item, rater, grade, unrateable, seconds in Judgement.objects.filter(item__pool=pool)
        .order_by("rater__username", "item_id")
        .values_list("item_id", "rater__username", "grade", "unrateable", "seconds")
    ]
    excluded = set(
        Judgement.objects.filter(item__pool=pool, rater_id__in=excluded_rater_ids(pool=pool))
        .values_list("rater__username", flat=True)
        .distinct()
    )
    report = RaterQualityReport(
        pool=pool.name,
        policy=policy,
        labels=labels,
        raters=[
            q.row(excluded=q.rater in excluded)
            for q in rater_quality.rater_quality(
                records, labels=labels, consensus=consensus, gold=gold, excluded=excluded
            )
        ],
        thresholds=QualityThresholds(
            constant_share=rater_quality.CONSTANT_SHARE,
            near_constant_share=rater_quality.NEAR_CONSTANT_SHARE,
            fast_ratio=rater_quality.FAST_RATIO,
            chance_kappa=rater_quality.CHANCE_KAPPA,
            min_votes=rater_quality.MIN_VOTES,
        ),
    )
    return asdict(report)

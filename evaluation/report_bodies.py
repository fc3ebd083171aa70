"""The evaluation reports' answers, each declared once as the dataclass `evaluation.services` builds it (a
pool's report, its leave-one-run-out pool bias, the two-stage diagnosis); the API's serializers read them
(`labeling.bodies.BodySerializer`). The functions return them as dicts (`dataclasses.asdict`), which the
pages, the commands and the API show."""

from __future__ import annotations

from dataclasses import dataclass

#: A mean by measure (trec_eval name); null where it is undefined (`services._clean`).
ByMeasure = dict[str, float | None]


@dataclass(frozen=True)
class ReportRun:
    """One run of a pool's report: whether it is `contributing` (it helped make the pool), its means by
    measure (trec_eval name) under each unjudged policy, judged@10 of the run as it is, and `model_10`, the
    share of its top 10 whose label is the model judge's (null: no judged topic to score). `topics`
    counts the judged topics its means are over (average=all: every one); `missing_topics` names the
    judged topics it has no results for (not in its means; average=all: in them as 0), and `warnings`
    carries `metrics.evaluate`'s note saying so."""

    run: str
    contributing: bool
    topics: int
    missing_topics: list[str]
    warnings: list[str]
    nonrelevant: ByMeasure
    condensed: ByMeasure
    judged_10: float | None
    model_10: float | None


@dataclass(frozen=True)
class Significance:
    """Two runs' paired t and randomisation tests on the key measure, over the topics both have (null: an
    undefined figure)."""

    a: str
    b: str
    n: int
    mean_difference: float | None
    t_p: float | None
    randomisation_p: float | None


@dataclass(frozen=True)
class ReportJudge:
    """The model judge whose labels fill the items people left pending: `labels` counts the items it
    labelled, `reason` is its gate's."""

    name: str
    labels: int
    reason: str


@dataclass(frozen=True)
class ReportBody:
    """A pool's evaluation report (`services.pool_report`): every run scored on the pool's current labels
    under `policy`, averaged by `average` (common: each run over the judged topics it has; all: every
    judged topic, trec_eval -c). `segments` holds, by run then by segment, num_q, the key measure and
    judged_10; `segments_missing`, by run then by segment, the segment's judged topics the run has no
    results for; `segments_not_judged`, by segment, its topics nobody judged. `judge` is null without a
    model judge. A figure that is undefined (NaN, no topic, nothing to test) is null."""

    pool: str
    policy: str
    gain: str
    average: str
    relevance_level: int
    measures: list[str]
    key_measure: str
    runs: list[ReportRun]
    segments: dict[str, dict[str, ByMeasure]]
    segments_missing: dict[str, dict[str, list[str]]]
    segments_not_judged: dict[str, int]
    significance: list[Significance]
    topics: int
    judged_topics: int
    not_judged_topics: list[str]
    judge: ReportJudge | None


@dataclass(frozen=True)
class PoolBiasRun:
    """One contributing run left out of the pool: the items only it contributed (`unique_items`, of which
    `unique_relevant` relevant), its `full` score and the score `left_out` without them, the `change`
    (`relative_change`: of the full score), its paired test's p (`change_p`) and whether that change is
    `within_noise`, its rank both ways and Kendall's τ of the two rankings (null: undefined; with no
    score to compare, as when nothing is judged, the ranks and the verdict are null too, never made up).
    `missing_topics` are the judged topics the run has no results for, left out of every run's comparison;
    `topics_unjudged_left_out` counts the topics nobody judged once the run's own items are left out, out
    of its comparison."""

    run: str
    unique_items: int
    unique_relevant: int
    missing_topics: list[str]
    topics_unjudged_left_out: int
    full: float | None
    left_out: float | None
    change: float | None
    relative_change: float | None
    change_p: float | None
    within_noise: bool | None
    rank_full: int | None
    rank_left_out: int | None
    kendall_tau: float | None


@dataclass(frozen=True)
class PoolBiasBody:
    """A pool's leave-one-run-out table (`services.pool_bias`) on `measure`, a change being noise when its
    p >= `noise_p`; the runs are scored and ranked over `compared_topics`, the judged topics every run
    has."""

    pool: str
    measure: str
    policy: str
    noise_p: float
    topics: int
    judged_topics: int
    not_judged_topics: list[str]
    compared_topics: int
    runs: list[PoolBiasRun]


#: A topic's two-stage verdict, and the overall one's counts (`TwoStageBody.verdicts`).
VERDICTS = ("fine", "ranking problem", "retrieval problem")


@dataclass(frozen=True)
class TwoStageTopic:
    """One topic with a relevant judged document: recall@k of the candidate run, nDCG@10 of the reranked
    run, and its verdict: fine, ranking problem or retrieval problem (`VERDICTS`)."""

    qid: str
    recall: float | None
    ndcg_10: float | None
    verdict: str


@dataclass(frozen=True)
class TwoStageBody:
    """The two-stage diagnosis of a candidate run and the run that reranks it (`services.two_stage`):
    `verdicts` counts the topics by verdict (`VERDICTS`), `verdict` says which stage fails most; the
    means are over the topics diagnosed (null: none). `candidate_missing` and `reranked_missing` name the
    topics with a relevant judged document that the candidate (recall 0) or the reranked run (nDCG 0)
    has no results for."""

    candidate: str
    reranked: str
    k: int
    recall_threshold: float
    ndcg_threshold: float
    mean_recall: float | None
    mean_ndcg_10: float | None
    verdicts: dict[str, int]
    verdict: str
    topics: list[TwoStageTopic]
    not_judged_topics: list[str]
    no_relevant_topics: list[str]
    candidate_missing: list[str]
    reranked_missing: list[str]

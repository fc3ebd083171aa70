"""The noise-floor report's answer, declared once as the dataclasses `evaluation.noise_floor` builds it
(`NoiseReport` and the bodies in it, the rater stability `Stability`); the API's serializers read them
(`labeling.bodies.BodySerializer`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tau:
    """Kendall's τ and τ_AP of two rankings of the runs (null: fewer than two runs to rank)."""

    tau: float | None
    tau_ap: float | None


@dataclass(frozen=True)
class SplitTau:
    """A measure's τ over the random halvings of the raters: mean and least, and τ_AP's mean (null: no
    halving ranked two runs)."""

    tau_mean: float | None
    tau_min: float | None
    tau_ap_mean: float | None


@dataclass(frozen=True)
class Stability:
    """Ranking stability across raters (:func:`stability`): a row per rater shown (of `raters_total`),
    `splits` halvings of the raters, each half aggregated by `split_policy` (the policy, or the default
    under rater:NAME or a model), τ of the halves by measure (`split_tau`) and, by measure then by pair
    `a<TAB>b`, the share of halvings that swap the pair (`swap_rate`). `runs_left_out` are the runs with
    no compared topic in some ranking: not in its τ.

    A rater's row holds `rater`, `votes`, `topics`, `compared_topics` (the topics both rankings rank the
    runs on, ``metrics.compared_topics``) and a `Tau` under each measure, a key of its own."""

    raters: list[dict[str, Any]]
    raters_shown: int
    raters_total: int
    splits: int
    split_policy: str
    runs_left_out: list[str]
    split_tau: dict[str, SplitTau]
    swap_rate: dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class NoiseSettings:
    """What a noise-floor report was computed with. `label_samples` is 0 when the raters are not measured
    (no item has two votes); `label_source` is what the label resamples are (:func:`label_source`): votes,
    each item's votes bootstrapped and aggregated by the policy; posterior, drawn from the model's
    posterior; one_vote (rater:NAME), one of each item's votes, a one-rater qrels."""

    topic_samples: int
    label_samples: int
    label_source: str
    splits: int
    alpha: float
    power: float
    unjudged: str


@dataclass(frozen=True)
class NoiseRun:
    """A run's means by measure over the judged topics it is scored on (`topics`), and by measure the
    raters' interval [low, high] (none when the raters are not measured); null: undefined."""

    run: str
    topics: int
    means: dict[str, float | None]
    raters: dict[str, list[float | None]]


@dataclass(frozen=True)
class NoisePair:
    """Two runs compared on a measure, over the topics both have: the difference, the raters' and the
    topics' half-widths, the topic bootstrap's interval [low, high] and p-value, the raters' swap rate and
    the verdict (null: undefined)."""

    a: str
    b: str
    delta: float | None
    topics: int
    raters_half_width: float | None
    topics_interval: list[float | None]
    topics_half_width: float | None
    p_value: float | None
    significant: bool
    swap_rate: float | None
    verdict: str


@dataclass(frozen=True)
class NoiseMeasure:
    """A measure's discriminative power, the spread of the runs' differences, the minimum detectable
    difference and the topic planner: the topics needed, by difference (null: undefined)."""

    label: str
    discriminative_power: float | None
    sd_of_differences: float | None
    minimum_detectable_difference: float | None
    planner: dict[str, int | None]


@dataclass(frozen=True)
class NoiseReport:
    """The noise-floor report of a campaign (:func:`report`): its runs, by measure every pair of runs
    (`pairs`) and the measure's summary (`measures_summary`), and the raters' stability. `key_measure`
    is the first measure (null: none)."""

    measures: list[str]
    key_measure: str | None
    seed: int
    settings: NoiseSettings
    judged_topics: int
    not_judged_topics: list[str]
    runs: list[NoiseRun]
    pairs: dict[str, list[NoisePair]]
    measures_summary: dict[str, NoiseMeasure]
    stability: Stability

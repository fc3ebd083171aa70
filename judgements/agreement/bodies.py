"""The agreement summary of a pool as it is answered (`summary.summary_body` builds it): the one
declaration of that answer, which the API's schema reads (`judgements.report_serializers`). Undefined is
None (null), as everywhere in `judgements.agreement`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kappa:
    """An overall Cohen's kappa, its Landis & Koch band ('undefined' when the kappa is) and its bootstrap
    interval; `n_undefined` resamples (whose kappa is undefined) are left out of the interval."""

    kappa: float | None
    band: str
    ci_low: float | None
    ci_high: float | None
    n_undefined: int


@dataclass(frozen=True)
class BinaryKappa(Kappa):
    """The binary Cohen's kappa: grades at or above the relevance `level` are relevant."""

    level: int


@dataclass(frozen=True)
class Bootstrap:
    """The settings of the bootstrap intervals: `n` resamples of `unit`s, `seed`, level 1 − `alpha`."""

    n: int
    seed: int
    alpha: float
    unit: str


@dataclass(frozen=True)
class Cohen:
    """Overall Cohen's kappa, unweighted, linear, quadratic and binary; one set of item resamples serves
    the four intervals."""

    unweighted: Kappa
    linear: Kappa
    quadratic: Kappa
    binary: BinaryKappa
    bootstrap: Bootstrap


@dataclass(frozen=True)
class Fleiss:
    """Fleiss' kappa over the items with the modal number of grades (`ratings_per_item`, null when no
    item has two); the others are dropped."""

    kappa: float | None
    n_items: int
    ratings_per_item: int | None
    n_items_dropped: int


@dataclass(frozen=True)
class Krippendorff:
    """Krippendorff's alpha at each level of measurement, over every graded judgement (value domain: the
    labels)."""

    nominal: float | None
    ordinal: float | None
    interval: float | None


@dataclass(frozen=True)
class _Kappas:
    """The four kappas of a pair of raters or a topic, and the interval of the kappa `ci_weights` names."""

    unweighted: float | None
    linear: float | None
    quadratic: float | None
    binary: float | None
    ci_low: float | None
    ci_high: float | None
    ci_weights: str


@dataclass(frozen=True)
class _PairOf:
    rater_a: str
    rater_b: str
    n_items: int


@dataclass(frozen=True)
class _TopicOf:
    topic: str
    n_items: int
    n_pairs: int


# `_Kappas` first among the bases: a dataclass takes its bases' fields from the last base on, so the
# pair's or topic's own come first, then the kappas, as the answer has always put them.
@dataclass(frozen=True)
class AgreementPair(_Kappas, _PairOf):
    """A pair of raters: the items both graded, their four kappas, the interval of the kappa `ci_weights`
    names, and their confusion matrix (rows: `rater_a`, in the order of `labels`)."""

    confusion: list[list[int]]


@dataclass(frozen=True)
class AgreementTopic(_Kappas, _TopicOf):
    """A topic: its items graded twice or more, its pairs of grades, its four kappas and the interval of
    the kappa `ci_weights` names."""


@dataclass(frozen=True)
class PairMatrix:
    """Raters × raters: the unweighted kappa of each pair (null on the diagonal and for pairs with nothing
    in common) and the items each pair shares."""

    raters: list[str]
    unweighted: list[list[float | None]]
    n_items: list[list[int]]


@dataclass(frozen=True)
class AgreementSummary:
    """Every agreement figure of a pool's judgements (`agreement_summary`); an undefined figure (a kappa
    of one grade only, an interval with no defined resample) is null. `topics` are worst unweighted kappa
    first, undefined last; `confusion` is overall, rows = the rater whose key sorts first."""

    labels: list[int]
    relevance_level: int
    n_judgements: int
    n_unrateable: int
    n_raters: int
    n_items: int
    n_items_paired: int
    n_pairs: int
    observed_agreement: float | None
    cohen: Cohen
    fleiss: Fleiss
    krippendorff: Krippendorff
    pairs: list[AgreementPair]
    pair_matrix: PairMatrix
    topics: list[AgreementTopic]
    confusion: list[list[int]]
    confusion_binary: list[list[int]]

"""Inter-rater agreement statistics (pure: numpy only, no Django).

Everything here is computed over the rubric's **full label set**, passed in explicitly as ``labels`` and
never inferred from the data: weights and chance agreement depend on which labels exist, not on which ones
happen to occur (for example a = [0,1,3,3,1,0], b = [0,3,3,1,1,0] has linear κ = 0.5 over labels 0–3, and the
wrong 0.625 if the labels are inferred).

Conventions shared by every function
------------------------------------
* **Undefined is ``None``, never NaN.** A statistic whose denominator is zero — no pairs at all, or chance
  disagreement of zero because every judgement falls on one label (where sklearn warns and returns NaN and
  statsmodels divides 0 by 0) — is returned as ``None``. ``None`` cannot slip silently into arithmetic, it
  serialises to JSON ``null``, and a report must print it as "undefined", never as a number.
* **Labels** are distinct ints in rubric order (ascending grades). Kappa weights use the *positions* in
  ``labels`` (|i − j| or (i − j)² for the i-th and j-th label), exactly like
  ``sklearn.metrics.cohen_kappa_score(labels=, weights=)``. A grade that is not in ``labels`` is a
  ``ValueError`` (sklearn silently drops such pairs; we do not).
* **Records** are judgements ``(item_key, topic_key, rater_key, grade)``: ``grade`` is an int, or ``None``
  for "unrateable", which takes no part in any agreement statistic (it is not a grade). Pass only the
  current revision of each judgement: the same rater twice on one item is a ``ValueError``. Keys are
  hashable; raters and topics are reported in sorted order (``repr`` order if the keys do not sort).
* **Pairs.** For record-level Cohen's kappa every unordered pair of distinct raters' graded judgements on
  one item contributes one (a, b) pair, with ``a`` the grade of the rater whose key sorts first. An item
  graded by k raters contributes k(k − 1)/2 pairs; an item graded once contributes none.
* **Bootstrap** intervals are percentile intervals over *items*: an item is resampled with all of its
  pairs (with ``items=None`` each pair is its own item). Resampling N items with replacement and summing
  their confusion matrices is implemented, exactly equal in distribution, as one multinomial draw over the
  distinct per-item confusion patterns, so 1,000 resamples cost about as much as one. Resamples whose
  kappa is undefined are left out and counted (``Interval.n_undefined``).

The statistics live in modules named for what they hold, each name importable from here: ``kappa``
(labels, weights, Cohen's kappa, bootstrap intervals), ``records`` (judgement records as arrays; kappas
overall, per rater pair, per topic), ``multi`` (Fleiss, Krippendorff) and ``summary`` (a pool's summary
for reports and releases).
"""

from judgements.agreement.kappa import (
    WEIGHTINGS,
    Interval,
    Level,
    Record,
    Weights,
    binarise_confusion,
    binary_kappa,
    bootstrap_interval,
    cohen_kappa,
    confusion_matrix,
    kappa_from_confusion,
    weight_matrix,
)
from judgements.agreement.multi import (
    FleissTable,
    fleiss_kappa,
    fleiss_table,
    krippendorff_alpha,
    krippendorff_alpha_from_counts,
)
from judgements.agreement.records import (
    PairAgreement,
    RatingData,
    Records,
    TopicAgreement,
    overall_kappa,
    pairwise_kappas,
    per_topic_kappa,
    rating_data,
)
from judgements.agreement.summary import (
    AgreementSummary,
    agreement_summary,
    landis_koch_band,
    noise_floor_sentence,
    summary_body,
)

__all__ = [
    "AgreementSummary",
    "FleissTable",
    "Interval",
    "Level",
    "PairAgreement",
    "RatingData",
    "Record",
    "Records",
    "TopicAgreement",
    "WEIGHTINGS",
    "Weights",
    "agreement_summary",
    "binarise_confusion",
    "binary_kappa",
    "bootstrap_interval",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "fleiss_table",
    "kappa_from_confusion",
    "krippendorff_alpha",
    "krippendorff_alpha_from_counts",
    "landis_koch_band",
    "noise_floor_sentence",
    "overall_kappa",
    "pairwise_kappas",
    "per_topic_kappa",
    "rating_data",
    "summary_body",
    "weight_matrix",
]

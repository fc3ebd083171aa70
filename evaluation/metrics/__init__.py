"""Ranking metrics with trec_eval's semantics, vectorised with numpy (pure: no Django).

Every metric takes a ``Ranked`` — the ranked lists of all topics, flattened into arrays, built by
``rank_lists`` — and returns one float64 value per topic (``Ranked.topics`` order). ``evaluate`` does it all
for a notebook: dicts or ``trec_io`` tables in, a ``Result`` with per-topic values and means out.

Conventions, exactly as trec_eval 10:

- The ranked list of a topic is its run rows ordered by score descending (as doubles), ties broken by
  docid descending in byte order (``strcmp(b, a)``); rank 1 is the first. The run's rank column is ignored.
- Each retrieved document has a label: its qrels grade if the qrels judge it with a grade >= 0; otherwise
  it is unjudged — either absent from the qrels (``UNPOOLED``) or present with a negative grade, "in the
  pool but not judged" (``UNJUDGED``).
- Relevant means judged with grade >= the relevance level (default 1). R = number of judged documents of
  the topic with grade >= the level, whether retrieved or not; N = judged documents with 0 <= grade < level.
- Unjudged policy ``nonrelevant`` (trec_eval's default): unjudged documents stay in the list and count as
  non-relevant everywhere (bpref and infAP have their own rules, see them). ``condensed`` (trec_eval -J):
  unjudged documents are removed from the list first and the rest re-ranked 1, 2, ...
- Depth (trec_eval -M): only the first ``depth`` documents of each list are used, cut before condensing.
- A measure with a zero denominator (R = 0, an ideal DCG of 0) is 0.
- Averaging ``common`` (trec_eval's default): over qrels topics the run has. ``all`` (trec_eval -c): over all
  qrels topics, a topic the run lacks scoring 0 on every measure (num_rel still counts its R). Run topics
  without qrels are ignored, as trec_eval does. The aggregate of ``num_ret``, ``num_rel`` and
  ``num_rel_ret`` is their sum, as trec_eval prints it; every other measure is averaged.

The package, by what each module holds (every public name is importable from ``evaluation.metrics``):

- ``ranked``: ``Ranked``, ``rank_lists``, the labels ``UNPOOLED`` / ``UNJUDGED``, the option types and the
  helpers the measure modules share; ``join``: the join of the run's rows to the qrels that labels them.
- ``sets``: the counts (num_ret, num_rel, ...) and the set measures (set_P, set_F, utility, ...).
- ``binary``: binary-relevance measures of the ranking (P, recall, map, bpref, infAP, iprec_at_recall, ...),
  judged, unj and relstring.
- ``graded``: measures with graded gains (ndcg, ndcg_cut, dcg, G, ndcg_rel, Rndcg, rbp, rbp_resid).
- ``measures``: trec_eval's measure families, its and pytrec_eval's measure syntax, the function of each.
- ``scoring``: ``evaluate``, ``Result``, the ``all`` line's aggregates, ``split_judged``, ``segment_means``.
- ``significance``: paired tests between two runs' per-topic values.
"""

from __future__ import annotations

from evaluation.metrics.binary import (
    INFAP_EPSILON,
    IPREC_FRACTIONS,
    P_k,
    Rprec,
    Rprec_mult,
    binG,
    bpref,
    eleven_pt_avg,
    infAP,
    iprec_at_recall,
    judged_k,
    map,
    map_cut_k,
    recall_k,
    recip_rank,
    relative_P_k,
    relstring,
    success_k,
    unj_k,
)
from evaluation.metrics.graded import (
    G,
    Rndcg,
    dcg,
    ideal_dcg,
    ndcg,
    ndcg_cut_k,
    ndcg_rel,
    rbp,
    rbp_resid,
)
from evaluation.metrics.measures import (
    DEFAULT_CUTOFFS,
    FAMILIES,
    MEASURE_FAMILIES,
    NOT_SUPPORTED,
    RPREC_MULT_FRACTIONS,
    Family,
    Measure,
    measures_as_asked,
    parse_measures,
    plan_measures,
    supported_measures,
)
from evaluation.metrics.ranked import (
    UNJUDGED,
    UNPOOLED,
    Average,
    Gain,
    Ranked,
    Rows,
    Unjudged,
    Version,
    rank_lists,
)
from evaluation.metrics.scoring import (
    MIN_GEO_MEAN,
    JudgedSplit,
    MissingTopicsWarning,
    Result,
    compared_topics,
    evaluate,
    segment_means,
    split_judged,
    summary_of,
)
from evaluation.metrics.sets import (
    num_nonrel_judged_ret,
    num_rel,
    num_rel_ret,
    num_ret,
    set_F,
    set_map,
    set_P,
    set_recall,
    set_relative_P,
    utility,
)
from evaluation.metrics.significance import (
    MIN_COMMON_TOPICS,
    PairedTest,
    paired_randomisation_test,
    paired_t_test,
)

__all__ = [
    "DEFAULT_CUTOFFS",
    "FAMILIES",
    "G",
    "INFAP_EPSILON",
    "IPREC_FRACTIONS",
    "MEASURE_FAMILIES",
    "MIN_GEO_MEAN",
    "NOT_SUPPORTED",
    "RPREC_MULT_FRACTIONS",
    "UNJUDGED",
    "UNPOOLED",
    "Average",
    "Family",
    "Gain",
    "JudgedSplit",
    "Measure",
    "MissingTopicsWarning",
    "PairedTest",
    "Ranked",
    "Result",
    "Rows",
    "Unjudged",
    "Version",
    "P_k",
    "Rndcg",
    "Rprec",
    "Rprec_mult",
    "binG",
    "bpref",
    "compared_topics",
    "dcg",
    "eleven_pt_avg",
    "evaluate",
    "ideal_dcg",
    "infAP",
    "iprec_at_recall",
    "judged_k",
    "map",
    "map_cut_k",
    "ndcg",
    "ndcg_cut_k",
    "ndcg_rel",
    "num_nonrel_judged_ret",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "MIN_COMMON_TOPICS",
    "paired_randomisation_test",
    "paired_t_test",
    "measures_as_asked",
    "parse_measures",
    "plan_measures",
    "rank_lists",
    "rbp",
    "rbp_resid",
    "recall_k",
    "recip_rank",
    "relative_P_k",
    "relstring",
    "segment_means",
    "set_F",
    "set_P",
    "set_map",
    "set_recall",
    "set_relative_P",
    "split_judged",
    "success_k",
    "summary_of",
    "supported_measures",
    "unj_k",
    "utility",
]

"""The agreement summary of a pool for reports and releases, its Landis & Koch bands and its one
sentence on the noise floor."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from judgements.agreement.bodies import (
    AgreementPair,
    AgreementSummary,
    AgreementTopic,
    BinaryKappa,
    Bootstrap,
    Cohen,
    Fleiss,
    Kappa,
    Krippendorff,
    PairMatrix,
)
from judgements.agreement.kappa import (
    _KAPPA_KINDS,
    Interval,
    Weights,
    _check_bootstrap,
    _check_weights,
    _confusion_from_positions,
    _interval,
    _kappa_batch,
    _resampled_confusions,
    _to_optional,
    binarise_confusion,
    weight_matrix,
)
from judgements.agreement.multi import _fleiss_table, fleiss_kappa, krippendorff_alpha_from_counts
from judgements.agreement.records import _grouped_confusions, rating_data
from labeling.bodies import as_dict

# --------------------------------------------------------------------------------------------------------
# Summary for reports
# --------------------------------------------------------------------------------------------------------

_BANDS: tuple[tuple[float, str], ...] = (
    (0.0, "poor"),
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
)


def landis_koch_band(kappa: float | None) -> str:
    """Landis & Koch (1977) band: < 0 poor, 0–0.20 slight, 0.21–0.40 fair, 0.41–0.60 moderate,
    0.61–0.80 substantial, 0.81–1 almost perfect (upper bounds inclusive); ``"undefined"`` for None."""
    if kappa is None or math.isnan(kappa):
        return "undefined"
    if kappa < 0.0:
        return "poor"
    for upper, name in _BANDS[1:]:
        if kappa <= upper:
            return name
    return "almost perfect"


def _json_key(key: Hashable) -> Any:
    if isinstance(key, bool) or not isinstance(key, str | int | float | np.integer):
        return str(key)
    return key.item() if isinstance(key, np.integer) else key


_K = TypeVar("_K", bound=Kappa)


def summary_body(
    records: Iterable[Sequence[Any]],
    *,
    labels: Sequence[int],
    relevance_level: int,
    seed: int = 0,
    n_bootstrap: int = 1000,
    alpha: float = 0.05,
    weights: Weights = None,
) -> AgreementSummary:
    """Every agreement figure for a pool's judgements (``None`` = undefined).

    Keys: ``labels``, ``relevance_level``, counts (``n_judgements``, ``n_unrateable``, ``n_raters`` who
    graded anything, ``n_items`` with a grade, ``n_items_paired`` with ≥ 2 grades, ``n_pairs``),
    ``observed_agreement`` (share of pairs with equal grades), ``cohen`` (overall ``unweighted``,
    ``linear``, ``quadratic``, ``binary`` — each ``{kappa, band, ci_low, ci_high, n_undefined}`` — and the
    ``bootstrap`` settings; one set of item resamples serves all four), ``fleiss`` (over the items with
    the modal number of grades), ``krippendorff`` (``nominal``/``ordinal``/``interval`` over every
    graded judgement, value domain = labels), ``pairs`` (one entry per rater pair with its kappas,
    unweighted interval and confusion), ``pair_matrix`` (raters × raters unweighted kappa and item
    counts, ``None`` on the diagonal and for pairs with nothing in common), ``topics`` (per topic, worst
    unweighted kappa first, undefined last, with the unweighted interval), ``confusion`` (overall, rows =
    the rater whose key sorts first) and ``confusion_binary``.

    The intervals of each pair and each topic (``ci_low``, ``ci_high``) are those of the kappa with the
    ``weights`` asked for (unweighted by default), named in the entry's ``ci_weights``.
    """
    _check_bootstrap(n_bootstrap, alpha)
    _check_weights(weights)
    asked = weights or "unweighted"
    data = rating_data(records, labels=labels)
    lab = data.labels
    k = lab.size
    w = {
        "unweighted": weight_matrix(k, None),
        "linear": weight_matrix(k, "linear"),
        "quadratic": weight_matrix(k, "quadratic"),
    }
    w2 = weight_matrix(2, None)

    def kappas_of(confs: np.ndarray) -> dict[str, np.ndarray]:
        out = {name: _kappa_batch(confs, wm) for name, wm in w.items()}
        out["binary"] = _kappa_batch(binarise_confusion(confs, labels=lab, level=relevance_level), w2)
        return out

    def boot(
        select: np.ndarray | None, rng: np.random.Generator, *, all_kinds: bool = True
    ) -> dict[str, np.ndarray] | None:
        conf_items = data.item_confusions(select)
        if conf_items.shape[0] == 0:
            return None
        confs = _resampled_confusions(conf_items, n_bootstrap, rng)
        if all_kinds:
            return kappas_of(confs)
        return {asked: _kappa_batch(confs, w[asked])}

    def groups(keys: np.ndarray) -> dict[int, np.ndarray]:
        """Pair indices per group key, in one sort rather than one scan per group."""
        if keys.size == 0:
            return {}
        order = np.argsort(keys, kind="stable")
        uniq, starts = np.unique(keys[order], return_index=True)
        return dict(zip(uniq.tolist(), np.split(order, starts[1:]), strict=True))

    def iv(samples: dict[str, np.ndarray] | None, name: str) -> Interval:
        if samples is None:
            return Interval(None, None, n_bootstrap, n_bootstrap, alpha, seed)
        return _interval(samples[name], alpha=alpha, n=n_bootstrap, seed=seed)

    def fig(value: float | np.ndarray) -> float | None:
        return _to_optional(float(value))

    overall_conf = _confusion_from_positions(data.pair_a, data.pair_b, k)
    point = kappas_of(overall_conf)
    samples = boot(None, np.random.default_rng(seed))

    def overall(name: str, kind: type[_K], **more: Any) -> _K:
        kappa = fig(point[name])
        interval = iv(samples, name)
        return kind(kappa=kappa, band=landis_koch_band(kappa), ci_low=interval.low, ci_high=interval.high,
                    n_undefined=interval.n_undefined, **more)  # fmt: skip

    cohen = Cohen(
        unweighted=overall("unweighted", Kappa),
        linear=overall("linear", Kappa),
        quadratic=overall("quadratic", Kappa),
        binary=overall("binary", BinaryKappa, level=relevance_level),
        bootstrap=Bootstrap(n=n_bootstrap, seed=seed, alpha=alpha, unit="item"),
    )

    # Per rater pair.
    n_r = len(data.raters)
    pair_group = data.pair_rater_a * n_r + data.pair_rater_b
    pair_confs = _grouped_confusions(data, pair_group, n_r * n_r)
    pair_kappas = kappas_of(pair_confs)
    pairs: list[AgreementPair] = []
    matrix: list[list[float | None]] = [[None] * n_r for _ in range(n_r)]
    matrix_n: list[list[int]] = [[0] * n_r for _ in range(n_r)]
    for g, select in groups(pair_group).items():
        ra, rb = divmod(g, n_r)
        samples_g = boot(select, np.random.default_rng([seed, 1, g]), all_kinds=False)
        interval = iv(samples_g, asked)
        pair = AgreementPair(
            rater_a=_json_key(data.raters[ra]),
            rater_b=_json_key(data.raters[rb]),
            n_items=int(pair_confs[g].sum()),
            **{name: fig(pair_kappas[name][g]) for name in _KAPPA_KINDS},
            ci_low=interval.low,
            ci_high=interval.high,
            ci_weights=asked,
            confusion=pair_confs[g].tolist(),
        )
        pairs.append(pair)
        matrix[ra][rb] = matrix[rb][ra] = pair.unweighted
        matrix_n[ra][rb] = matrix_n[rb][ra] = pair.n_items

    # Per topic.
    n_t = len(data.topics)
    pair_topic = data.item_topic[data.pair_item]
    topic_confs = _grouped_confusions(data, pair_topic, n_t)
    topic_kappas = kappas_of(topic_confs)
    topic_items = np.bincount(data.item_topic[np.unique(data.pair_item)], minlength=n_t)
    topics: list[AgreementTopic] = []
    topic_pairs = groups(pair_topic)
    for t in range(n_t):
        select_t = topic_pairs.get(t)
        samples_t = (
            None if select_t is None else boot(select_t, np.random.default_rng([seed, 2, t]), all_kinds=False)
        )
        interval = iv(samples_t, asked)
        topics.append(
            AgreementTopic(
                topic=_json_key(data.topics[t]),
                n_items=int(topic_items[t]),
                n_pairs=int(topic_confs[t].sum()),
                **{name: fig(topic_kappas[name][t]) for name in _KAPPA_KINDS},
                ci_low=interval.low,
                ci_high=interval.high,
                ci_weights=asked,
            )
        )
    topics.sort(key=lambda e: (e.unweighted is None, e.unweighted or 0.0))

    ft = _fleiss_table(data)
    fleiss = Fleiss(
        kappa=fleiss_kappa(ft.table) if ft.n_ratings else None,
        n_items=len(ft.items),
        ratings_per_item=ft.n_ratings or None,
        n_items_dropped=ft.n_dropped,
    )
    # Krippendorff's ordinal and interval levels order the grades by value, whatever the order of labels.
    by_value = np.argsort(lab, kind="stable")
    values = lab[by_value].astype(np.float64).tolist()
    kripp = Krippendorff(
        **{
            level: krippendorff_alpha_from_counts(data.item_counts[:, by_value], values=values, level=level)
            for level in ("nominal", "ordinal", "interval")
        }
    )

    n_pairs = data.n_pairs
    return AgreementSummary(
        labels=lab.tolist(),
        relevance_level=relevance_level,
        n_judgements=data.n_judgements,
        n_unrateable=data.n_unrateable,
        n_raters=len(data.graded_raters),
        n_items=int((data.item_counts.sum(axis=1) >= 1).sum()),
        n_items_paired=int((data.item_counts.sum(axis=1) >= 2).sum()),
        n_pairs=n_pairs,
        observed_agreement=float(np.trace(overall_conf) / n_pairs) if n_pairs else None,
        cohen=cohen,
        fleiss=fleiss,
        krippendorff=kripp,
        pairs=pairs,
        pair_matrix=PairMatrix(
            raters=[_json_key(r) for r in data.raters],
            unweighted=matrix,
            n_items=matrix_n,
        ),
        topics=topics,
        confusion=overall_conf.tolist(),
        confusion_binary=binarise_confusion(overall_conf, labels=lab, level=relevance_level).tolist(),
    )


#: `summary_body` (the same arguments) as a JSON-serialisable dict.
agreement_summary = as_dict(summary_body)


def _fmt(x: float) -> str:
    return f"{x:.2f}".replace("-", "−")


def noise_floor_sentence(summary: AgreementSummary) -> str:
    """One plain sentence on what the overall unweighted Cohen's kappa of ``summary`` (`summary_body`)
    means for the noise floor of metrics computed on these labels."""
    cohen, observed = summary.cohen.unweighted, summary.observed_agreement
    n_items, n_pairs = summary.n_items_paired, summary.n_pairs
    kappa = cohen.kappa
    if kappa is None:
        if n_pairs == 0:
            return (
                "Agreement is undefined: no item was graded by two raters, so the label noise of these "
                "qrels is unknown and no noise floor can be stated for metrics built on them."
            )
        return (
            f"Agreement is undefined: all {n_pairs} paired judgements fall on one and the same grade, so "
            "chance agreement is total and the label noise of these qrels cannot be estimated."
        )
    band = cohen.band
    ci = ""
    if cohen.ci_low is not None and cohen.ci_high is not None:
        ci = f", 95% CI {_fmt(cohen.ci_low)}–{_fmt(cohen.ci_high)}"
    disagree = 1.0 - (observed or 0.0)
    size = f"{n_items} item{'s' if n_items != 1 else ''} judged twice or more"
    head = f"Raters agree at κ={_fmt(kappa)} ({band}{ci}; {size})"
    if kappa > 0.8:
        return (
            f"{head} and give different grades on {disagree:.0%} of paired judgements: the labels are "
            "reliable, though differences between runs as small as the effect of relabelling that share "
            "of documents are still within the noise floor of metrics built on them."
        )
    if kappa > 0.4:
        return (
            f"{head} but give different grades on {disagree:.0%} of paired judgements: differences between "
            "runs smaller than the effect of relabelling that share of documents are within the label "
            "noise of metrics built on these labels and should not be trusted."
        )
    return (
        f"{head} and give different grades on {disagree:.0%} of paired judgements: the labels are too "
        "noisy for small differences between runs to mean anything — fix the rubric or adjudicate before "
        "trusting metrics built on them."
    )

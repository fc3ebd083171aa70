"""Scoring a pool's runs on its labels: reports under both unjudged policies, per segment, with paired
significance; the leave-one-run-out pool-bias table; the two-stage (retrieval vs ranking) diagnosis.

Over 400 lines on purpose: the three read a pool's current labels and its runs the same way and share the
rule of which topics are judged (`metrics.split_judged`), kept in one module so that it stays written
once; each answer is declared once, as the dataclass it is built as (`ReportBody`, `PoolBiasBody`,
`TwoStageBody`: the API's serializers read them), beside the function that builds it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any, cast, get_args

import numpy as np

from evaluation import metrics
from evaluation.report_bodies import (
    VERDICTS,
    PoolBiasBody,
    PoolBiasRun,
    ReportBody,
    ReportJudge,
    ReportRun,
    Significance,
    TwoStageBody,
    TwoStageTopic,
)
from judgements.aggregation import DEFAULT_POLICY
from judgements.releases import current_labels, current_qrels
from pooling.errors import Refused
from pooling.models import Pool, Provenance, Run, RunRow

#: What these services raise for a parameter that names nothing: a ValueError (a policy that does not
#: parse, a run the collection does not have) or a refusal (`rater:NAME` of no user). Callers answer 400.
PARAMETER_ERRORS = (ValueError, Refused)

#: The report's averagings, `metrics.evaluate`'s `average`: `common`, over the judged topics a run has
#: (trec_eval's default); `all`, over every judged topic, one the run lacks scoring 0 (trec_eval -c).
AVERAGES: tuple[str, ...] = get_args(metrics.Average)
MEASURES = ("ndcg_cut_10", "P_10", "map", "recall_100", "recip_rank")
KEY_MEASURE = "ndcg_cut_10"
#: A change smaller than the noise: its paired randomisation test over the topics has p >= this.
NOISE_P = 0.05


def run_as_dict(*, run: Run, qids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """A stored run as `{qid: {docid: score}}` (optionally only some topics), read in one query."""
    rows = RunRow.objects.filter(run=run)
    if qids is not None:
        rows = rows.filter(topic__qid__in=list(qids))
    result: dict[str, dict[str, float]] = {}
    for qid, docid, score in rows.values_list("topic__qid", "document__docid", "score").iterator(
        chunk_size=20000
    ):
        result.setdefault(qid, {})[docid] = score
    return result


def _clean(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(value, 6)


def _runs(pool: Pool, names: Sequence[str] | None) -> list[Run]:
    """The runs named (every run of the collection without names), by name; an unknown name is refused."""
    if names:
        return sorted(Run.objects.named(pool.collection, names), key=lambda run: run.name)
    return list(Run.objects.filter(collection=pool.collection_id).order_by("name"))


def pool_report(
    *,
    pool: Pool,
    policy: str = DEFAULT_POLICY,
    gain: metrics.Gain = "linear",
    measures: Sequence[str] = MEASURES,
    runs: Sequence[str] | None = None,
    n_permutations: int = 5000,
    judge: str | None = None,
    average: metrics.Average = "common",
) -> dict[str, Any]:
    """Every run of the pool's collection scored on the pool's current labels (-1 for unjudged), under
    both unjudged policies (`nonrelevant`, trec_eval's default, and `condensed`, trec_eval -J), with
    judged@10 beside, per segment, and paired t and randomisation tests between every two runs on
    nDCG@10 (nonrelevant). Contributing runs are flagged: a run outside the pool is scored on labels it
    did not help make, and its judged@10 says how far to trust that. Topics nobody judged
    (`split_judged`) are listed apart, per segment too, and left out of every mean and test.

    `average` is `metrics.evaluate`'s: with `common` (trec_eval's default) a run's means are over the
    judged topics it has results for: `topics` counts them, `missing_topics` names the judged topics it
    lacks and `warnings` carries `metrics.evaluate`'s note saying so; per segment, `segments_missing` names
    them (a segment whose judged topics the run all lacks has no mean for it, not a "not judged"), and
    every paired test is over the topics both runs have. With `all` (trec_eval -c) a judged topic a run
    lacks scores 0 on every measure, in its means, segments, model share and paired tests (`topics` is then
    every judged topic; `missing_topics` and `segments_missing` still name the ones it lacks). Either way
    the topics averaged over are the judged ones: a topic nobody judged is not in `split_judged`'s qrels,
    so -c does not add it.

    With `judge` (an admitted model judge of the pool) the items people left pending take its labels, as
    a release with that judge holds them (`releases.current_labels`), and every run's `model_10` says how
    much of its score rests on them: the share of its top 10 documents (per topic, averaged over the
    judged topics) whose label is the model's. Without, `model_10` is 0; None for a run with no judged
    topic.

    The answer is a `ReportBody`, as a dict."""
    topics = {topic.qid: topic.segments or [] for topic in pool.topics()}
    current = current_labels(pool=pool, policy=policy, judge=judge)
    from_model = current.from_model
    judge_info: ReportJudge | None = None
    if judge:
        from judgements.judges import admitted_judge

        found = admitted_judge(pool=pool, name=judge)
        judge_info = ReportJudge(name=found.name, labels=len(from_model), reason=found.gate.get("reason", ""))
    split = metrics.split_judged(current.qrels, topics=topics)
    qrels = split.qrels
    contributing = set(pool.pool_runs.values_list("run__name", flat=True))
    names = list(dict.fromkeys([*measures, "judged_10"]))
    rows: list[ReportRun] = []
    per_topic: dict[str, dict[str, float]] = {}
    segments: dict[str, dict[str, dict[str, float | None]]] = {}
    segments_missing: dict[str, dict[str, list[str]]] = {}
    for run in _runs(pool, runs):
        run_dict = run_as_dict(run=run, qids=topics)
        if not run_dict:
            continue
        scored = {}
        for unjudged in ("nonrelevant", "condensed"):
            with _quiet():
                scored[unjudged] = metrics.evaluate(
                    qrels,
                    run_dict,
                    names,
                    relevance_level=pool.relevance_level,
                    gain=gain,
                    unjudged=unjudged,
                    average=average,
                )
        base = scored["nonrelevant"]
        rows.append(
            ReportRun(
                run=run.name,
                contributing=run.name in contributing,
                topics=len(base.topics),
                missing_topics=list(base.missing_topics),
                warnings=list(base.warnings),
                nonrelevant={m: _clean(v) for m, v in base.means.items()},
                # judged@10 once, of the run as it is (`judged_10`): condensed, every document left is judged
                condensed={m: _clean(v) for m, v in scored["condensed"].means.items() if m != "judged_10"},
                judged_10=_clean(base.means["judged_10"]),
                model_10=_clean(_model_share(run_dict, base.topics, from_model)),
            )
        )
        per_topic[run.name] = base.topic_values(KEY_MEASURE)
        by_segment = base.segment_means({q: s for q, s in topics.items() if s})
        segments[run.name] = {
            seg: {m: _clean(v) for m, v in means.items() if m in ("num_q", KEY_MEASURE, "judged_10")}
            for seg, means in by_segment.items()
        }
        lacking: dict[str, list[str]] = {}
        for qid in base.missing_topics:
            for seg in dict.fromkeys(topics.get(qid, ())):
                lacking.setdefault(seg, []).append(qid)
        segments_missing[run.name] = lacking
    segments_not_judged: dict[str, int] = {}
    for qid in split.not_judged:
        for seg in dict.fromkeys(topics.get(qid, ())):
            segments_not_judged[seg] = segments_not_judged.get(seg, 0) + 1
    tests: list[Significance] = []
    for a, b in itertools.combinations(sorted(per_topic), 2):
        try:
            t = metrics.paired_t_test(per_topic[a], per_topic[b])
            r = metrics.paired_randomisation_test(per_topic[a], per_topic[b], n_permutations=n_permutations)
        except ValueError:
            continue
        tests.append(
            Significance(
                a=a,
                b=b,
                n=t.n,
                mean_difference=_clean(t.mean_difference),
                t_p=_clean(t.p_value),
                randomisation_p=_clean(r.p_value),
            )
        )
    body = ReportBody(
        pool=pool.name,
        policy=policy,
        gain=gain,
        average=average,
        relevance_level=pool.relevance_level,
        measures=names,
        key_measure=KEY_MEASURE,
        runs=rows,
        segments=segments,
        segments_missing=segments_missing,
        segments_not_judged=segments_not_judged,
        significance=tests,
        topics=len(topics),
        judged_topics=len(split.judged),
        not_judged_topics=list(split.not_judged),
        judge=judge_info,
    )
    return asdict(body)


def _model_share(
    run_dict: dict[str, dict[str, float]],
    qids: Sequence[str],
    from_model: frozenset[tuple[str, str]],
    k: int = 10,
) -> float | None:
    """Mean over `qids` of the share of the run's top `k` (trec_eval order) whose label is a model's; None
    over no topic (a run with no judged topic has no score for it to rest on)."""
    if not qids:
        return None
    if not from_model:
        return 0.0
    from pooling.strategies import trec_order

    shares = []
    for qid in qids:
        top = trec_order(run_dict.get(qid, {}).items())[:k]
        shares.append(sum((qid, docid) in from_model for docid in top) / k)
    return sum(shares) / len(shares)


class _quiet:
    """Silence the missing-topics warning: reports carry it (`Result.warnings`) and the topic counts."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", metrics.MissingTopicsWarning)

    def __exit__(self, *exc: Any) -> None:
        self._catch.__exit__(*exc)


def unique_items(*, pool: Pool) -> dict[str, set[tuple[str, str]]]:
    """Per contributing run: the (qid, docid) items no other run of the pool put in."""
    owners: dict[tuple[str, str], set[str]] = {}
    rows = Provenance.objects.filter(item__pool=pool, item__selected=True).values_list(
        "item__topic__qid", "item__document__docid", "run__name"
    )
    for qid, docid, run_name in rows.iterator(chunk_size=20000):
        owners.setdefault((qid, docid), set()).add(run_name)
    unique: dict[str, set[tuple[str, str]]] = {
        name: set() for name in pool.pool_runs.values_list("run__name", flat=True)
    }
    for item, names in owners.items():
        if len(names) == 1:
            unique.setdefault(next(iter(names)), set()).add(item)
    return unique


def pool_bias(
    *, pool: Pool, policy: str = DEFAULT_POLICY, measure: str = KEY_MEASURE, gain: metrics.Gain = "linear"
) -> dict[str, Any]:
    """Leave-one-run-out (Zobel 1998): for each contributing run, the items only it contributed become
    unjudged; the run is re-scored, and the system ranking with that score is compared with the full one
    (Kendall's τ). A run that loses much was helped by being in the pool: a new run outside it would be
    underestimated by about as much.

    Only judged topics are scored (`split_judged`; the others are listed apart). A left-out item becomes
    unjudged (-1), so a topic keeps its place in the comparison, unless nothing of it stays judged (every
    judged item of it was the run's own): such a topic is then one nobody judged, left out of the run's
    comparison (`topics_unjudged_left_out`), never scored 0. The change is paired, over the topics judged
    both ways; `left_out` is the full mean plus that change, so that it ranks among the other runs' full
    means. A change is `within_noise` when the paired randomisation test of the run's per-topic scores,
    full against left out, has p >= `NOISE_P` (or the change is 0): the topics cannot tell it from chance.

    The runs are ranked against each other, so over the same topics: the judged topics every one of them
    has results for (`compared_topics`, `metrics.compared_topics`' rule, the noise floor's too); a run's
    `missing_topics` are the judged topics it lacks, which leave every run's `full` (and its change)
    without them.

    The answer is a `PoolBiasBody`, as a dict."""
    from pooling import strategies

    qids = {topic.qid for topic in pool.topics()}
    split = metrics.split_judged(current_qrels(pool=pool, policy=policy), topics=qids)
    qrels = split.qrels
    unique = unique_items(pool=pool)
    runs = {run.name: run_as_dict(run=run, qids=qids) for run in _runs(pool, sorted(unique))}

    def score(run_dict: dict[str, dict[str, float]], labels: dict[str, dict[str, int]]) -> dict[str, float]:
        with _quiet():
            result = metrics.evaluate(
                labels, run_dict, [measure], relevance_level=pool.relevance_level, gain=gain
            )
        return result.topic_values(measure)

    def mean(values: dict[str, float]) -> float:
        return sum(values.values()) / len(values) if values else float("nan")

    scored = {name: score(run_dict, qrels) for name, run_dict in runs.items() if run_dict}
    has = [[q in values for q in split.judged] for values in scored.values()]
    common = metrics.compared_topics(np.array(has, dtype=bool).reshape(len(has), len(split.judged)))
    shared = {q for q, kept in zip(split.judged, common.tolist(), strict=True) if kept}
    per_topic = {name: {q: v for q, v in values.items() if q in shared} for name, values in scored.items()}
    full = {name: mean(values) for name, values in per_topic.items()}
    rows: list[PoolBiasRun] = []
    for name in sorted(full):
        removed = unique.get(name, set())
        reduced = {qid: dict(docs) for qid, docs in qrels.items()}
        relevant_removed = 0
        for qid, docid in removed:
            grade = reduced.get(qid, {}).get(docid)
            if grade is None:
                continue
            reduced[qid][docid] = -1
            if grade >= pool.relevance_level:
                relevant_removed += 1
        unjudged_now = set(metrics.split_judged(reduced).not_judged)
        left_out_topics = {
            q: v for q, v in score(runs[name], reduced).items() if q in shared and q not in unjudged_now
        }
        full_topics = {q: per_topic[name][q] for q in left_out_topics}
        change = mean(left_out_topics) - mean(full_topics)
        left_out = full[name] + change
        if change == 0:
            p_value = 1.0
        elif len(left_out_topics) >= metrics.MIN_COMMON_TOPICS:
            test = metrics.paired_randomisation_test(left_out_topics, full_topics, n_permutations=2000)
            p_value = test.p_value
        else:  # one judged topic tests nothing: the change is not told from chance
            p_value = math.nan
        # Ranks, τ and the verdict only where there are scores: a run with no score (no judged topic to
        # compare on, with or without it) has none of them, rather than a rank or "within the noise"
        # made up from NaN. The ranks are among the runs that have a full score.
        ranked = {n: v for n, v in full.items() if not math.isnan(v)}
        others = {**ranked, name: left_out}
        undefined = math.isnan(full[name]) or math.isnan(left_out)
        tau = math.nan if undefined else strategies.kendall_tau(ranked, others)
        rank_full = None if math.isnan(full[name]) else _rank(ranked, name)
        rank_loo = None if undefined else _rank(others, name)
        within_noise = None if math.isnan(change) else bool(not p_value < NOISE_P)  # NaN p: untested
        rows.append(
            PoolBiasRun(
                run=name,
                unique_items=len(removed),
                unique_relevant=relevant_removed,
                missing_topics=sorted(set(split.judged) - set(scored[name])),
                topics_unjudged_left_out=len(set(per_topic[name]) & unjudged_now),
                full=_clean(full[name]),
                left_out=_clean(left_out),
                change=_clean(change),
                relative_change=_clean(change / full[name]) if full[name] else None,
                change_p=_clean(p_value),
                within_noise=within_noise,
                rank_full=rank_full,
                rank_left_out=rank_loo,
                kendall_tau=_clean(tau),
            )
        )
    rows.sort(key=lambda row: row.change if row.change is not None else 0.0)
    body = PoolBiasBody(
        pool=pool.name,
        measure=measure,
        policy=policy,
        noise_p=NOISE_P,
        topics=len(split.judged) + len(split.not_judged),
        judged_topics=len(split.judged),
        not_judged_topics=list(split.not_judged),
        compared_topics=len(shared),
        runs=rows,
    )
    return asdict(body)


def _rank(scores: dict[str, float], name: str) -> int:
    """`name`'s place (1 = best) among `scores`, higher first."""
    return sorted(scores, key=lambda n: -scores[n]).index(name) + 1


def two_stage(
    *,
    pool: Pool,
    candidate: str,
    reranked: str,
    k: int = 100,
    policy: str = DEFAULT_POLICY,
    recall_threshold: float = 0.5,
    ndcg_threshold: float = 0.5,
) -> dict[str, Any]:
    """recall@k of a candidate-generation run beside nDCG@10 of the run that reranks it, per topic, with a
    verdict: low nDCG with high recall is a ranking problem (the reranker misses what the candidates
    hold), low with low recall a retrieval problem (the relevant documents never reached the reranker).

    Only topics with a relevant judged document get a verdict and count in the means. A topic nobody
    judged (`split_judged`) is "not judged", and a judged topic without any relevant document has
    nothing to retrieve or rank: both are listed apart, never as failures. A topic with a relevant judged
    document that a run has no results for scores 0 for it (`average="all"`, trec_eval -c): the candidate
    retrieved nothing (recall 0, a retrieval problem), the reranked run ranked nothing (nDCG 0); such
    topics are diagnosed like the others and named in `candidate_missing` and `reranked_missing`.

    The answer is a `TwoStageBody`, as a dict."""
    qids = {topic.qid for topic in pool.topics()}
    split = metrics.split_judged(current_qrels(pool=pool, policy=policy), topics=qids)
    qrels = split.qrels
    runs = {r.name: r for r in _runs(pool, [candidate, reranked])}
    no_relevant = sorted(
        qid for qid, docs in qrels.items() if not any(g >= pool.relevance_level for g in docs.values())
    )
    scored = {qid: docs for qid, docs in qrels.items() if qid not in set(no_relevant)}
    with _quiet():
        recall = metrics.evaluate(
            scored,
            run_as_dict(run=runs[candidate], qids=qids),
            [f"recall_{k}"],
            relevance_level=pool.relevance_level,
            average="all",
        )
        ndcg = metrics.evaluate(
            scored,
            run_as_dict(run=runs[reranked], qids=qids),
            ["ndcg_cut_10"],
            relevance_level=pool.relevance_level,
            average="all",
        )
    recall_by_topic = recall.topic_values(f"recall_{k}")
    ndcg_by_topic = ndcg.topic_values("ndcg_cut_10")
    topics: list[TwoStageTopic] = []
    verdicts = dict.fromkeys(VERDICTS, 0)
    for qid in sorted(set(recall_by_topic) & set(ndcg_by_topic)):
        r, n = recall_by_topic[qid], ndcg_by_topic[qid]
        verdict = (
            "fine"
            if n >= ndcg_threshold
            else ("ranking problem" if r >= recall_threshold else "retrieval problem")
        )
        verdicts[verdict] += 1
        topics.append(TwoStageTopic(qid=qid, recall=_clean(r), ndcg_10=_clean(n), verdict=verdict))
    # A topic with a relevant judged document has both figures defined: the means are of the rounded ones.
    mean_recall = sum(cast(float, t.recall) for t in topics) / len(topics) if topics else None
    mean_ndcg = sum(cast(float, t.ndcg_10) for t in topics) / len(topics) if topics else None
    if not topics:
        overall = "no topic has a relevant judged document: nothing to diagnose yet"
    elif verdicts["ranking problem"] > verdicts["retrieval problem"]:
        overall = "mostly a ranking problem: the candidates hold relevant documents the reranker leaves low"
    elif verdicts["retrieval problem"] > 0:
        overall = "mostly a retrieval problem: relevant documents never reach the reranker"
    else:
        overall = "both stages do their job on most topics"
    body = TwoStageBody(
        candidate=candidate,
        reranked=reranked,
        k=k,
        recall_threshold=recall_threshold,
        ndcg_threshold=ndcg_threshold,
        mean_recall=_clean(mean_recall) if mean_recall is not None else None,
        mean_ndcg_10=_clean(mean_ndcg) if mean_ndcg is not None else None,
        verdicts=verdicts,
        verdict=overall,
        topics=topics,
        not_judged_topics=list(split.not_judged),
        no_relevant_topics=no_relevant,
        candidate_missing=list(recall.missing_topics),
        reranked_missing=list(ndcg.missing_topics),
    )
    return asdict(body)

"""The answers of the evaluation API, for the schema: what `services.pool_report`, `services.pool_bias`,
`services.two_stage` and `noise_pool.pool_noise_floor` return, key for key. A number the service cleans
(`_clean`: NaN or undefined becomes null) is nullable here; dicts keyed by a run, measure, segment or pair
are `DictField`s."""

from __future__ import annotations

from rest_framework import serializers

from evaluation.services import AVERAGES
from judgements.release_policy import PolicyField
from judgements.report_serializers import undefined_number


def _by_measure() -> serializers.DictField:
    return serializers.DictField(child=undefined_number(), help_text="by measure (trec_eval name)")


def _qids() -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField())


# ------------------------------------------------------------------------------------------ report


class ReportRunSerializer(serializers.Serializer):
    run = serializers.CharField()
    contributing = serializers.BooleanField(help_text="the run helped make the pool")
    topics = serializers.IntegerField(
        help_text="the judged topics the run's means are over: those it has (average=all: every one)"
    )
    missing_topics = serializers.ListField(
        child=serializers.CharField(),
        help_text="judged topics the run has no results for: not in its means (average=all: in them as 0)",
    )
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="metrics.evaluate's notes (the judged topics the run lacks)"
    )
    nonrelevant = _by_measure()
    condensed = _by_measure()
    judged_10 = undefined_number()
    model_10 = serializers.FloatField(
        allow_null=True,
        help_text="share of the top 10 whose label is the model judge's (null: no judged topic to score)",
    )


class SignificanceSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    n = serializers.IntegerField()
    mean_difference = undefined_number()
    t_p = undefined_number()
    randomisation_p = undefined_number()


class ReportJudgeSerializer(serializers.Serializer):
    name = serializers.CharField()
    labels = serializers.IntegerField(help_text="items labelled by the model judge")
    reason = serializers.CharField(allow_blank=True)


class EvaluationReportSerializer(serializers.Serializer):
    """`services.pool_report`."""

    pool = serializers.CharField()
    policy = PolicyField(read_only=True)
    gain = serializers.CharField()
    average = serializers.ChoiceField(
        choices=AVERAGES,
        help_text="common: each run over the judged topics it has; all: every judged topic (trec_eval -c)",
    )
    relevance_level = serializers.IntegerField()
    measures = serializers.ListField(child=serializers.CharField())
    key_measure = serializers.CharField()
    runs = ReportRunSerializer(many=True)
    segments = serializers.DictField(
        child=serializers.DictField(child=_by_measure()),
        help_text="by run, then by segment: num_q, the key measure and judged_10",
    )
    segments_missing = serializers.DictField(
        child=serializers.DictField(child=_qids()),
        help_text="by run, then by segment: the segment's judged topics the run has no results for",
    )
    segments_not_judged = serializers.DictField(child=serializers.IntegerField(), help_text="by segment")
    significance = SignificanceSerializer(many=True)
    topics = serializers.IntegerField()
    judged_topics = serializers.IntegerField()
    not_judged_topics = _qids()
    judge = ReportJudgeSerializer(allow_null=True)


# --------------------------------------------------------------------------------------- pool bias


class PoolBiasRunSerializer(serializers.Serializer):
    run = serializers.CharField()
    unique_items = serializers.IntegerField()
    unique_relevant = serializers.IntegerField()
    missing_topics = serializers.ListField(
        child=serializers.CharField(),
        help_text="judged topics the run has no results for: left out of every run's comparison",
    )
    topics_unjudged_left_out = serializers.IntegerField(
        help_text="Topics nobody judged once the run's own items are left out: out of its comparison."
    )
    full = undefined_number()
    left_out = undefined_number()
    change = undefined_number()
    relative_change = undefined_number()
    change_p = undefined_number()
    within_noise = serializers.BooleanField()
    rank_full = serializers.IntegerField()
    rank_left_out = serializers.IntegerField()
    kendall_tau = undefined_number()


class PoolBiasSerializer(serializers.Serializer):
    """`services.pool_bias`."""

    pool = serializers.CharField()
    measure = serializers.CharField()
    policy = PolicyField(read_only=True)
    noise_p = serializers.FloatField()
    topics = serializers.IntegerField()
    judged_topics = serializers.IntegerField()
    not_judged_topics = _qids()
    compared_topics = serializers.IntegerField(
        help_text="the judged topics every run has: the runs are scored and ranked over these"
    )
    runs = PoolBiasRunSerializer(many=True)


# --------------------------------------------------------------------------------------- two-stage

VERDICTS = ("fine", "ranking problem", "retrieval problem")


class TwoStageTopicSerializer(serializers.Serializer):
    qid = serializers.CharField()
    recall = undefined_number()
    ndcg_10 = undefined_number()
    verdict = serializers.CharField(help_text=", ".join(VERDICTS))


class TwoStageReportSerializer(serializers.Serializer):
    """`services.two_stage`."""

    candidate = serializers.CharField()
    reranked = serializers.CharField()
    k = serializers.IntegerField()
    recall_threshold = serializers.FloatField()
    ndcg_threshold = serializers.FloatField()
    mean_recall = undefined_number()
    mean_ndcg_10 = undefined_number()
    verdicts = serializers.DictField(child=serializers.IntegerField(), help_text=f"topics by {VERDICTS}")
    verdict = serializers.CharField()
    topics = TwoStageTopicSerializer(many=True)
    not_judged_topics = _qids()
    no_relevant_topics = _qids()
    candidate_missing = serializers.ListField(
        child=serializers.CharField(),
        help_text="topics with a relevant judged document the candidate run has no results for: recall 0",
    )
    reranked_missing = serializers.ListField(
        child=serializers.CharField(),
        help_text="topics with a relevant judged document the reranked run has no results for: nDCG 0",
    )


# ------------------------------------------------------------------------------------- noise floor


def _interval() -> serializers.ListField:
    return serializers.ListField(
        child=undefined_number(), min_length=2, max_length=2, help_text="[low, high]"
    )


class NoiseSettingsSerializer(serializers.Serializer):
    topic_samples = serializers.IntegerField()
    label_samples = serializers.IntegerField()
    label_source = serializers.ChoiceField(
        choices=["votes", "posterior", "one_vote"],
        help_text="votes: each item's votes bootstrapped and aggregated by the policy; posterior: drawn from "
        "the model's posterior; one_vote (rater:NAME): one of each item's votes, a one-rater qrels",
    )
    splits = serializers.IntegerField()
    alpha = serializers.FloatField()
    power = serializers.FloatField()
    unjudged = serializers.CharField()


class NoiseRunSerializer(serializers.Serializer):
    run = serializers.CharField()
    topics = serializers.IntegerField()
    means = _by_measure()
    raters = serializers.DictField(
        child=_interval(), help_text="by measure: the raters' interval (none when raters are not measured)"
    )


class NoisePairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    delta = undefined_number()
    topics = serializers.IntegerField()
    raters_half_width = undefined_number()
    topics_interval = _interval()
    topics_half_width = undefined_number()
    p_value = undefined_number()
    significant = serializers.BooleanField()
    swap_rate = undefined_number()
    verdict = serializers.CharField()


class NoiseMeasureSerializer(serializers.Serializer):
    label = serializers.CharField()
    discriminative_power = undefined_number()
    sd_of_differences = undefined_number()
    minimum_detectable_difference = undefined_number()
    planner = serializers.DictField(
        child=serializers.IntegerField(allow_null=True), help_text="topics needed, by difference"
    )


class TauSerializer(serializers.Serializer):
    tau = undefined_number()
    tau_ap = undefined_number()


class RaterStabilitySerializer(serializers.Serializer):
    """One rater's own qrels against the consensus: τ and τ_AP under each measure, a property of its own
    (the API scores `noise_floor.DEFAULT_MEASURES`, and asks for no others)."""

    rater = serializers.CharField()
    votes = serializers.IntegerField()
    topics = serializers.IntegerField()
    compared_topics = serializers.IntegerField(
        help_text="the topics both rankings rank the runs on (metrics.compared_topics)"
    )
    ndcg_cut_10 = TauSerializer()
    P_10 = TauSerializer()


class SplitTauSerializer(serializers.Serializer):
    tau_mean = undefined_number()
    tau_min = undefined_number()
    tau_ap_mean = undefined_number()


class StabilitySerializer(serializers.Serializer):
    raters = RaterStabilitySerializer(many=True)
    raters_shown = serializers.IntegerField()
    raters_total = serializers.IntegerField()
    splits = serializers.IntegerField()
    split_policy = serializers.CharField(
        help_text="the rule each half is aggregated by: the policy, or the default (rater:NAME, a model)"
    )
    runs_left_out = serializers.ListField(
        child=serializers.CharField(), help_text="runs with no compared topic in some ranking: not in its τ"
    )
    split_tau = serializers.DictField(child=SplitTauSerializer(), help_text="by measure")
    swap_rate = serializers.DictField(
        child=serializers.DictField(child=undefined_number()), help_text="by measure, then by pair `a<TAB>b`"
    )


class NoiseFloorReportSerializer(serializers.Serializer):
    """`noise_pool.pool_noise_floor`."""

    pool = serializers.CharField()
    policy = PolicyField(read_only=True)
    topics = serializers.IntegerField()
    measures = serializers.ListField(child=serializers.CharField())
    key_measure = serializers.CharField(allow_null=True)
    seed = serializers.IntegerField()
    settings = NoiseSettingsSerializer()
    judged_topics = serializers.IntegerField()
    not_judged_topics = _qids()
    runs = NoiseRunSerializer(many=True)
    pairs = serializers.DictField(child=NoisePairSerializer(many=True), help_text="by measure")
    measures_summary = serializers.DictField(child=NoiseMeasureSerializer(), help_text="by measure")
    stability = StabilitySerializer()

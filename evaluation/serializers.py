"""The answers of the evaluation API, for the schema. Each is declared once, as the dataclass its service
builds it as (`report_bodies.ReportBody`, `report_bodies.PoolBiasBody`, `report_bodies.TwoStageBody`,
`noise_pool.PoolNoiseFloor` and the bodies nested in them); the serializers here read their fields and
description from it (`labeling.bodies`), adding only what a type cannot say: a choice list, an
interval's length, the policy's field, the serializer of a nested body. A number the service cleans (NaN
or undefined becomes null) is a `float | None` there, nullable here."""

from __future__ import annotations

from rest_framework import serializers

from evaluation import noise_bodies, noise_pool, report_bodies, services
from judgements.release_policy import PolicyField
from labeling.bodies import BodySerializer, body_serializer

#: An interval `[low, high]` (either null when undefined) is a list of two: what its type cannot say.
INTERVAL = {"min_length": 2, "max_length": 2}


# ------------------------------------------------------------------------------------------ report


class ReportJudgeSerializer(BodySerializer):
    class Meta:
        dataclass = report_bodies.ReportJudge
        extra_kwargs = {"reason": {"allow_blank": True}}


class EvaluationReportSerializer(BodySerializer):
    class Meta:
        dataclass = report_bodies.ReportBody

    policy = PolicyField(read_only=True)
    average = serializers.ChoiceField(
        choices=services.AVERAGES,
        help_text="common: each run over the judged topics it has; all: every judged topic (trec_eval -c)",
    )
    judge = ReportJudgeSerializer(allow_null=True)


# --------------------------------------------------------------------------------------- pool bias


class PoolBiasSerializer(BodySerializer):
    class Meta:
        dataclass = report_bodies.PoolBiasBody

    policy = PolicyField(read_only=True)


# --------------------------------------------------------------------------------------- two-stage


class TwoStageReportSerializer(BodySerializer):
    class Meta:
        dataclass = report_bodies.TwoStageBody


# ------------------------------------------------------------------------------------- noise floor


class NoiseSettingsSerializer(BodySerializer):
    class Meta:
        dataclass = noise_bodies.NoiseSettings

    label_source = serializers.ChoiceField(
        choices=["votes", "posterior", "one_vote"],
        help_text="votes: each item's votes bootstrapped and aggregated by the policy; posterior: drawn from "
        "the model's posterior; one_vote (rater:NAME): one of each item's votes, a one-rater qrels",
    )


class NoiseRunSerializer(BodySerializer):
    class Meta:
        dataclass = noise_bodies.NoiseRun

    raters = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True), **INTERVAL)
    )


class NoisePairSerializer(BodySerializer):
    class Meta:
        dataclass = noise_bodies.NoisePair
        extra_kwargs = {"topics_interval": INTERVAL}


class RaterStabilitySerializer(serializers.Serializer):
    """One rater's own qrels against the consensus: τ and τ_AP under each measure, a property of its own
    (the API scores `noise_floor.DEFAULT_MEASURES`, and asks for no others). Not a dataclass: its keys
    are the measures'."""

    rater = serializers.CharField()
    votes = serializers.IntegerField()
    topics = serializers.IntegerField()
    compared_topics = serializers.IntegerField(
        help_text="the topics both rankings rank the runs on (metrics.compared_topics)"
    )
    ndcg_cut_10 = body_serializer(noise_bodies.Tau)()
    P_10 = body_serializer(noise_bodies.Tau)()


class StabilitySerializer(BodySerializer):
    class Meta:
        dataclass = noise_bodies.Stability

    raters = RaterStabilitySerializer(many=True)


class NoiseFloorReportSerializer(BodySerializer):
    class Meta:
        dataclass = noise_pool.PoolNoiseFloor

    policy = PolicyField(read_only=True)
    settings = NoiseSettingsSerializer()
    runs = NoiseRunSerializer(many=True)
    pairs = serializers.DictField(child=NoisePairSerializer(many=True))
    stability = StabilitySerializer()

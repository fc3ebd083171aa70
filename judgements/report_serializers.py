"""The answers of the agreement and rater-quality reports, for the schema. Each is declared once, as a
dataclass beside the code that builds it (`agreement.bodies` and `queries.PoolAgreement` for
`queries.pool_agreement`; `rater_quality.RaterQualityRow` and `crowd_quality.RaterQualityReport` for
`crowd_quality.pool_rater_quality`); the serializers here read their fields from it (`labeling.bodies`).
An undefined figure (a kappa of one grade only, an interval with no defined resample) is null."""

from __future__ import annotations

from rest_framework import serializers

from judgements import crowd_quality, queries, rater_quality
from judgements.release_policy import PolicyField
from labeling.bodies import BodySerializer


def undefined_number() -> serializers.FloatField:
    """A statistic that may be undefined (NaN, no pair, no topic, nothing to test): null then. The one
    declaration of such a number for the reports' schemas (the evaluation API's too)."""
    return serializers.FloatField(allow_null=True)


# --------------------------------------------------------------------------------------- agreement


class AgreementSerializer(BodySerializer):
    class Meta:
        dataclass = queries.PoolAgreement
        extra_kwargs = {"topics": {"help_text": "worst unweighted kappa first, undefined last"}}


# ------------------------------------------------------------------------------------ rater quality


class GoldVersusSerializer(BodySerializer):
    """A rater against gold (`rater_quality.versus_gold`): `n` and `accuracy` by the one rule of gold
    accuracy (`rater_quality.gold_accuracy`, the rater statistics' `gold` too: an unrateable answer is a
    miss); `kappa` and `confusion` over the graded answers only."""

    class Meta:
        dataclass = rater_quality.Versus
        extra_kwargs = {"n": {"help_text": "every answer to a gold item, unrateable ones included"}}


class RaterQualityRowSerializer(BodySerializer):
    class Meta:
        dataclass = rater_quality.RaterQualityRow

    gold = GoldVersusSerializer()


class RaterQualitySerializer(BodySerializer):
    class Meta:
        dataclass = crowd_quality.RaterQualityReport

    policy = PolicyField(read_only=True)
    raters = RaterQualityRowSerializer(many=True)

"""The answers of the agreement and rater-quality reports, for the schema: what `queries.pool_agreement`
(`agreement.agreement_summary`) and `crowd_quality.pool_rater_quality` return, key for key. An undefined
figure (a kappa of one grade only, an interval with no defined resample) is null."""

from __future__ import annotations

from rest_framework import serializers

from judgements import rater_quality
from judgements.release_policy import PolicyField
from labeling.bodies import BodySerializer


def undefined_number() -> serializers.FloatField:
    """A statistic that may be undefined (NaN, no pair, no topic, nothing to test): null then. The one
    declaration of such a number for the reports' schemas (the evaluation API's too)."""
    return serializers.FloatField(allow_null=True)


def _matrix() -> serializers.ListField:
    """A confusion matrix: rows and columns in the order of `labels`."""
    return serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))


# --------------------------------------------------------------------------------------- agreement


class KappaSerializer(serializers.Serializer):
    kappa = undefined_number()
    band = serializers.CharField(help_text="Landis & Koch, or 'undefined'")
    ci_low = undefined_number()
    ci_high = undefined_number()
    n_undefined = serializers.IntegerField(help_text="resamples whose kappa is undefined")


class BinaryKappaSerializer(KappaSerializer):
    level = serializers.IntegerField(help_text="the relevance level: grades at or above it are relevant")


class BootstrapSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    seed = serializers.IntegerField()
    alpha = serializers.FloatField()
    unit = serializers.CharField()


class CohenSerializer(serializers.Serializer):
    unweighted = KappaSerializer()
    linear = KappaSerializer()
    quadratic = KappaSerializer()
    binary = BinaryKappaSerializer()
    bootstrap = BootstrapSerializer()


class FleissSerializer(serializers.Serializer):
    kappa = undefined_number()
    n_items = serializers.IntegerField()
    ratings_per_item = serializers.IntegerField(allow_null=True)
    n_items_dropped = serializers.IntegerField()


class KrippendorffSerializer(serializers.Serializer):
    nominal = undefined_number()
    ordinal = undefined_number()
    interval = undefined_number()


class KappaKindsSerializer(serializers.Serializer):
    """The four kappas of a pair or topic, and the interval of the one `ci_weights` names."""

    unweighted = undefined_number()
    linear = undefined_number()
    quadratic = undefined_number()
    binary = undefined_number()
    ci_low = undefined_number()
    ci_high = undefined_number()
    ci_weights = serializers.CharField()


class AgreementPairSerializer(KappaKindsSerializer):
    rater_a = serializers.CharField()
    rater_b = serializers.CharField()
    n_items = serializers.IntegerField()
    confusion = _matrix()


class AgreementTopicSerializer(KappaKindsSerializer):
    topic = serializers.CharField()
    n_items = serializers.IntegerField()
    n_pairs = serializers.IntegerField()


class PairMatrixSerializer(serializers.Serializer):
    raters = serializers.ListField(child=serializers.CharField())
    unweighted = serializers.ListField(
        child=serializers.ListField(child=undefined_number()),
        help_text="raters × raters: null on the diagonal and for pairs with nothing in common",
    )
    n_items = _matrix()


class AgreementSerializer(serializers.Serializer):
    """`queries.pool_agreement`."""

    labels = serializers.ListField(child=serializers.IntegerField())
    relevance_level = serializers.IntegerField()
    n_judgements = serializers.IntegerField()
    n_unrateable = serializers.IntegerField()
    n_raters = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_items_paired = serializers.IntegerField()
    n_pairs = serializers.IntegerField()
    observed_agreement = undefined_number()
    cohen = CohenSerializer()
    fleiss = FleissSerializer()
    krippendorff = KrippendorffSerializer()
    pairs = AgreementPairSerializer(many=True)
    pair_matrix = PairMatrixSerializer()
    topics = AgreementTopicSerializer(many=True, help_text="worst unweighted kappa first, undefined last")
    confusion = _matrix()
    confusion_binary = _matrix()
    sentence = serializers.CharField()
    n_excluded_raters = serializers.IntegerField()


# ------------------------------------------------------------------------------------ rater quality


class VersusSerializer(BodySerializer):
    class Meta:
        dataclass = rater_quality.Versus


class GoldVersusSerializer(VersusSerializer):
    """A rater against gold (`rater_quality.versus_gold`): `n` and `accuracy` by the one rule of gold
    accuracy (`rater_quality.gold_accuracy`, the rater statistics' `gold` too: an unrateable answer is a
    miss); `kappa` and `confusion` over the graded answers only."""

    class Meta(VersusSerializer.Meta):
        extra_kwargs = {"n": {"help_text": "every answer to a gold item, unrateable ones included"}}


class RaterFlagSerializer(serializers.Serializer):
    flag = serializers.CharField()
    why = serializers.CharField()


class RaterQualityRowSerializer(serializers.Serializer):
    """One rater (`rater_quality.RaterQuality.as_dict`), and whether they are excluded now."""

    rater = serializers.CharField()
    votes = serializers.IntegerField()
    unrateable = serializers.IntegerField()
    modal_share = undefined_number()
    median_seconds = undefined_number()
    gold = GoldVersusSerializer()
    consensus = VersusSerializer()
    others = VersusSerializer()
    flags = RaterFlagSerializer(many=True)
    excluded = serializers.BooleanField()


class QualityThresholdsSerializer(serializers.Serializer):
    constant_share = serializers.FloatField()
    near_constant_share = serializers.FloatField()
    fast_ratio = serializers.FloatField()
    chance_kappa = serializers.FloatField()
    min_votes = serializers.IntegerField()


class RaterQualitySerializer(serializers.Serializer):
    """`crowd_quality.pool_rater_quality`."""

    pool = serializers.CharField()
    policy = PolicyField(read_only=True)
    labels = serializers.ListField(child=serializers.IntegerField())
    raters = RaterQualityRowSerializer(many=True)
    thresholds = QualityThresholdsSerializer()

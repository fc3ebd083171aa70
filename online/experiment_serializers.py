"""What the interleaving and tracker endpoints answer, for the OpenAPI schema (`online.experiment_api`).

The bodies themselves are made by `experiment_api.experiment_dict`, `experiments.result_dict`,
`tracking.experiment_dict` and `preference.PowerPlan`; these serializers only describe them (a test,
tests/test_openapi_truth.py, validates real answers against the schema they make)."""

from __future__ import annotations

from rest_framework import serializers


class InterleavingResultSerializer(serializers.Serializer):
    """`experiments.result_dict`: the preference the clicks show (Δ_AB > 0 prefers A)."""

    id = serializers.IntegerField()
    experiment = serializers.CharField()
    a = serializers.CharField()
    b = serializers.CharField()
    method = serializers.CharField()
    wins_a = serializers.IntegerField()
    wins_b = serializers.IntegerField()
    ties = serializers.IntegerField()
    no_clicks = serializers.IntegerField()
    impressions = serializers.IntegerField()
    users = serializers.IntegerField()
    delta_ab = serializers.FloatField(allow_null=True)
    interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="the bootstrap interval of Δ_AB [low, high]",
    )
    level = serializers.FloatField()
    p_value = serializers.FloatField()
    preferred = serializers.CharField(help_text="the preferred run's name, or `neither`")
    per_query = serializers.JSONField()
    source = serializers.CharField()
    computed_at = serializers.DateTimeField()


class InterleavingExperimentSerializer(serializers.Serializer):
    """`experiment_api.experiment_dict`: an experiment with its latest result (null before the first)."""

    name = serializers.CharField()
    collection = serializers.CharField()
    a = serializers.CharField()
    b = serializers.CharField()
    method = serializers.CharField()
    length = serializers.IntegerField()
    identical_prefix = serializers.BooleanField()
    active = serializers.BooleanField()
    description = serializers.CharField(allow_blank=True)
    clients = serializers.ListField(child=serializers.CharField())
    impressions = serializers.IntegerField()
    unmapped_queries = serializers.IntegerField()
    result = InterleavingResultSerializer(allow_null=True)


class ImpressionLoggedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    outcome = serializers.CharField()


class PowerPlanSerializer(serializers.Serializer):
    """`preference.PowerPlan`: the impressions the exact sign test needs to detect Δ_AB."""

    delta_ab = serializers.FloatField()
    win_share = serializers.FloatField()
    decisive = serializers.IntegerField()
    clicked = serializers.IntegerField()
    impressions = serializers.IntegerField()
    alpha = serializers.FloatField()
    power = serializers.FloatField()
    achieved_power = serializers.FloatField()


class TrackedExperimentSerializer(serializers.Serializer):
    """`tracking.experiment_dict`: a ranking change, its offline delta and (once entered) its online one."""

    id = serializers.IntegerField()
    collection = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    release = serializers.IntegerField(allow_null=True)
    metric = serializers.CharField()
    baseline = serializers.CharField()
    treatment = serializers.CharField()
    offline_baseline = serializers.FloatField()
    offline_treatment = serializers.FloatField()
    offline_delta = serializers.FloatField()
    offline_topics = serializers.IntegerField()
    offline_judged_10 = serializers.FloatField(allow_null=True)
    online_metric = serializers.CharField(allow_blank=True)
    online_delta = serializers.FloatField(allow_null=True)
    interleaving = serializers.IntegerField(allow_null=True, help_text="the interleaving result's id")
    created_at = serializers.DateTimeField()


class DeltasImportedSerializer(serializers.Serializer):
    updated = serializers.IntegerField()


class CorrelationGroupSerializer(serializers.Serializer):
    """One group of `tracking.correlation_groups`: the experiments of one (offline metric, online metric)
    with an online delta, and how well one delta predicts the other (`tracker.Correlation`)."""

    metric = serializers.CharField()
    online_metric = serializers.CharField()
    experiments = TrackedExperimentSerializer(many=True)
    n = serializers.IntegerField()
    pearson = serializers.FloatField(allow_null=True)
    pearson_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    spearman = serializers.FloatField(allow_null=True)
    kendall_tau_b = serializers.FloatField(allow_null=True)
    signs_agree = serializers.IntegerField()
    signs_compared = serializers.IntegerField()
    signs_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    level = serializers.FloatField()
    gate = serializers.BooleanField()
    verdict = serializers.CharField()

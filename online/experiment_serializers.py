"""What the interleaving and tracker endpoints answer, for the OpenAPI schema (`online.experiment_api`).

Each body is declared once, as a dataclass beside the code that makes it (`experiments.ResultBody`,
`experiments.ExperimentBody`, `impressions.ImpressionLogged`, `tracking.TrackedBody`,
`tracking.CorrelationGroup`, `tracking.DeltasImported`, `preference.PowerPlan`); the serializers here read
their fields and description from it (`labeling.bodies`), adding only what a type cannot say: a help text,
a date-time written as a string (a test, tests/test_openapi_truth.py, validates real answers against the
schema they make). A refused impression's conflict (409) is a refusal by field, as a 400 is: its fields
are the impression's that a repeat must match (`impressions.CONTENT`)."""

from __future__ import annotations

from rest_framework import serializers

from labeling.bodies import BodySerializer
from online import experiments, impressions, tracking


class InterleavingResultSerializer(BodySerializer):
    class Meta:
        dataclass = experiments.ResultBody
        extra_kwargs = {
            "interval": {"help_text": "the bootstrap interval of Δ_AB [low, high]"},
            "preferred": {"help_text": "the preferred run's name, or `neither`"},
        }

    computed_at = serializers.DateTimeField()


class InterleavingExperimentSerializer(BodySerializer):
    class Meta:
        dataclass = experiments.ExperimentBody

    result = InterleavingResultSerializer(allow_null=True)


class ImpressionConflictSerializer(serializers.Serializer):
    """A `query_id` logged before with other content: each field that differs, with why (the form of a
    400's fields)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            field: serializers.ListField(child=serializers.CharField(), required=False)
            for field in impressions.CONTENT
        }


class TrackedResultSerializer(BodySerializer):
    class Meta:
        dataclass = tracking.TrackedResult

    computed_at = serializers.DateTimeField()


class TrackedExperimentSerializer(BodySerializer):
    class Meta:
        dataclass = tracking.TrackedBody
        extra_kwargs = {"interleaving": {"help_text": "the interleaving result's id"}}

    interleaving_result = TrackedResultSerializer(allow_null=True)
    created_at = serializers.DateTimeField()


class CorrelationGroupSerializer(BodySerializer):
    class Meta:
        dataclass = tracking.CorrelationGroup

    experiments = TrackedExperimentSerializer(many=True)

"""The judging app's serializers for raters and rubrics: what a rater sees of an item, a label they send,
their judgements and revisions; rubrics. (The campaign side, for managers, is in `campaign_serializers`.)

Blind: the rater-facing ones carry a topic, a document (sanitised) and a rubric, never a run, a rank, a
score, another rater's grade, the consensus, or whether an item is gold."""

from __future__ import annotations

from typing import Any, cast

from rest_framework import serializers

from judgements import labels, rubrics
from judgements.documents import render_body, safe_link
from judgements.models import Assignment, Judgement, JudgementRevision, Rubric


def sanitise(text: str) -> str:
    """A document body as HTML safe to insert into the rater's page (the pages' sanitiser)."""
    return str(render_body(text or ""))


def safe_url(url: str) -> str:
    """The document's URL if it is http(s), else empty (never a `javascript:` link)."""
    return safe_link(url) or ""


class GradeSerializer(serializers.Serializer):
    value = serializers.IntegerField(min_value=0, max_value=rubrics.MAX_GRADE)
    label = serializers.CharField(max_length=100)
    description = serializers.CharField(allow_blank=True, required=False, default="")
    key = serializers.CharField(min_length=1, max_length=1)


class FacetSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=50)
    label = serializers.CharField(max_length=100, required=False)
    choices = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list)
    required = serializers.BooleanField(required=False, default=False)


class RubricSerializer(serializers.ModelSerializer):
    """A rubric: grades (highest first) and optional facets. Creating without grades gives the default
    four-grade scale. Updating a judged rubric makes a new version (answered 201), an unjudged one is
    changed in place (200); the name and the unrateable key never change."""

    grades = GradeSerializer(many=True, required=False)
    facets = FacetSerializer(many=True, required=False)
    judged = serializers.SerializerMethodField()

    class Meta:
        model = Rubric
        fields = [
            "id", "name", "version", "description", "allow_unrateable", "unrateable_key", "grades",
            "facets", "judged", "created_at",
        ]  # fmt: skip
        read_only_fields = ["id", "version", "created_at"]
        validators: list[Any] = []  # (name, version) is assigned by the service, never by the client

    def get_judged(self, rubric: Rubric) -> bool:
        return rubric.has_judgements()

    def _whole_items(self, field: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The list as a whole replacement. A PATCH (partial) replaces `grades` or `facets` whole, but DRF
        passes `partial` down to the items, which then skip their required fields: check them again."""
        if not self.partial:
            return items
        nested = type(self.fields[field].child)
        whole = nested(data=self.initial_data.get(field), many=True)
        if not whole.is_valid():
            raise serializers.ValidationError(whole.errors)
        return cast(list[dict[str, Any]], whole.validated_data)

    def validate_grades(self, grades: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._whole_items("grades", grades)

    def validate_facets(self, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        facets = self._whole_items("facets", facets)
        names = [facet["name"] for facet in facets]
        if len(set(names)) != len(names):
            raise serializers.ValidationError("facet names must be distinct")
        for facet in facets:  # a choice given twice would be two keys on the page for one answer
            choices = facet.get("choices") or []
            twice = sorted({choice for choice in choices if choices.count(choice) > 1})
            if twice:
                shown = ", ".join(repr(choice) for choice in twice)
                raise serializers.ValidationError(f"facet {facet['name']!r}: choices given twice: {shown}")
        return facets

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.instance is not None:
            for name in ("name", "unrateable_key"):
                if name in attrs and attrs[name] != getattr(self.instance, name):
                    raise serializers.ValidationError({name: f"the {name} of a rubric cannot change"})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Rubric:
        return rubrics.create_rubric(
            name=validated_data["name"],
            grades=validated_data.get("grades") or rubrics.DEFAULT_GRADES,
            facets=validated_data.get("facets", ()),
            description=validated_data.get("description", ""),
            allow_unrateable=validated_data.get("allow_unrateable", True),
            unrateable_key=validated_data.get("unrateable_key", "x"),
        )

    def update(self, instance: Rubric, validated_data: dict[str, Any]) -> Rubric:
        return rubrics.update_rubric(
            rubric=instance,
            grades=validated_data.get("grades"),
            facets=validated_data.get("facets"),
            description=validated_data.get("description"),
            allow_unrateable=validated_data.get("allow_unrateable"),
        )


class RubricForRaterSerializer(serializers.ModelSerializer):
    """The rubric as the judging page shows it: grades highest first with their keys, facets."""

    grades = GradeSerializer(many=True, read_only=True)
    facets = FacetSerializer(many=True, read_only=True)

    class Meta:
        model = Rubric
        fields = [
            "id", "name", "version", "description", "allow_unrateable", "unrateable_key", "grades", "facets",
        ]  # fmt: skip


class TopicForRaterSerializer(serializers.Serializer):
    qid = serializers.CharField()
    query = serializers.CharField()
    description = serializers.CharField()
    narrative = serializers.CharField()


class DocumentForRaterSerializer(serializers.Serializer):
    """`title` is plain text (render it as text); `body` is sanitised HTML; `url` is http(s) or empty."""

    docid = serializers.CharField()
    title = serializers.CharField()
    url = serializers.SerializerMethodField()
    body = serializers.SerializerMethodField()

    def get_url(self, document: Any) -> str:
        return safe_url(document.url)

    def get_body(self, document: Any) -> str:
        return sanitise(document.text)


class AssignmentPayloadSerializer(serializers.ModelSerializer):
    """A leased item as a rater sees it: the topic, the document and the rubric — blind: no run, rank,
    score, other rater's grade, consensus, nor whether the item is gold."""

    assignment = serializers.IntegerField(source="pk", read_only=True)
    pool = serializers.CharField(source="item.pool.name", read_only=True)
    topic = TopicForRaterSerializer(source="item.topic", read_only=True)
    document = DocumentForRaterSerializer(source="item.document", read_only=True)
    rubric = RubricForRaterSerializer(source="item.pool.judging.rubric", read_only=True)

    class Meta:
        model = Assignment
        fields = ["assignment", "state", "leased_at", "expires_at", "pool", "topic", "document", "rubric"]


class LabelInputSerializer(serializers.Serializer):
    """A label: a grade of the rubric, or `unrateable: true` (then no grade); facets by name; a note."""

    grade = serializers.IntegerField(required=False, allow_null=True, default=None)
    unrateable = serializers.BooleanField(required=False, default=False)
    facets = serializers.DictField(required=False, default=dict)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=labels.NOTE_MAX_LENGTH
    )


class SubmitSerializer(LabelInputSerializer):
    seconds = serializers.FloatField(required=False, default=0.0, min_value=0.0)


class ReviseSerializer(serializers.Serializer):
    """A revision: only the fields given change (`unrateable: true` clears the grade; a grade clears
    `unrateable`)."""

    grade = serializers.IntegerField(required=False, allow_null=True)
    unrateable = serializers.BooleanField(required=False)
    facets = serializers.DictField(required=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=labels.NOTE_MAX_LENGTH)


#: A judgement's label as given (`labels.LABEL_FIELDS`) with the seconds it took, and when it was made
#: and last changed: what every reader of a judgement is shown of it.
JUDGEMENT_LABEL = [*labels.LABEL_FIELDS, "seconds"]
JUDGEMENT_TIMES = ["created_at", "updated_at"]


class JudgementReadSerializer(serializers.ModelSerializer):
    """A judgement as it is read (never written through this): its topic's qid and document's docid."""

    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)

    class Meta:
        model = Judgement


class JudgementSerializer(JudgementReadSerializer):
    """One of my judgements (never anyone else's)."""

    pool = serializers.CharField(source="item.pool.name", read_only=True)
    query = serializers.CharField(source="item.topic.query", read_only=True)
    title = serializers.CharField(source="item.document.title", read_only=True)
    revisions = serializers.SerializerMethodField()

    class Meta(JudgementReadSerializer.Meta):
        fields = [
            "id", "pool", "qid", "query", "docid", "title", *JUDGEMENT_LABEL, *JUDGEMENT_TIMES, "revisions",
        ]  # fmt: skip
        read_only_fields = fields

    def get_revisions(self, judgement: Judgement) -> int:
        """How many times it was revised."""
        count = getattr(judgement, "num_revisions", None)
        return int(count) if count is not None else judgement.revisions.count()


class RevisionSerializer(serializers.ModelSerializer):
    """One change of a judgement: who, when, the old and the new label."""

    changed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = JudgementRevision
        fields = [
            "id", "changed_by", "changed_at", "old_grade", "old_unrateable", "old_facets", "old_note",
            "new_grade", "new_unrateable", "new_facets", "new_note",
        ]  # fmt: skip
        read_only_fields = fields

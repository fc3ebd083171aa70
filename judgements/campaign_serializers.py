"""The judging app's serializers for a campaign's managers: a pool's judging set-up, raters, gold labels,
statistics, the adjudication queue and decisions, every judgement of a pool with its revisions."""

from __future__ import annotations

from typing import Any

from django.db.models.manager import BaseManager
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgements import crowd_import, dashboard, labels, membership, pool_progress, stats
from judgements.models import Adjudication, GoldLabel, Judgement, Judging, Rubric
from judgements.serializers import (
    JUDGEMENT_LABEL,
    JUDGEMENT_TIMES,
    JudgementReadSerializer,
    RevisionSerializer,
    RubricForRaterSerializer,
)
from labeling.bodies import BodySerializer
from pooling.models import Pool
from pooling.permissions import ManagedNameField, is_manager


class PoolJudgementSerializer(JudgementReadSerializer):
    """A judgement of a pool for its managers: the rater, the label and every revision."""

    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    revisions = RevisionSerializer(many=True, read_only=True)

    class Meta(JudgementReadSerializer.Meta):
        fields = [
            "id", "item", "qid", "docid", "rater", *JUDGEMENT_LABEL, "imported", *JUDGEMENT_TIMES,
            "revisions",
        ]  # fmt: skip
        read_only_fields = fields


class JudgingListSerializer(serializers.ListSerializer):
    """A list of pools' judging: the figures of every row are read beforehand (`JudgingSerializer.
    read_figures`), in a number of statements that does not grow with the rows."""

    def to_representation(self, data: Any) -> list[Any]:
        rows = list(data.all() if isinstance(data, BaseManager) else data)
        self.child.read_figures(rows)
        return super().to_representation(rows)


class ProgressSerializer(BodySerializer):
    class Meta:
        dataclass = pool_progress.Progress
        extra_kwargs = {
            "judgements": {
                "help_text": "every judgement made in the pool, those beyond an item's required judgements "
                "included (the pool page's judgements made)"
            },
            "done": {
                "help_text": "judgements that count toward `required`, an item counting at most its required "
                "judgements (the dashboard's and the judging page's judgements done)"
            },
            "fraction": {"help_text": "`done` / `required`, to 4 decimals; 0 while none is required"},
            "mine": {
                "help_text": "items of the pool you have judged; null: you are not a rater of this pool"
            },
            "left_for_me": {
                "help_text": "items you could still be given now, your live lease included; null: you are "
                "not a rater of this pool"
            },
        }


class JudgingSerializer(serializers.ModelSerializer):
    """A pool's judging setup with its progress (for the requesting user); `raters` and `stranded` for
    managers only."""

    pool = serializers.CharField(source="pool.name", read_only=True)
    instructions = serializers.CharField(source="pool.instructions", read_only=True)
    rubric = RubricForRaterSerializer(read_only=True)
    raters = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    stranded = serializers.SerializerMethodField()

    class Meta:
        model = Judging
        list_serializer_class = JudgingListSerializer
        # No pool description: a manager may have written run names in it (raters never see runs);
        # the pool's `instructions` are what is written for raters.
        fields = [
            "pool", "instructions", "rubric", "lease_minutes", "adjudication_gap", "raters", "progress",
            "stranded",
        ]  # fmt: skip
        read_only_fields = fields

    def _manages(self, judging: Judging) -> bool:
        request = self.context.get("request")
        if request is None or not is_manager(request.user):
            return False
        if "managed_pools" not in self.context:  # the context is shared by every row of a list
            managed = Pool.objects.managed_by(request.user).values_list("pk", flat=True)
            self.context["managed_pools"] = set(managed)
        return judging.pool_id in self.context["managed_pools"]

    def read_figures(self, judgings: list[Judging]) -> None:
        """Read the progress of `judgings` for the requesting user (`pool_progress.pool_progress_of`) and the
        stranded items of those the user manages (`dashboard.stranded_of`) into the context, which every
        row of a list shares: a few statements for all of them, the same figures one pool's answer has."""
        request = self.context["request"]
        progress = pool_progress.pool_progress_of(judgings=judgings, user=request.user)
        managed = [judging.pool for judging in judgings if self._manages(judging)]
        self.context.setdefault("judging_progress", {}).update(progress)
        self.context.setdefault("judging_stranded", {}).update(dashboard.stranded_of(pools=managed))

    def _figures(self, judging: Judging) -> None:
        if judging.pool_id not in self.context.get("judging_progress", {}):
            self.read_figures([judging])

    def get_raters(self, judging: Judging) -> list[str] | None:
        """Usernames of the pool's raters (null unless the caller manages this pool)."""
        if not self._manages(judging):
            return None
        return sorted(rater.username for rater in judging.raters.all())

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_stranded(self, judging: Judging) -> int | None:
        """Items the pool's current raters can no longer complete (`PoolItem.objects.stranded`), as the
        manager's dashboard counts them; null unless the caller manages this pool."""
        if not self._manages(judging):
            return None
        self._figures(judging)
        stranded: int = self.context["judging_stranded"][judging.pool_id]["items"]
        return stranded

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, judging: Judging) -> dict[str, Any]:
        self._figures(judging)
        progress: dict[str, Any] = self.context["judging_progress"][judging.pool_id].as_dict()
        return progress


class JudgingUpdateSerializer(serializers.Serializer):
    """What may change in a pool's judging set-up: the rubric, lease minutes and adjudication gap."""

    rubric = serializers.PrimaryKeyRelatedField(queryset=Rubric.objects.all(), required=False)
    # Bounds: the columns' (`Judging.MAX_*`), which `membership.setup_judging` checks (a 400 on the field),
    # and for the gap the rubric's (`membership.check_adjudication_gap`: the pool's, or the one given).
    lease_minutes = serializers.IntegerField(required=False)
    adjudication_gap = serializers.IntegerField(
        required=False,
        help_text="grades this far apart on one item go to adjudication; at most the rubric's highest grade "
        "minus its lowest (a rubric change is refused, naming this field, when the pool's gap is wider "
        "than the new rubric allows: send a gap with it). A new setup given none takes 2, or less if its "
        "rubric allows less",
    )


class JudgingSetupSerializer(JudgingUpdateSerializer):
    """Set up (or update) judging of a pool; raters are added, never removed, by this call."""

    pool = ManagedNameField(queryset=Pool.objects.all())
    raters = serializers.ListField(child=serializers.CharField(max_length=150), required=False, default=list)

    def validate_raters(self, usernames: list[str]) -> list[Any]:
        return _users(usernames)


class RatersSerializer(serializers.Serializer):
    usernames = serializers.ListField(child=serializers.CharField(max_length=150), min_length=1)

    def validate_usernames(self, usernames: list[str]) -> list[Any]:
        return _users(usernames)


def _users(usernames: list[str]) -> list[Any]:
    """The accounts named, each one a manager may add (`membership.managers_may_add`): the same words
    whether no such account exists or it may not rate, as the page says."""
    addable = membership.managers_may_add().filter(username__in=usernames)
    found = {user.get_username(): user for user in addable}
    missing = [name for name in usernames if name not in found]
    if missing:
        raise serializers.ValidationError(f"no user named {', '.join(map(repr, missing))} can be a rater")
    return [found[name] for name in dict.fromkeys(usernames)]


class ItemRefSerializer(serializers.Serializer):
    """An item of the pool, by `item` id or by `qid` and `docid`."""

    item = serializers.IntegerField(required=False, min_value=1)
    qid = serializers.CharField(required=False, max_length=100)
    docid = serializers.CharField(required=False, max_length=255)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("item") is None and not (attrs.get("qid") and attrs.get("docid")):
            raise serializers.ValidationError({"item": "name the item by id, or by qid and docid"})
        return attrs


class GoldInputSerializer(ItemRefSerializer):
    grade = serializers.IntegerField()


class GoldSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    title = serializers.CharField(source="item.document.title", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = GoldLabel
        fields = ["item", "qid", "docid", "title", "grade", "created_by", "created_at"]
        read_only_fields = fields


class RaterStatsSerializer(BodySerializer):
    class Meta:
        dataclass = stats.RaterStatsBody


class QueueJudgementSerializer(serializers.ModelSerializer):
    """One judgement of a queued item (`stats.QueueJudgement`): its id, its rater and its label."""

    judgement_id = serializers.IntegerField()
    rater = serializers.CharField()

    class Meta:
        model = Judgement
        fields = ["judgement_id", "rater", *JUDGEMENT_LABEL, "updated_at"]
        read_only_fields = fields


class QueueEntrySerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    qid = serializers.CharField()
    query = serializers.CharField()
    docid = serializers.CharField()
    title = serializers.CharField()
    spread = serializers.IntegerField()
    unrateable_votes = serializers.IntegerField()
    gold = serializers.IntegerField(allow_null=True)
    judgements = QueueJudgementSerializer(many=True)


class AdjudicateSerializer(ItemRefSerializer):
    grade = serializers.IntegerField(required=False, allow_null=True, default=None)
    unrateable = serializers.BooleanField(required=False, default=False)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=labels.NOTE_MAX_LENGTH
    )


class QueueQuerySerializer(serializers.Serializer):
    gap = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=Judging.MAX_ADJUDICATION_GAP,
        help_text="a whole number of grades (default: the pool's)",
    )


class AdjudicationSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    adjudicator = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Adjudication
        fields = ["item", "qid", "docid", "grade", "unrateable", "note", "adjudicator", "decided_at"]
        read_only_fields = fields


class CrowdImportSerializer(serializers.Serializer):
    """A crowd file and its import options (multipart), as the pool's crowd import page takes them."""

    file = serializers.FileField(help_text="CSV or TSV with a header: worker, qid, docid, label[, seconds].")
    duplicates = serializers.ChoiceField(
        choices=crowd_import.DUPLICATE_RULES,
        default="last",
        help_text="the same (worker, item) twice in the file",
    )
    unrateable_labels = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="labels that mean unrateable, comma-separated (e.g. -2); other negative labels are "
        f"skipped; at most {crowd_import.MAX_LABELS_TEXT} characters",
    )  # fmt: skip
    skip_unpooled = serializers.BooleanField(default=False, help_text="skip (and count) unpooled rows")
    create_raters = serializers.BooleanField(default=False, help_text="an account for each unknown worker")

    def validate_unrateable_labels(self, value: str) -> list[int]:
        from judgements.crowd_import import CrowdOptionError, parse_labels

        try:
            return parse_labels(value)
        except CrowdOptionError as exc:
            raise serializers.ValidationError(exc.message) from None

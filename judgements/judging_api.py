"""The judging API of a pool (`/api/judging/`): raters list the pools they rate with their progress;
managers set up and run the campaigns of the pools they manage.

    GET  /api/judging/                     my pools, with progress (managers: every pool; `?mine=1` to narrow)
    GET  /api/judging/<pool>/              one pool's setup, rubric and progress
    POST /api/judging/                     set up judging of a pool (rubric, raters, lease, gap)
    PATCH /api/judging/<pool>/             change rubric, lease minutes, adjudication gap
    POST /api/judging/<pool>/raters/       add raters; DELETE /api/judging/<pool>/raters/<username>/
                                           (or …/raters/?username=NAME, for any name: `..`, `a/b`)
    GET/POST /api/judging/<pool>/gold/     gold labels; DELETE /api/judging/<pool>/gold/<item>/
    GET  /api/judging/<pool>/stats/        per-rater statistics and gold accuracy
    GET/POST /api/judging/<pool>/adjudication/  the queue (every grade, note, rater) and decisions
    GET  /api/judging/<pool>/adjudications/     decisions recorded
    GET  /api/judging/<pool>/judgements/   every judgement of the pool with its revisions
    POST /api/judging/<pool>/crowd-imports/  a crowd file (multipart, with its options): 202 and its job

A manager action on a pool the user does not manage answers 404; a rater calling one answers 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from judgements import adjudication, crowd_import, membership, stats
from judgements.api import JudgingAPIMixin
from judgements.campaign_serializers import (
    AdjudicateSerializer,
    AdjudicationSerializer,
    CrowdImportSerializer,
    GoldInputSerializer,
    GoldSerializer,
    JudgingSerializer,
    JudgingSetupSerializer,
    JudgingUpdateSerializer,
    PoolJudgementSerializer,
    QueueEntrySerializer,
    QueueQuerySerializer,
    RatersSerializer,
    RaterStatsSerializer,
)
from judgements.models import Adjudication, GoldLabel, Judgement, Judging
from pooling.api import JobSerializer
from pooling.errors import ImportFailed
from pooling.models import Pool, PoolItem
from pooling.permissions import IsManager, is_manager


def _pool_item(pool: Pool, data: dict[str, Any]) -> PoolItem:
    """The item named by `item` (id) or `qid` + `docid`, in `pool`; 404 otherwise."""
    items = PoolItem.objects.filter(pool=pool).select_related("topic", "document", "pool__judging__rubric")
    if data.get("item") is not None:
        return get_object_or_404(items, pk=data["item"])
    return get_object_or_404(items, topic__qid=data["qid"], document__docid=data["docid"])


MANAGER_ACTIONS = {
    "create", "partial_update", "raters", "remove_rater", "remove_named_rater", "gold", "remove_gold",
    "stats", "adjudication", "adjudications", "judgements", "crowd_imports",
}  # fmt: skip


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("mine", bool, description="only pools I am a rater of")])
)
class JudgingViewSet(
    JudgingAPIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Pools as judging campaigns. Raters see the pools they belong to (with their progress); managers see
    and configure every pool: rubric, raters, lease, adjudication gap, gold, statistics, adjudication."""

    serializer_class = JudgingSerializer
    lookup_field = "pool__name"
    lookup_url_kwarg = "pool"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_permissions(self) -> list[Any]:
        if self.action in MANAGER_ACTIONS:
            return [IsAuthenticated(), IsManager()]
        return [IsAuthenticated()]

    def get_queryset(self) -> QuerySet[Judging]:
        if getattr(self, "swagger_fake_view", False):
            return Judging.objects.none()
        user = self.request.user
        # a list's rows read their raters prefetched, and their figures in a few statements for them all
        # (`JudgingSerializer.read_figures`): the queries of a list do not grow with its pools
        raters = Prefetch("raters", queryset=get_user_model().objects.only("pk", "username"))
        queryset = Judging.objects.select_related("pool", "rubric").prefetch_related(
            "rubric__grades", "rubric__facets", raters
        )
        managed = Pool.objects.managed_by(user).values("pk")
        if self.action in MANAGER_ACTIONS:
            queryset = queryset.filter(pool__in=managed)
        elif not is_manager(user) or self.request.query_params.get("mine") in {"1", "true", "yes"}:
            queryset = queryset.filter(raters=user)
        else:  # a manager's list: the pools they manage and those they rate
            rated = Judging.objects.filter(raters=user).values("pk")
            queryset = queryset.filter(Q(pool__in=managed) | Q(pk__in=rated))
        return queryset.order_by("pool__name")

    def _out(self, judging: Judging, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=judging.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    @extend_schema(request=JudgingSetupSerializer, responses={200: JudgingSerializer, 201: JudgingSerializer})
    def create(self, request: Request) -> Response:
        """Set up judging of a pool (rubric, raters to add, lease minutes, adjudication gap); idempotent."""
        form = JudgingSetupSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        data = form.validated_data
        existing = Judging.objects.filter(pool=data["pool"]).first()
        judging = membership.setup_judging(
            pool=data["pool"],
            rubric=data.get("rubric"),
            raters=data["raters"],
            lease_minutes=data.get("lease_minutes"),
            adjudication_gap=data.get("adjudication_gap"),
        )
        return self._out(judging, status.HTTP_200_OK if existing else status.HTTP_201_CREATED)

    @extend_schema(request=JudgingUpdateSerializer, responses={200: JudgingSerializer})
    def partial_update(self, request: Request, pool: str | None = None) -> Response:
        """Change the rubric, lease minutes or adjudication gap of a pool."""
        judging = self.get_object()
        form = JudgingUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        judging = membership.setup_judging(
            pool=judging.pool,
            rubric=data.get("rubric"),
            lease_minutes=data.get("lease_minutes"),
            adjudication_gap=data.get("adjudication_gap"),
        )
        return self._out(judging)

    @extend_schema(request=RatersSerializer, responses={200: JudgingSerializer})
    @action(detail=True, methods=["post"])
    def raters(self, request: Request, pool: str | None = None) -> Response:
        """Add raters to the pool."""
        judging = self.get_object()
        form = RatersSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        membership.setup_judging(pool=judging.pool, raters=form.validated_data["usernames"])
        return self._out(judging)

    @extend_schema(
        parameters=[OpenApiParameter("username", str, OpenApiParameter.PATH)],
        request=None,
        responses={204: OpenApiResponse(description="Removed; their judgements stay.")},
    )
    @action(detail=True, methods=["delete"], url_path=r"raters/(?P<username>[^/]+)", url_name="remove-rater")
    def remove_rater(self, request: Request, pool: str | None = None, username: str = "") -> Response:
        """Take a rater off the pool: their live leases are released, their judgements stay."""
        return self._remove_rater(username)

    @extend_schema(
        operation_id="judging_raters_destroy_by_query",
        parameters=[OpenApiParameter("username", str, OpenApiParameter.QUERY, required=True)],
        request=None,
        responses={204: OpenApiResponse(description="Removed; their judgements stay.")},
    )
    @raters.mapping.delete
    def remove_named_rater(self, request: Request, pool: str | None = None) -> Response:
        """`DELETE …/raters/?username=NAME`: as `remove_rater`, for any name (a path holds neither `..`
        nor a `/` in one segment)."""
        return self._remove_rater(request.query_params.get("username", ""))

    def _remove_rater(self, username: str) -> Response:
        judging = self.get_object()
        rater = judging.raters.filter(username=username).first()
        if rater is None:
            raise NotFound(f"{username!r} is not a rater of this pool")
        membership.remove_rater(pool=judging.pool, rater=rater)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(methods=["GET"], responses={200: GoldSerializer(many=True)})
    @extend_schema(methods=["POST"], request=GoldInputSerializer, responses={201: GoldSerializer})
    @action(detail=True, methods=["get", "post"])
    def gold(self, request: Request, pool: str | None = None) -> Response:
        """Gold labels: items with a known grade, served to every rater unannounced."""
        judging = self.get_object()
        if request.method == "GET":
            golds = GoldLabel.objects.filter(item__pool=judging.pool).select_related(
                "item__topic", "item__document", "created_by"
            )
            page = self.paginate_queryset(golds.order_by("item__topic__qid", "item__document__docid"))
            return self.get_paginated_response(GoldSerializer(page, many=True).data)
        form = GoldInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        item = _pool_item(judging.pool, form.validated_data)
        gold = adjudication.set_gold(item=item, grade=form.validated_data["grade"], by=request.user)
        return Response(GoldSerializer(gold).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH)],
        request=None,
        responses={204: OpenApiResponse(description="The item is no longer gold.")},
    )
    @action(detail=True, methods=["delete"], url_path=r"gold/(?P<item_id>[0-9]+)", url_name="remove-gold")
    def remove_gold(self, request: Request, pool: str | None = None, item_id: str = "") -> Response:
        judging = self.get_object()
        item = get_object_or_404(PoolItem, pool=judging.pool, pk=int(item_id), gold_label__isnull=False)
        adjudication.remove_gold(item=item)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: RaterStatsSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def stats(self, request: Request, pool: str | None = None) -> Response:
        """Per rater: judgements, median seconds, grade distribution, unrateable share, skips, gold
        accuracy (exact and within one grade)."""
        judging = self.get_object()
        page = self.paginate_queryset(stats.rater_statistics(pool=judging.pool))
        return self.get_paginated_response([r.as_dict() for r in page])

    @extend_schema(
        methods=["GET"],
        parameters=[OpenApiParameter("gap", int, description="override the pool's adjudication gap")],
        responses={200: QueueEntrySerializer(many=True)},
    )
    @extend_schema(methods=["POST"], request=AdjudicateSerializer, responses={201: AdjudicationSerializer})
    @action(detail=True, methods=["get", "post"])
    def adjudication(self, request: Request, pool: str | None = None) -> Response:
        """The queue of items whose grades differ by at least the gap, with every grade, note and rater;
        POST records the adjudicator's decision (it overrides aggregation)."""
        judging = self.get_object()
        if request.method == "GET":
            query = QueueQuerySerializer(data=request.query_params)
            query.is_valid(raise_exception=True)
            # counted and sliced in the database; only the page's items get their details
            queue = adjudication.queue_rows(pool=judging.pool, gap=query.validated_data.get("gap"))
            page = stats.queue_entries(self.paginate_queryset(queue) or [])
            return self.get_paginated_response(QueueEntrySerializer(page, many=True).data)
        form = AdjudicateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        item = _pool_item(judging.pool, data)
        decision = adjudication.adjudicate(
            item=item, adjudicator=request.user, grade=data["grade"], unrateable=data["unrateable"],
            note=data["note"],
        )  # fmt: skip
        return Response(AdjudicationSerializer(decision).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: AdjudicationSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def adjudications(self, request: Request, pool: str | None = None) -> Response:
        """The decisions recorded in this pool."""
        judging = self.get_object()
        decisions = Adjudication.objects.filter(item__pool=judging.pool).select_related(
            "item__topic", "item__document", "adjudicator"
        )
        page = self.paginate_queryset(decisions.order_by("-decided_at", "-id"))
        return self.get_paginated_response(AdjudicationSerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("rater", str, description="only this rater's judgements"),
            OpenApiParameter("qid", str, description="only this topic's judgements"),
        ],
        responses={200: PoolJudgementSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def judgements(self, request: Request, pool: str | None = None) -> Response:
        """Every judgement of the pool with its revisions (paginated)."""
        judging = self.get_object()
        rows = (
            Judgement.objects.filter(item__pool=judging.pool)
            .select_related("item__topic", "item__document", "rater")
            .prefetch_related("revisions__changed_by")
            .order_by("item__topic__qid", "item__document__docid", "rater__username")
        )
        if request.query_params.get("rater"):
            rows = rows.filter(rater__username=request.query_params["rater"])
        if request.query_params.get("qid"):
            rows = rows.filter(item__topic__qid=request.query_params["qid"])
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(PoolJudgementSerializer(page, many=True).data)

    @extend_schema(request=CrowdImportSerializer, responses={202: JobSerializer, 400: None})
    @action(
        detail=True,
        methods=["post"],
        url_path="crowd-imports",
        url_name="crowd-imports",
        parser_classes=[MultiPartParser, FormParser],
    )
    def crowd_imports(self, request: Request, pool: str | None = None) -> Response:
        """Import a crowd file (many workers' labels) into the pool: 202 with the job to poll, whose
        `counts` say how many rows were created, revised, made unrateable, and skipped by reason.

        A bad option is a 400 naming it (a `CrowdOptionError`, answered by `refusal`). A file up to
        IMPORT_CHECK_MAX_BYTES that would fail is a 400 with `file` listing the errors by line (FILE:LINE),
        and nothing is stored (no job either); a larger file is checked by its job, which then fails with
        the errors."""
        judging = self.get_object()
        form = CrowdImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        options = dict(form.validated_data)
        upload = options.pop("file")
        try:
            job = crowd_import.start_crowd_import(
                pool=judging.pool, upload=upload, user=request.user, **options
            )
        except ImportFailed as exc:
            raise ValidationError({"file": exc.errors}) from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

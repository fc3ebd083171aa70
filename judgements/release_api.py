"""API for qrels releases and agreement (managers and admins)."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from judgements import queries, releases
from judgements.api import refusal
from judgements.errors import JudgingError
from judgements.models import Judging, Release
from judgements.release_policy import PolicyField
from judgements.releases import release_file_response
from judgements.report_serializers import AgreementSerializer
from pooling.api import JobSerializer
from pooling.models import Pool
from pooling.permissions import IsManager, ManagedNameField, managed_pool


class ReleaseSerializer(serializers.ModelSerializer):
    """A release: `id` is its key in the API (counting every pool's releases), `number` what people call
    it, counting its pool's ("release 2 of news"); `files` is each file's SHA-256 by name, `downloads` each
    file's address by name (the `files/<name>/` action, so a client need not build it)."""

    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    rubric = serializers.StringRelatedField()
    downloads = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = [
            "id", "number", "pool", "policy", "unjudged", "rubric", "files", "downloads", "counts",
            "manifest", "created_at",
        ]  # fmt: skip

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string", "format": "uri"}})
    def get_downloads(self, release: Release) -> dict[str, str]:
        request = self.context.get("request")
        out = {}
        for name in release.files:
            path = reverse("release-files", kwargs={"pk": release.pk, "filename": name})
            out[name] = request.build_absolute_uri(path) if request is not None else path
        return out


class ReleaseRequestSerializer(serializers.Serializer):
    """A release to make; its policy is checked for the pool by `releases.start_release` (`check_policy`),
    a 400 on `policy` before any job."""

    pool = ManagedNameField(queryset=Pool.objects.all())
    policy = PolicyField()
    unjudged = serializers.ChoiceField(choices=Release.Unjudged.values, default="explicit")
    judge = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=80,
        help_text="an admitted model judge of the pool whose labels fill the items people have not judged",
    )

    def validate_pool(self, value: Pool) -> Pool:
        if not Judging.objects.filter(pool=value).exists():
            raise serializers.ValidationError("this pool has no judging set-up (rubric, raters)")
        return value


class ReleaseViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Immutable qrels releases. POST makes one as a Celery task (202 with the job to poll)."""

    permission_classes = [IsManager]
    serializer_class = ReleaseSerializer

    def get_queryset(self) -> Any:
        queryset = Release.objects.managed_by(self.request.user).select_related("pool", "rubric")
        pool = self.request.query_params.get("pool")
        return queryset.filter(pool__name=pool) if pool else queryset

    @extend_schema(request=ReleaseRequestSerializer, responses={202: JobSerializer, 503: None})
    def create(self, request: Request) -> Response:
        form = ReleaseRequestSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            job = releases.start_release(
                pool=data["pool"],
                policy=data["policy"],
                unjudged=data["unjudged"],
                user=request.user,
                judge=data.get("judge") or None,
            )
        except JudgingError as exc:  # a policy naming no rater of the pool, a judge not admitted...
            raise refusal(exc) from None
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: OpenApiResponse(description="the file")})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<filename>[\w.]+)")
    def files(self, request: Request, pk: str | None = None, filename: str = "") -> FileResponse:
        release = self.get_object()
        return release_file_response(release, filename)


@extend_schema(parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH, description="pool name")])
class AgreementViewSet(viewsets.ViewSet):
    """Inter-rater agreement of a pool (Cohen, Fleiss, Krippendorff, per pair and per topic)."""

    permission_classes = [IsManager]
    lookup_field = "name"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "weights", str, enum=list(queries.INTERVAL_WEIGHTS),
                description="the kappa whose intervals each pair and topic carries (default unweighted)",
            )
        ],
        responses={200: AgreementSerializer},
    )  # fmt: skip
    def retrieve(self, request: Request, name: str | None = None) -> Response:
        pool = managed_pool(request, name or "", queryset=Pool.objects.all())
        if not Judging.objects.filter(pool=pool).exists():
            raise Http404
        try:
            weights = queries.interval_weights(request.query_params.get("weights"))
        except ValueError as exc:
            raise serializers.ValidationError({"weights": [str(exc)]}) from None
        return Response(queries.cached_for_pool(pool, "agreement", queries.pool_agreement, weights=weights))


def register(router: Any) -> None:
    router.register("releases", ReleaseViewSet, basename="release")
    router.register("agreement", AgreementViewSet, basename="agreement")

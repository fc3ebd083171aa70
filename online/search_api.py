"""The interleaving search path as a plain function view (`labeling.plain_api`, as the rater's loop is):

    GET /api/interleaving/<name>/ranking/?qid=<qid>&user=<searcher>

A search front end calls it on every search, so it skips DRF's request wrapper, content negotiation and
renderer, and its steady state reads nothing from the database: who the token is
(`experiments.SearchPathToken`), who may use the experiment (`experiments.usable_experiment`) and the runs'
lists (`experiments.top_lists`) are memoised in the process. The rules are the API's: a token or a session,
the `interleaving` throttle, a 400 naming the field, a 404 for an experiment the caller may not use.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.views import APIView

from labeling import plain_api
from online import experiments
from online.experiment_api import InterleavingThrottle, RankingQuerySerializer

ALLOW = "GET, HEAD, OPTIONS"


class _RankingSchema(APIView):
    @extend_schema(
        operation_id="interleaving_ranking_retrieve",
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, description="experiment name"),
            RankingQuerySerializer,
        ],
        responses={
            200: inline_serializer(
                "InterleavedList",
                {
                    "experiment": serializers.CharField(),
                    "qid": serializers.CharField(),
                    "method": serializers.CharField(),
                    "docids": serializers.ListField(child=serializers.CharField()),
                    "teams": serializers.ListField(child=serializers.CharField()),
                },
            )
        },
        tags=["interleaving"],
    )
    def get(self, request: Any, name: str) -> Any:
        """The interleaved list of a query for a searcher (the same list each time the same searcher asks
        the same query), with the team of each position (A, B, or - for the shared top)."""


@plain_api.documented_by(_RankingSchema)
@plain_api.endpoint(
    methods=["GET"], token=experiments.SearchPathToken(), throttle_classes=[InterleavingThrottle]
)
def ranking(request: HttpRequest, caller: User, name: str) -> HttpResponse:
    """The interleaved list of a query for a searcher, with the team of each position."""
    experiment = experiments.usable_experiment(user=caller, name=name)
    if experiment is None:
        raise Http404
    # `serve` checks both parameters and names the one at fault (RankingQuerySerializer documents them)
    qid = request.GET.get("qid", "")
    shown = experiments.serve(experiment=experiment, qid=qid, user=request.GET.get("user", ""))
    data = {
        "experiment": experiment.name,
        "qid": qid,
        "method": experiment.method,
        "docids": shown.docids,
        "teams": shown.teams,
    }
    return plain_api.answer(data, status.HTTP_200_OK, allow=ALLOW)

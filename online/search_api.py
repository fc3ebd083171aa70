"""The interleaving search path as a plain function view (`labeling.plain_api`, as the rater's loop is):

    GET /api/interleaving/<name>/ranking/?qid=<qid>&user=<searcher>
    GET /api/interleaving/<name>/ranking/?q=<query text>&user=<searcher>

A front end that knows the searcher's query text rather than a qid gives `q`: it maps to the topic by the
click logs' rule (exact normalised text, `serving.qid_of_query`); a text no topic has answers 404 with
`{"detail": …, "q": <the text>}` (counted on the experiment), so the front end serves its production
ranking. The answer names the topic's `qid`, which the front end logs back with the impression.

A search front end calls it on every search, so it skips DRF's request wrapper, content negotiation and
renderer, and its steady state reads nothing from the database: who the token is
(`serving.SearchPathToken`), who may use the experiment (`serving.usable_experiment`) and the runs'
lists (`serving.top_lists`) are memoised in the process. The rules are the API's: a token or a session,
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
from labeling.bodies import body_serializer
from online import serving
from online.experiment_api import InterleavingThrottle

ALLOW = "GET, HEAD, OPTIONS"


class RankingQuerySerializer(serializers.Serializer):
    """The parameters (documentation: `serving.qid_of_query` and `serve` check them)."""

    qid = serializers.CharField(required=False, max_length=100, help_text="the topic (or give q)")
    q = serializers.CharField(
        required=False,
        max_length=serving.MAX_QUERY_TEXT,
        help_text="instead of qid: the searcher's query text (exact normalised match to a topic's query; "
        "none: 404 with this text as `q`)",
    )
    user = serializers.CharField(max_length=200, help_text="the searcher's (pseudonymous) id")


class _RankingSchema(APIView):
    @extend_schema(
        operation_id="interleaving_ranking_retrieve",
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, description="experiment name"),
            RankingQuerySerializer,
        ],
        responses={
            200: body_serializer(serving.InterleavedList),
            404: inline_serializer(
                "UnmappedQuery",
                {
                    "detail": serializers.CharField(),
                    "q": serializers.CharField(
                        required=False, help_text="the query text no topic has (absent: no such experiment)"
                    ),
                },
            ),
        },
        tags=["interleaving"],
    )
    def get(self, request: Any, name: str) -> Any:
        """The interleaved list of a query for a searcher (the same list each time the same searcher asks
        the same query), with the team of each position (A, B, or - for the shared top)."""


@plain_api.documented_by(_RankingSchema)
@plain_api.endpoint(methods=["GET"], token=serving.SearchPathToken(), throttle_classes=[InterleavingThrottle])
def ranking(request: HttpRequest, caller: User, name: str) -> HttpResponse:
    """The interleaved list of a query for a searcher, with the team of each position."""
    experiment = serving.usable_experiment(user=caller, name=name)
    if experiment is None:
        raise Http404
    # `qid_of_query` and `serve` check the parameters and name the one at fault (the serializers above
    # document them)
    try:
        qid = serving.qid_of_query(
            experiment=experiment, qid=request.GET.get("qid"), query=request.GET.get("q")
        )
    except serving.UnmappedQuery as exc:
        return plain_api.answer({"detail": str(exc), "q": exc.text}, status.HTTP_404_NOT_FOUND, allow=ALLOW)
    data = serving.interleaved_list(experiment=experiment, qid=qid, user=request.GET.get("user", ""))
    return plain_api.answer(data, status.HTTP_200_OK, allow=ALLOW)

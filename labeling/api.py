"""Project-wide API plumbing: an exception handler that never lets a bad request become a 500, the
pagination of every list endpoint, and a trivial authenticated endpoint (`GET /api/ping/`) to measure what
authentication and middleware cost."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus Django's ValidationError mapped to a 400 with its messages."""
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


class Pagination(LimitOffsetPagination):
    """`?limit=&offset=` on every list endpoint. A limit above `max_limit` is cut to it (DRF's rule for a
    too-large limit); an offset past `MAX_OFFSET` is a 400 naming it. Both bounds keep the numbers inside
    the database's 64-bit integers, which would otherwise refuse the query (a 500)."""

    max_limit = 1000
    MAX_OFFSET = 2**31 - 1

    def get_offset(self, request: Request) -> int:
        offset = super().get_offset(request)
        if offset > self.MAX_OFFSET:
            raise ValidationError({"offset": [f"Ensure this value is at most {self.MAX_OFFSET}."]})
        return offset


@extend_schema(responses={200: inline_serializer("Ping", {"ok": serializers.BooleanField()})})
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def ping(request: Request) -> Response:
    """`{"ok": true}` for any authenticated user (token or session), 401 otherwise. It does no work of its
    own: the anchor of the rater load benchmark (the cost of the API's authentication and middleware)."""
    return Response({"ok": True})

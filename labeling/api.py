"""Project-wide API plumbing: an exception handler that never lets a bad request become a 500, the
token endpoint (`POST /api/auth/token/`), and a trivial
authenticated endpoint (`GET /api/ping/`) to measure what authentication and middleware cost."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from labeling.throttling import AnonThrottle, LoginThrottle


def validated(form: type[serializers.Serializer], data: Any, **kwargs: Any) -> dict[str, Any]:
    """`data` as `form` (a serializer class, given `kwargs`) checks and converts it; a 400 naming each bad
    field otherwise."""
    checked = form(data=data, **kwargs)
    checked.is_valid(raise_exception=True)
    return dict(checked.validated_data)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus Django's ValidationError mapped to a 400 with its messages, a job refused now
    to a 409 and a job the broker refused to a 503 (the job is failed with that reason: retry it later)."""
    from pooling.jobs import JobRefused, QueueUnavailable

    if isinstance(exc, QueueUnavailable):
        return Response(
            {"detail": exc.reason, "job": exc.job.pk, "status": exc.job.status},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    if isinstance(exc, JobRefused):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


@extend_schema(responses={200: inline_serializer("Ping", {"ok": serializers.BooleanField()})})
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def ping(request: Request) -> Response:
    """`{"ok": true}` for any authenticated user (token or session), 401 otherwise. It does no work of its
    own: the anchor of the rater load benchmark (the cost of the API's authentication and middleware)."""
    return Response({"ok": True})


class TokenView(ObtainAuthToken):
    """`POST /api/auth/token/` with `username` and `password` (JSON or form): `{"token": "..."}`, the
    user's API token (made on first use, the same one after), for `Authorization: Token ...`.

    Wrong credentials answer 400. Throttled twice: the `login` rate (REST_FRAMEWORK's
    DEFAULT_THROTTLE_RATES) per address, and django-axes' lock of a username and address after
    LOGIN_FAILURE_LIMIT failures, during which the right password too answers 429."""

    authentication_classes = ()  # the password is the credential; a browser session plays no part
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES  # DRF's view names DRF's parsers, not the API's
    throttle_classes = (LoginThrottle, AnonThrottle)
    throttle_scope = "login"

    @extend_schema(
        request=AuthTokenSerializer,
        responses={200: inline_serializer("Token", {"token": serializers.CharField()})},
        auth=[],
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # django-axes marks the request it refused (the DRF request, which `authenticate` was given).
            if getattr(request, "axes_locked_out", False):
                raise Throttled(detail="Too many failed logins for this username from this address.")
            raise ValidationError(serializer.errors)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})


token = TokenView.as_view()

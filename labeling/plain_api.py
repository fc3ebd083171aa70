"""The API's hot endpoints as plain Django function views (the rater's loop, `judgements/rater_api.py`;
the interleaving search path, `online/search_api.py`); every other endpoint is a DRF view.

A request made all day by a machine skips DRF's request wrapper, content negotiation and renderer, and keeps
the API's rules: its authentication (`labeling.auth.TokenAuthentication`, or the session with DRF's CSRF
check), its throttles, the JSON DRF's renderer writes, DRF's refusals (code, body and headers) and Django's
``ValidationError`` as `labeling.api.exception_handler` answers it (400 naming the field). The OpenAPI
schema documents such a view through `documented_by` (the schema generator reads DRF views only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from labeling.auth import TokenAuthentication
from pooling.errors import Refused

RENDERER = JSONRenderer()


def answer(data: Any, code: int, *, allow: str, headers: dict[str, str] | None = None) -> HttpResponse:
    """JSON as DRF's `JSONRenderer` writes it (no body for None), with the headers DRF adds (`Allow`: the
    endpoint's methods)."""
    if data is None:
        response = HttpResponse(status=code)
        del response["Content-Type"]
    else:
        response = HttpResponse(RENDERER.render(data), status=code, content_type="application/json")
    patch_vary_headers(response, ["Accept"])
    response["Allow"] = allow
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def refusal(request: HttpRequest, exc: exceptions.APIException, *, allow: str) -> HttpResponse:
    """An API exception answered as DRF's exception handler answers it."""
    detail = exc.detail if isinstance(exc.detail, list | dict) else {"detail": exc.detail}
    headers = {}
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        headers["WWW-Authenticate"] = TokenAuthentication().authenticate_header(request)
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(math.ceil(exc.wait))
    return answer(detail, exc.status_code, allow=allow, headers=headers)


def caller(
    request: HttpRequest,
    *,
    token: TokenAuthentication | None = None,
    throttle_classes: Sequence[type[Any]] | None = None,
) -> User:
    """The user as the API's authentication classes find them, in their order: a token (`token`, the
    API's `TokenAuthentication` by default; its errors when it is wrong), else the session, whose writes
    need DRF's CSRF check; then the throttles (`throttle_classes`, REST_FRAMEWORK's
    DEFAULT_THROTTLE_CLASSES by default). Raises the APIException DRF would answer."""
    found = (token or TokenAuthentication()).authenticate(request)  # (DRF's reads request.META only)
    if found is not None:
        user = found[0]
        request.user = user  # as DRF sets it on the Django request (the session is not touched)
    else:
        user = getattr(request, "user", None)
        if user is None or not user.is_active:
            raise exceptions.NotAuthenticated()
        SessionAuthentication().enforce_csrf(request)
    waits = []
    classes = api_settings.DEFAULT_THROTTLE_CLASSES if throttle_classes is None else throttle_classes
    for throttle_class in classes:
        throttle = throttle_class()
        if not throttle.allow_request(request, None):
            waits.append(throttle.wait())
    if waits:
        raise exceptions.Throttled(wait=max((w for w in waits if w is not None), default=None))
    return user


def endpoint(
    *,
    methods: Sequence[str],
    token: TokenAuthentication | None = None,
    throttle_classes: Sequence[type[Any]] | None = None,
    refused: Sequence[type[Exception]] = (),
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A function view `view(request, user, **kwargs)` of the API: only `methods` (and OPTIONS, which says
    so; HEAD with GET), the caller authenticated and within the rates (`caller`), an APIException answered
    as the DRF API answers it, Django's ValidationError as a 400 naming the field, Http404 as DRF's 404, and
    the exceptions `refused` as a 400 with their message (on the field a `Refused` names, as
    `judgements.api.refusal` answers it; else as `detail`). CSRF is DRF's rule: checked for a session, not
    for a token (hence exempt from Django's middleware, which would ask it of both)."""
    allowed = [m.upper() for m in methods]
    if "GET" in allowed and "HEAD" not in allowed:
        allowed.append("HEAD")
    allow = ", ".join([*allowed, "OPTIONS"])
    refusals = tuple(refused)

    def wrap(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        def plain(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            if request.method == "OPTIONS":
                return answer(
                    {"name": view.__name__, "description": (view.__doc__ or "").strip()}, 200, allow=allow
                )
            try:
                if request.method not in allowed:
                    raise exceptions.MethodNotAllowed(request.method or "")
                return view(
                    request, caller(request, token=token, throttle_classes=throttle_classes), **kwargs
                )
            except exceptions.APIException as exc:
                return refusal(request, exc, allow=allow)
            except DjangoValidationError as exc:
                detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
                return answer(detail, status.HTTP_400_BAD_REQUEST, allow=allow)
            except Http404:
                return refusal(request, exceptions.NotFound(), allow=allow)
            except refusals as exc:
                body = exc.as_data() if isinstance(exc, Refused) else {"detail": str(exc)}
                return answer(body, status.HTTP_400_BAD_REQUEST, allow=allow)

        plain.__name__ = view.__name__
        plain.__doc__ = view.__doc__
        return plain

    return wrap


def documented_by(schema_view: type[APIView]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a function view the DRF view that documents it: drf-spectacular lists a URL pattern whose view
    has a `cls` (an APIView) and reads its schema from that class. The class is never routed."""

    def mark(view: Callable[..., Any]) -> Callable[..., Any]:
        view.cls = schema_view  # type: ignore[attr-defined]  # what DRF's as_view() sets
        view.initkwargs = {}  # type: ignore[attr-defined]  # as DRF's as_view() sets it, beside `cls`
        return view

    return mark

"""The pagination of every list endpoint (REST_FRAMEWORK's DEFAULT_PAGINATION_CLASS), and the same for a
ViewSet of no model (`PagedViewSetMixin`). A module of its own: DRF imports it while it defines
GenericAPIView, so it imports no view."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

_INTEGER = re.compile(r"-?[0-9]+")


class Pagination(LimitOffsetPagination):
    """`?limit=&offset=` on every list endpoint. A limit above `max_limit` is cut to it (DRF's rule for a
    too-large limit); an offset past `MAX_OFFSET` is a 400 naming it. Both bounds keep the numbers inside
    the database's 64-bit integers, which would otherwise refuse the query (a 500). Anything else that is
    not a limit of at least 1 or an offset of at least 0 (`abc`, `1.5`, `-1`, `0` for the limit) is a 400
    naming the parameter too, rather than quietly the first page; a blank one is as if not given."""

    max_limit = 1000
    MAX_OFFSET = 2**31 - 1

    def get_limit(self, request: Request) -> int | None:
        limit = _integer(request, self.limit_query_param, least=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        offset = _integer(request, self.offset_query_param, least=0)
        if offset is not None and offset > self.MAX_OFFSET:
            raise ValidationError({"offset": [f"Ensure this value is at most {self.MAX_OFFSET}."]})
        return offset or 0


class PagedViewSetMixin:
    """The one rule for a ViewSet that is not a GenericViewSet (its rows are dicts a service makes, not one
    model's through a serializer): `self.page(rows, to_data)` answers a page as GenericAPIView's
    `paginate_queryset` and `get_paginated_response` do, and `pagination_class` tells the schema generator
    that a response declared `many=True` is a page (with `limit` and `offset`). An action whose list is
    small by design says `pagination_class=None` and answers a plain array."""

    pagination_class: type[Pagination] | None = Pagination
    request: Request

    def page(self, rows: Any, to_data: Callable[[list[Any]], Any] = list) -> Response:
        """One page of `rows` (a queryset, sliced in the database, or a list), `to_data` making its JSON."""
        paginator = Pagination()
        page = paginator.paginate_queryset(rows, self.request, view=self)
        return paginator.get_paginated_response(to_data(list(page or [])))


def _integer(request: Request, name: str, *, least: int) -> int | None:
    """The query parameter `name` as an integer of at least `least` (ASCII digits, a sign), None when it is
    absent or blank; a 400 naming it otherwise. More than 20 digits count as 10**20, past every bound."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    if not _INTEGER.fullmatch(raw):
        raise ValidationError({name: ["A valid integer is required."]})
    number = int(raw) if len(raw) <= 21 else (-1 if raw.startswith("-") else 1) * 10**20
    if number < least:
        raise ValidationError({name: [f"Ensure this value is greater than or equal to {least}."]})
    return number

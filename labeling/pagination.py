"""The pagination of every list endpoint (REST_FRAMEWORK's DEFAULT_PAGINATION_CLASS). A module of its own:
DRF imports it while it defines GenericAPIView, so it imports no view."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request


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

"""The pages of a long list on a manager's HTML page (`templates/_pager.html` shows them): the page a
request asks for, and the way back to it after a form on that page is posted (the form posts its page
number as `page`, the view redirects to `page_url`).

Any page number is a page (`Paginator.get_page`): past the end, the last; anything but a number, the
first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest

from judgements.views import whole_number

#: The largest page number a redirect carries back (more is no page: the first).
MOST_PAGES = 2**31 - 1

Row = TypeVar("Row")


def page_of(request: HttpRequest, rows: Sequence[Row] | QuerySet[Any, Row], size: int) -> Page[Row]:
    """The page of `rows` (a queryset is counted and sliced in the database) that the request asks for:
    `page` of the query, or of the body of a POST (a form that posts its page back)."""
    number = request.POST.get("page") if request.method == "POST" else request.GET.get("page")
    return Paginator(rows, size).get_page(number)


def page_url(url: str, page: str | None) -> str:
    """`url` at page `page` (a posted page number): with `?page=` for page 2 and later, the bare `url` for
    page 1 or for anything but ASCII digits."""
    number = whole_number(page or "", most=MOST_PAGES)
    return f"{url}?page={number}" if number is not None and number > 1 else url

"""Pool pages for managers: the list of pools, a pool's statistics."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from pooling.models import Pool
from pooling.permissions import is_manager


@login_required
def pool_list(request: HttpRequest) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied
    return render(request, "pooling/pool_list.html", {"pools": Pool.objects.select_related("collection")})

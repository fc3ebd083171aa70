"""Roles: staff admins, pool managers (a group), and raters (members of pools)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission

MANAGERS_GROUP = "pool managers"


def is_manager(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Admins and members of the pool managers group configure pools, imports and releases."""
    if not user.is_authenticated:
        return False
    if user.is_staff or user.is_superuser:  # type: ignore[union-attr]
        return True
    cached = getattr(user, "_is_manager", None)
    if cached is None:
        cached = user.groups.filter(name=MANAGERS_GROUP).exists()  # type: ignore[union-attr]
        user._is_manager = cached  # type: ignore[union-attr]
    return bool(cached)


class IsManager(BasePermission):
    """API access for pool managers and admins only."""

    message = "Only pool managers and admins may do this."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_manager(request.user)


def manager_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page for pool managers and admins: log in first, then 403 for everyone else."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_manager(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapped


def managed_pool(request: HttpRequest, name: str) -> Any:
    """The pool named `name` for a manager's page: 403 for a non-manager, 404 for an unknown pool."""
    from django.shortcuts import get_object_or_404

    from pooling.models import Pool

    if not is_manager(request.user):
        raise PermissionDenied
    return get_object_or_404(Pool.objects.select_related("collection"), name=name)

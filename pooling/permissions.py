"""Roles and scoping: admins (superusers) see everything; pool managers (a group, or staff) own the
collections and pools they are managers of; raters are members of pools.

`is_manager` is the role (may use the manager pages and API at all, may create collections); which
collections and pools a manager reaches is `Collection.objects.managed_by(user)` /
`Pool.objects.managed_by(user)`, and every view gets its object through one helper below
(`managed_pool`, `managed_collection`): 403 for someone without the role, 404 for an object that does not
exist or that is someone else's (a manager of pool B cannot tell pool A exists).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework import serializers
from rest_framework.permissions import BasePermission

MANAGERS_GROUP = "pool managers"


def is_manager(user: User | AnonymousUser) -> bool:
    """Admins and members of the pool managers group configure pools, imports and releases."""
    if not user.is_authenticated:
        return False
    if user.is_staff or user.is_superuser:
        return True
    cached = getattr(user, "_is_manager", None)
    if cached is None:
        cached = user.groups.filter(name=MANAGERS_GROUP).exists()
        user._is_manager = cached  # type: ignore[attr-defined]  # memo on the request's user object
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


class ManagedNameField(serializers.SlugRelatedField):
    """A collection or pool named in an API write, among those the requesting user manages
    (`.managed_by(user)` of the queryset's model): another's is "does not exist", as a missing one is.
    The serializer needs the request in its context."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(slug_field="name", **kwargs)

    def get_queryset(self) -> Any:
        return super().get_queryset().managed_by(self.context["request"].user)


def managed_pool(request: Any, name: str, *, queryset: Any = None) -> Any:
    """The pool named `name` if the user manages it (every view, page or API, that acts on one pool as a
    manager gets it here): 403 for a non-manager, 404 for a pool that does not exist or is another's."""
    from django.shortcuts import get_object_or_404

    from pooling.models import Pool

    if not is_manager(request.user):
        raise PermissionDenied
    pools = queryset if queryset is not None else Pool.objects.select_related("collection")
    return get_object_or_404(pools.managed_by(request.user), name=name)


def managed_collection(request: Any, name: str, *, read_only: bool = False) -> Any:
    """The collection named `name` if the user manages it (`read_only`: or manages one of its pools):
    403 for a non-manager, 404 for a collection that does not exist or is another's."""
    from django.shortcuts import get_object_or_404

    from pooling.models import Collection

    if not is_manager(request.user):
        raise PermissionDenied
    collections = Collection.objects.all()
    scoped = collections.visible_to(request.user) if read_only else collections.managed_by(request.user)
    return get_object_or_404(scoped, name=name)


def may_open_collection(user: Any, collection_id: int) -> bool:
    """Whether `user` may open the page of collection `collection_id` (`managed_collection`'s rule): a page
    that names a collection links it only then (a manager a pool is shared with may not manage its
    collection)."""
    from pooling.models import Collection

    return Collection.objects.managed_by(user).filter(pk=collection_id).exists()

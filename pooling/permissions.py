"""Roles: staff admins, pool managers (a group), and raters (members of pools)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
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

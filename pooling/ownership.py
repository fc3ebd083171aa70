"""Who owns a collection or a pool: adding and removing its managers.

Who may see what is decided by the QuerySet methods `Collection.objects.managed_by(user)` and
`Pool.objects.managed_by(user)` (`pooling.models`); this module only changes the managers. A pool's or a
collection's creator is made its first manager by `imports.create_collection` / `pool_build.create_pool`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from pooling.errors import Refused
from pooling.models import Collection, Pool
from pooling.permissions import MANAGERS_GROUP, is_manager


class OwnershipError(Refused):
    """A change of managers refused: the message says why; nothing changed."""


def _check_managers(users: list[Any]) -> None:
    refused = [user.get_username() for user in users if not is_manager(user) or not user.is_active]
    if refused:
        raise OwnershipError(
            f"not a pool manager: {', '.join(map(repr, refused))} (an admin adds them to the "
            f"{MANAGERS_GROUP!r} group first)"
        )


@transaction.atomic
def add_managers(*, owned: Collection | Pool, users: Iterable[Any]) -> list[str]:
    """Make `users` managers of the collection or pool `owned`; answers every manager's username.

    Only users who hold the manager role (the "pool managers" group, staff or admins) can be made
    managers: the role is an admin's to give, the ownership of one pool its managers'. Adding a manager
    twice changes nothing."""
    users = list(users)
    _check_managers(users)
    owned.managers.add(*users)
    return manager_names(owned=owned)


@transaction.atomic
def remove_manager(*, owned: Collection | Pool, user: Any) -> list[str]:
    """Take `user` off the managers of `owned`; answers the managers left. The last manager stays
    (a pool nobody but the admins could reach is refused: add another manager first)."""
    locked = type(owned).objects.select_for_update().get(pk=owned.pk)  # one removal at a time per object
    names = manager_names(owned=locked)
    if user.get_username() not in names:
        raise OwnershipError(f"{user.get_username()!r} is not a manager of {owned.name!r}")
    if len(names) == 1:
        raise OwnershipError(
            f"{user.get_username()!r} is the last manager of {owned.name!r}; add another first"
        )
    locked.managers.remove(user)
    return manager_names(owned=locked)


@dataclass(frozen=True)
class Managers:
    """The managers of a collection or pool, as the API answers them: a handful of usernames, sorted (a
    plain list, not a page)."""

    managers: list[str]


def manager_names(*, owned: Collection | Pool) -> list[str]:
    """The usernames of the managers of `owned`, sorted."""
    return sorted(owned.managers.values_list("username", flat=True))

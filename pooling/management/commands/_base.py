"""Shared plumbing of the pooling commands: look-ups with clear errors and the summary line."""

from __future__ import annotations

from django.core.management.base import CommandError

from pooling.models import Collection


def get_collection(name: str) -> Collection:
    collection = Collection.objects.filter(name=name).first()
    if collection is None:
        raise CommandError(f"no collection named {name!r} (create it with create_collection)")
    return collection

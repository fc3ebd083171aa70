from __future__ import annotations

from typing import Any

from pooling import deletion
from pooling.management.commands._base import NamedCommand, get_collection


class Command(NamedCommand):
    help = (
        "Delete a collection nothing uses (no pool, job, click log or experiment); else refused, saying why."
    )

    def act(self, name: str, options: dict[str, Any]) -> str:
        collection = get_collection(name)
        return deletion.delete_unused_collection(collection=collection).deleted(collection.name)

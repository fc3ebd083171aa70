from __future__ import annotations

from typing import Any

from pooling import deletion
from pooling.management.commands._base import NamedCommand, get_pool


class Command(NamedCommand):
    help = "Delete a pool nobody has judged, with its items (its runs stay); else refused, saying why."

    def act(self, name: str, options: dict[str, Any]) -> str:
        pool = get_pool(name)
        return deletion.pool_deleted(pool, deletion.delete_pool(pool=pool))

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import deletion
from pooling.management.commands._base import ServiceCommand, get_collection


class Command(ServiceCommand):
    help = (
        "Delete a collection nothing uses, with its documents, topics, runs and the files of its imports. "
        "Refused, with the reason and nothing deleted, while a pool is built on it (delete_pool first), "
        "while a job of it is at work, or while click logs or experiments depend on it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["name"])
        contents = deletion.delete_unused_collection(collection=collection)
        self.stdout.write(contents.deleted(collection.name))

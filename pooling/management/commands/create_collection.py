from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pooling import errors as pooling_errors
from pooling import imports
from pooling.management.commands._base import OWNER_HELP, get_owner


class Command(BaseCommand):
    help = "Create an empty collection of documents."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--description", default="", help="what the collection holds, for managers")
        parser.add_argument("--owner", help=OWNER_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = imports.create_collection(
                name=options["name"],
                description=options["description"],
                created_by=get_owner(options["owner"]),
            )
        except pooling_errors.ImportFailed as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"created collection {collection.name}")

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from pooling import pool_text
from pooling.management.commands._base import NamedCommand, get_pool


class Command(NamedCommand):
    help = (
        "Edit a pool's description and the instructions its raters read, at any time (built, judged or "
        "released: neither selects nor judges anything). What a pool selects is not edited: delete it "
        "(delete_pool) and make it again, or add runs (add_runs)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--description", help='the new description ("" clears it)')
        instructions = parser.add_mutually_exclusive_group()
        instructions.add_argument("--instructions", help='the new instructions ("" clears them)')
        instructions.add_argument(
            "--instructions-file", metavar="PATH", help="the new instructions, read from a UTF-8 text file"
        )

    def act(self, name: str, options: dict[str, Any]) -> str:
        pool = get_pool(name)
        instructions = options["instructions"]
        if options["instructions_file"] is not None:
            instructions = _read_text(options["instructions_file"])
        if options["description"] is None and instructions is None:
            raise CommandError("give --description, --instructions or --instructions-file: nothing to edit")
        texts = {"description": options["description"], "instructions": instructions}
        pool_text.edit_pool_text(pool=pool, **texts)
        return pool_text.texts_saved(pool, texts)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"--instructions-file {path}: no such file") from None
    except UnicodeDecodeError:
        raise CommandError(f"--instructions-file {path}: not UTF-8 text") from None
    except OSError as exc:
        raise CommandError(f"--instructions-file {path}: cannot read ({exc.strerror})") from None

"""Add users as raters of a pool. The pool's judging is set up with the default four-grade rubric if it has
none. With --create, missing users are created (password from --password-file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from judgements import membership
from pooling.management.commands._base import ServiceCommand, get_pool


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("users", help="comma-separated usernames")
        parser.add_argument("--create", action="store_true", help="create users that do not exist")
        parser.add_argument(
            "--password-file",
            help="with --create: a file whose first line is the password of every user created (kept out "
            "of the shell history); without it, created users get no usable password",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["pool"])
        names = list(dict.fromkeys(name.strip() for name in options["users"].split(",") if name.strip()))
        if not names:
            raise CommandError("name at least one user")
        if options["password_file"] and not options["create"]:
            raise CommandError("--password-file goes with --create")
        password = self._password(options["password_file"]) if options["password_file"] else None
        users_model = get_user_model()
        existing = {user.get_username(): user for user in users_model.objects.filter(username__in=names)}
        missing = [name for name in names if name not in existing]
        if missing and not options["create"]:
            raise CommandError(f"no user named {', '.join(map(repr, missing))} (--create to create them)")
        with transaction.atomic():
            created = []
            for name in missing:  # a refused name undoes the accounts made before it
                existing[name] = membership.create_rater_account(username=name, password=password)
                created.append(name)
            done = membership.add_raters(pool=pool, raters=[existing[name] for name in names])
        if created:
            note = "" if password is not None else " (no usable password: set one with changepassword)"
            self.stdout.write(f"created users: {', '.join(created)}{note}")
        self.stdout.write(
            f"pool {pool.name}: {len(done.added)} rater(s) added, {len(done.already)} already raters, "
            f"{done.judging.raters.count()} in all; rubric {done.judging.rubric}"
        )

    def _password(self, path: str) -> str:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from None
        if not lines or not lines[0].strip():
            raise CommandError(f"{path}: the first line should hold the password")
        return lines[0].strip()

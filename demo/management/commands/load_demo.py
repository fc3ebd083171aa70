"""Load the demo campaign: documents, topics and three rankers' runs built on this machine from the Python
standard library's own documentation, imported with the same commands a user runs; a depth-10 pool over
the three rankers; an admin, a pool manager and three raters. Idempotent: what exists is kept."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from demo import online_demo, online_experiments_demo
from pooling.models import Collection, Pool
from pooling.permissions import MANAGERS_GROUP

COLLECTION = "pydocs"
POOL = "pydocs-depth10"
RUNS = ("bm25", "tfidf", "lsa")
RATERS = ("rater1", "rater2", "rater3")


class Command(BaseCommand):
    help = "Build and load the demo campaign (stdlib documentation, 3 rankers, a depth-10 pool, 3 raters)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--quick", action="store_true", help="a small collection (for tests)")
        parser.add_argument("--data-dir", help="where to write the demo files (default: $DATA_DIR/demo)")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="where the demo will be served, to print (make demo passes its HOST and PORT)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from demo.build_demo_data import build

        data_dir = Path(
            options["data_dir"] or Path(settings.DATA_DIR) / ("demo-quick" if options["quick"] else "demo")
        )
        if not (data_dir / "documents.jsonl").exists():
            self.stdout.write(f"building the demo data in {data_dir} (from the standard library's docs)")
            build(data_dir, quick=options["quick"], log=lambda line: self.stdout.write(f"  {line}"))
        passwords = self._users()  # first: the demo manager owns the demo collection and pool
        if not Collection.objects.filter(name=COLLECTION).exists():
            call_command(
                "create_collection",
                COLLECTION,
                description="Python standard library documentation",
                owner="manager",
                stdout=self.stdout,
            )
            call_command(
                "import_documents", COLLECTION, str(data_dir / "documents.jsonl"), stdout=self.stdout
            )
            call_command("import_topics", COLLECTION, str(data_dir / "topics.jsonl"), stdout=self.stdout)
            for run in RUNS:
                call_command(
                    "import_run",
                    COLLECTION,
                    str(data_dir / "runs" / f"{run}.txt"),
                    name=run,
                    stdout=self.stdout,
                )
        if not Pool.objects.filter(name=POOL).exists():
            call_command(
                "create_pool",
                POOL,
                collection=COLLECTION,
                runs=",".join(RUNS),
                depth=10,
                judgements_per_item=2,
                price=1.5,
                description="Depth-10 pool over the three demo rankers; two judgements per item.",
                owner="manager",
                stdout=self.stdout,
            )
            call_command("build_pool", POOL, stdout=self.stdout)
        self._raters()
        online_experiments_demo.load(
            collection_name=COLLECTION,
            pool_name=POOL,
            data_dir=data_dir,
            raters=list(User.objects.filter(username__in=RATERS).order_by("username")),
            log=lambda line: self.stdout.write(line),
        )
        online_demo.load_clicks(
            pool=Pool.objects.get(name=POOL),
            runs=RUNS,
            data_dir=data_dir,
            log=lambda line: self.stdout.write(line),
        )
        self.stdout.write("")
        self.stdout.write(f"Demo ready on {options['url']}")
        for username, password in passwords.items():
            self.stdout.write(f"  log in as {username:<8} password {password}")

    def _users(self) -> dict[str, str]:
        """Create the demo accounts once; their passwords are kept in $DATA_DIR/demo-passwords.txt."""
        path = Path(settings.DATA_DIR) / "demo-passwords.txt"
        known: dict[str, str] = {}
        if path.exists():
            known = dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)
        group, _ = Group.objects.get_or_create(name=MANAGERS_GROUP)
        for username in ("admin", "manager", *RATERS):
            if User.objects.filter(username=username).exists() and username in known:
                continue
            password = known.get(username) or secrets.token_urlsafe(9)
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.is_staff = user.is_superuser = username == "admin"
            user.save()
            if username == "manager":
                user.groups.add(group)
            known[username] = password
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{name} {pw}\n" for name, pw in known.items()))
        path.chmod(0o600)
        return known

    def _raters(self) -> None:
        from judgements import membership

        pool = Pool.objects.get(name=POOL)
        membership.setup_judging(pool=pool, raters=User.objects.filter(username__in=RATERS))

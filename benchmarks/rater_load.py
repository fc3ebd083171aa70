"""Benchmark: the rater's loop over HTTP under gunicorn on PostgreSQL, against a trivial authenticated view
of the same server (`GET /api/ping/`).

Which loop (`--path`):
- `api` (the default): one request per judgement, `POST /api/assignments/<id>/judgement-and-next/` with a
  token: it judges the leased item and answers with the next one (each rater leases its first item once,
  in the warm-up). The physical limit is one trivial request per judgement.
- `browser`: what the judging page's key press sends: the same request with the rater's session cookie
  and CSRF token, then the page's background refresh of its progress bars (`GET /judge/<pool>/progress/`)
  at most once per JUDGE_PROGRESS_REFRESH_SECONDS (5 s, as the page's script does), each rater's refresh
  clock starting each phase at a seeded random point of the interval (pages are not in step); its latency
  is the key press's request.
- `two-requests`: `POST /api/pools/<pool>/next/`, then `POST /api/assignments/<id>/judgement/` (the loop
  before the one-request endpoint; a token).

Setup, not timed: a PostgreSQL database on postgres://postgres@127.0.0.1:5432 — `--database`, else
BENCH_DB, else `labeling_load_bench_<the checkout's directory name>`, so that two checkouts running it at
once do not collide — is dropped, created and migrated. A demo-sized campaign, with items plentiful
enough that no rater ever runs dry: 28 topics (the demo's count) × 1,000 documents of about 400 characters
of plain text (the demo's average), three runs ranking the same 1,000 documents per topic in different
orders, a depth-1,000 pool of 28,000 items with J = 3 judgements per item (84,000 judgements to give;
`--small`: 28 × 150), the default four-grade rubric, 32 raters with API tokens (and, for `browser`, a
logged-in session each); then
ANALYZE, so that the planner has the statistics autovacuum would have given a production database.

The server: `.venv/bin/gunicorn labeling.wsgi` bound to 127.0.0.1 on a free port, DEBUG=false, persistent
database connections (DB_CONN_MAX_AGE=600), Redis as broker and cache when it answers (as in production;
CELERY_BROKER_URL and CACHE_URL of the environment if set, else Redis database 0).
Default worker setup for two cores: 3 sync workers, cores + 1 (`--workers`, `--worker-class`, `--threads` to
try others). A request spends about three quarters of its time in Python, which threads cannot run in
parallel, so processes are what use the cores; one more than the cores keeps both busy while a worker waits
for PostgreSQL (on the same two cores); 4 or 5 workers (measured with the one-statement hot path) served a few
more loops but fewer trivial requests, so the ratio rose only by slowing the anchor. Threaded (gthread)
workers pin each keep-alive connection to one process: with a few long-lived connections one process got most
raters and the others idled. Sync workers close the connection after each answer (in production a proxy in
front keeps the clients' connections alive). The load generator is this process: a hand-written asyncio
HTTP/1.1 client (`asyncio.open_connection`, keep-alive; it reconnects when the server answers `Connection:
close`, as sync workers do), one connection per simulated rater. Its own CPU use is printed beside the
server's.

Measured (after a warm-up of every connection):
1. capacity: 32 raters each loop (above; a random grade), closed loop, no think time, for 30 s:
   judgements per second (loops completed in the window / its length); then the trivial view: 32
   keep-alive clients loop `GET /api/ping/` (a token) for 15 s: requests per second. The two alternate
   `--repeats` times (default 3; `--small` 1) and the best of each counts: on a shared machine one run of
   a 30-s phase moved the ratio by a tenth, and a busy neighbour only ever lowers a figure.
2. latency at a realistic load: loops arrive open loop (Poisson, seeded) at half the capacity for 30 s; each
   takes a free rater connection (waiting for one if all 32 are busy); its latency runs from its scheduled
   arrival to the judgement's answer, so queueing in the client and the server is included.
Beside the open loop, a probe commits a one-row INSERT every 50 ms on a table of its own and times it: the
disk's flush, which every judgement's synchronous commit waits for too. Where the loop's tail is the
machine's fsync stalling (on this virtual disk, stalls of 100-200 ms every few seconds under the load),
the probe's maximum shows it.
Beside each phase, the CPU seconds the gunicorn workers and the PostgreSQL backends spent per loop / per
ping (read from /proc): a cost figure that a busy neighbour on the machine disturbs less than throughput.

After gunicorn stops, the database is checked: duplicates = (item, rater) pairs judged twice plus items with
more judgements than required; lost = judgements the server answered 201 for that are not in the database,
plus the drift of the counters kept on the item row (`active_leases` against the live assignments,
`num_judgements` against the judgement rows). Both must be 0.

The printed inputs: the data, the server, the path and the machine's load average (the machine may be
shared: a busy neighbour lowers both figures, the ratio less). The anchor's figure (trivial requests/s),
then ours (judgements/s), the open-loop latency (target p99 ≤ 30 ms), and last
`ratio judgements/s / trivial req/s: X.XX` (target ≥ 0.5 for the one-request loop).

Usage: .venv/bin/python benchmarks/rater_load.py [--small] [--path api|browser|two-requests] [--keep]
       [--database NAME] [--workers N] [--worker-class K] [--threads N] [--seconds S] [--repeats N]
       [--profile N]
  --small      a 5-second smoke run (28 × 150 items; 5 s per phase)
  --keep       keep the database afterwards
  --profile N  afterwards, run 300 loops in process (Django's test client on the same database) under
               cProfile and print the N costliest functions and the SQL of one loop (the key press of
               `--path browser` with its session and CSRF token, else the api path's)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import math
import os
import pstats
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import SERVER, drop_database, fresh_database, service_up  # noqa: E402

DATABASE = os.environ.get("BENCH_DB") or f"labeling_load_bench_{ROOT.name}".replace("-", "_")  # --database
REDIS = ("127.0.0.1", 6379)
POOL = "load-bench"
TOPICS = 28
RUNS = 3
J = 3
RATERS = 32
# The judging page refreshes its progress bars at most this often (the setting of the same name, which the
# server started here reads from the same environment).
PROGRESS_REFRESH_SECONDS = float(os.environ.get("JUDGE_PROGRESS_REFRESH_SECONDS", "5"))
P99_TARGET_MS = 30.0
RATIO_TARGET = 0.5
SEED = 20240611
SETTINGS_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL", "DEBUG")
WORDS = [
    "the", "a", "of", "to", "and", "in", "is", "for", "on", "with", "as", "by", "an", "be", "this",
    "that", "from", "or", "are", "it", "at", "which", "function", "module", "returns", "value", "object",
    "string", "list", "dict", "file", "path", "error", "raised", "argument", "default", "none", "true",
    "false", "class", "method", "attribute", "instance", "number", "integer", "float", "bytes",
    "encoding", "socket", "thread", "process", "queue", "lock", "iterator", "generator", "context",
    "manager", "exception", "timeout", "buffer", "stream", "parse", "format", "json", "date", "time",
]  # fmt: skip


# ------------------------------------------------------------------------------------------ database


def settings_env(
    data_dir: Path, secret: str, *, database: str | None = None, **overrides: str
) -> dict[str, str]:
    """The environment of the server (and of this process's Django): production values, PostgreSQL
    (`database`, this benchmark's by default), then `overrides` (the interleaving benchmark's)."""
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="labeling.settings",
        DATABASE_URL=f"{SERVER}/{database or DATABASE}",
        DEBUG="false",
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        SECRET_KEY=secret,
        BLIND_ORDER_KEY=secret,
        DB_CONN_MAX_AGE="600",
        DATA_DIR=str(data_dir),
        LOG_LEVEL="WARNING",
        # 32 raters looping without think time exceed the production rate per account by design.
        API_THROTTLE_USER="",
    )
    if service_up(*REDIS):
        env["CELERY_BROKER_URL"] = os.environ.get("CELERY_BROKER_URL") or f"redis://{REDIS[0]}:{REDIS[1]}/0"
        if os.environ.get("CACHE_URL"):
            env["CACHE_URL"] = os.environ["CACHE_URL"]
    env.update(overrides)
    return env


def set_up_django(prefix: str, *, database: str, **overrides: str) -> tuple[Path, dict[str, str]]:
    """A scratch directory, the server's environment (`settings_env`) made this process's too, Django set
    up on it, and `database` dropped and created empty. Returns (directory, environment)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    env = settings_env(work / "data", secrets.token_urlsafe(40), database=database, **overrides)
    for key in SETTINGS_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(env)
    import django

    django.setup()
    fresh_database(database)
    return work, env


def load_data(*, items_per_topic: int) -> tuple[str, list[str], list[str], int]:
    """Migrate and load the campaign (see the module docstring). Returns (pool name, tokens, session keys,
    items)."""
    import numpy as np
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connections
    from rest_framework.authtoken.models import Token

    from judgements import membership
    from pooling import pool_build as pool_build
    from pooling.models import Collection, Document, PoolItem, Run, RunRow, Topic

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(SEED)
    collection = Collection.objects.create(name="load-bench", description="rater load benchmark")
    Topic.objects.bulk_create(
        Topic(collection=collection, qid=f"t{t:02d}", query=f"how to {WORDS[t]} a {WORDS[t + 20]}",
              description="what the searcher wants", narrative="relevant if it answers the question",
              segments=["head" if t % 2 else "tail"])
        for t in range(TOPICS)
    )  # fmt: skip
    words = np.array(WORDS)
    documents = []
    for t in range(TOPICS):
        for d in range(items_per_topic):
            text = " ".join(words[rng.integers(0, len(words), size=int(rng.integers(40, 90)))])
            documents.append(
                Document(collection=collection, docid=f"t{t:02d}-d{d:04d}", title=f"Document {t}/{d}",
                         text=text, url=f"https://docs.example.org/t{t}/{d}.html")
            )  # fmt: skip
    Document.objects.bulk_create(documents, batch_size=5000)
    topics = dict(Topic.objects.filter(collection=collection).values_list("qid", "id"))
    doc_ids = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    runs = []
    for r in range(RUNS):
        run = Run.objects.create(collection=collection, name=f"run{r}")
        rows = []
        for t in range(TOPICS):
            order = rng.permutation(items_per_topic)
            for rank, d in enumerate(order, 1):
                document = doc_ids[f"t{t:02d}-d{d:04d}"]
                rows.append(RunRow(run=run, topic_id=topics[f"t{t:02d}"], document_id=document, rank=rank,
                                   score=float(items_per_topic - rank)))  # fmt: skip
        RunRow.objects.bulk_create(rows, batch_size=5000)
        run.num_rows, run.num_topics = len(rows), TOPICS
        run.save()
        runs.append(run)
    pool = pool_build.create_pool(
        name=POOL, collection=collection, runs=runs, depth=items_per_topic, judgements_per_item=J
    )
    pool_build.build_pool(pool=pool)
    User.objects.bulk_create(
        User(username=f"rater{i:02d}", password=make_password(None)) for i in range(RATERS)
    )
    raters = list(User.objects.filter(username__startswith="rater").order_by("username"))
    Token.objects.bulk_create(Token(user=user, key=Token.generate_key()) for user in raters)
    membership.setup_judging(pool=pool, raters=raters)
    tokens = list(
        Token.objects.filter(user__in=raters).order_by("user__username").values_list("key", flat=True)
    )
    # A logged-in session for each rater, as the login page leaves it (the `browser` path's credential).
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    sessions = []
    for user in raters:
        session = import_module(settings.SESSION_ENGINE).SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "labeling.auth.ModelBackend"  # the one that checks passwords
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        sessions.append(str(session.session_key))
    items = PoolItem.objects.filter(pool=pool).count()
    with connections["default"].cursor() as cursor:
        cursor.execute("ANALYZE")  # planner statistics, as autovacuum would have them in production
    connections.close_all()
    return POOL, tokens, sessions, items


# ------------------------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_gunicorn(
    *, env: dict[str, str], port: int, workers: int, worker_class: str, threads: int, log: Path
) -> subprocess.Popen[bytes]:
    binary = ROOT / ".venv" / "bin" / "gunicorn"
    command = [str(binary)] if binary.exists() else [sys.executable, "-m", "gunicorn"]
    command += [
        "labeling.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
        "--worker-class", worker_class, "--keep-alive", "75",
        "--backlog", "2048", "--worker-tmp-dir", "/dev/shm", "--log-level", "warning",
        "--error-logfile", str(log), "--chdir", str(ROOT),
    ]  # fmt: skip
    if worker_class == "gthread":  # (gunicorn turns sync workers given threads into gthread ones)
        command += ["--threads", str(threads)]
    return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)


def stop_gunicorn(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's own process group (graceful), SIGKILL after 20 s."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def stop_gunicorn_and_check_log(process: subprocess.Popen[bytes], *, log: Path, work: Path) -> None:
    """Stop the server; print the error lines of its log (and the log's end) if it has any, else remove
    the work folder (the log is in it)."""
    stop_gunicorn(process)
    text = log.read_text(errors="replace") if log.exists() else ""
    problems = [line for line in text.splitlines() if "Traceback" in line or "ERROR" in line]
    if problems:
        print(f"gunicorn log ({log}): {len(problems)} error lines, first: {problems[0]}")
        print(text[-3000:])
    else:
        shutil.rmtree(work, ignore_errors=True)


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes (those that vanished count 0)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def worker_pids(master: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                pids.append(int(entry.name))
    return pids


def backend_pids(database: str | None = None) -> list[int]:
    """The PostgreSQL backends connected to `database` (this benchmark's by default)."""
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database or DATABASE],
        ).fetchall()
    return [int(row[0]) for row in rows]


@dataclass
class CpuMeter:
    """CPU seconds of the gunicorn workers, the PostgreSQL backends of the bench database and this client."""

    master: int
    database: str | None = None  # this benchmark's by default
    workers: list[int] = field(default_factory=list)
    backends: list[int] = field(default_factory=list)
    start: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def begin(self) -> None:
        self.workers, self.backends = worker_pids(self.master), backend_pids(self.database)
        self.start = (cpu_seconds(self.workers), cpu_seconds(self.backends), time.process_time())

    def end(self) -> tuple[float, float, float]:
        now = (cpu_seconds(self.workers), cpu_seconds(self.backends), time.process_time())
        return now[0] - self.start[0], now[1] - self.start[1], now[2] - self.start[2]


# ------------------------------------------------------------------------------------------- client


class HttpError(Exception):
    pass


class Connection:
    """One HTTP/1.1 keep-alive connection with a rater's token; reconnects after `Connection: close`."""

    def __init__(self, port: int, token: str, session: str | None = None) -> None:
        self.port = port
        if session is None:
            self.head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Token {token}\r\n"
        else:  # a browser's credentials: the session cookie, and the CSRF token in cookie and header
            csrf = secrets.token_hex(16)
            self.head = (
                f"Host: 127.0.0.1:{port}\r\nCookie: sessionid={session}; csrftoken={csrf}\r\n"
                f"X-CSRFToken: {csrf}\r\n"
            )
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.connects = 0
        self.assignment: int | None = None  # the rater's live lease (the one-request loops)
        self.progress_at = -float("inf")  # when this rater's page last refreshed its progress bars

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.connects += 1
        assert self.reader is not None
        head = f"{method} {path} HTTP/1.1\r\n{self.head}"
        if method != "GET":
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        try:
            raw = await self.reader.readuntil(b"\r\n\r\n")
            lines = raw[:-4].split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            length, close, chunked = None, False, False
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection":
                    close = value.strip().lower() == b"close"
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
            if chunked:
                content = await self._chunks()
            elif length is not None:
                content = await self.reader.readexactly(length)
            elif status == 204 or status == 304 or status < 200:
                content = b""
            else:
                content, close = await self.reader.read(), True
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, IndexError) as exc:
            self.close()
            raise HttpError(f"{method} {path}: {type(exc).__name__} {exc}") from None
        if close:
            self.close()
        return status, content

    async def _chunks(self) -> bytes:
        assert self.reader is not None
        parts = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)


@dataclass
class Tally:
    loops: int = 0
    latencies: list[float] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)
    dry: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)

    def error(self, what: str, detail: str) -> None:
        self.errors[what] += 1
        if len(self.samples) < 5:
            self.samples.append(f"{what}: {detail[:300]}")


@dataclass(frozen=True)
class Loop:
    """What a rater's loop sends (`--path`): see the module docstring."""

    path: str
    pool: str

    @property
    def next_path(self) -> str:
        return f"/api/pools/{self.pool}/next/"


async def lease_first(conn: Connection, loop: Loop, tally: Tally) -> bool:
    status, body = await conn.request("POST", loop.next_path)
    if status == 204:
        tally.dry += 1
        return False
    if status != 200:
        tally.error(f"next {status}", body.decode(errors="replace"))
        return False
    conn.assignment = int(json.loads(body)["assignment"])
    return True


async def one_loop(conn: Connection, loop: Loop, grade: int, tally: Tally) -> float | None:
    """One judgement by the loop of `loop.path`. Returns when the judging request was answered
    (perf_counter), or None if something answered other than expected."""
    payload = b'{"grade": %d, "seconds": 4.5}' % grade
    try:
        if loop.path == "two-requests":
            if not await lease_first(conn, loop, tally):
                return None
            path = f"/api/assignments/{conn.assignment}/judgement/"
            status, body = await conn.request("POST", path, payload)
            answered = time.perf_counter()
            if status != 201:
                tally.error(f"judgement {status}", body.decode(errors="replace"))
                return None
            tally.acked.append(int(json.loads(body)["id"]))
            return answered
        if conn.assignment is None and not await lease_first(conn, loop, tally):
            return None
        path = f"/api/assignments/{conn.assignment}/judgement-and-next/"
        status, body = await conn.request("POST", path, payload)
        answered = time.perf_counter()
        if status != 201:
            conn.assignment = None
            tally.error(f"judgement-and-next {status}", body.decode(errors="replace"))
            return None
        data = json.loads(body)
        tally.acked.append(int(data["judgement"]["id"]))
        conn.assignment = None if data["next"] is None else int(data["next"]["assignment"])
        # the page refreshes its progress bars once the next item is shown, at most once per interval
        if loop.path == "browser" and answered - conn.progress_at >= PROGRESS_REFRESH_SECONDS:
            conn.progress_at = answered
            status, body = await conn.request("GET", f"/judge/{loop.pool}/progress/")
            if status != 200:
                tally.error(f"progress {status}", body.decode(errors="replace"))
                return None
    except HttpError as exc:
        tally.error("connection", str(exc))
        return None
    return answered


def stagger_refreshes(conns: list[Connection]) -> None:
    """At the start of a phase, each rater's page last refreshed its progress bars at a (seeded) random
    moment of the last interval: raters' pages are not in step. Without it the pause between two phases
    (the trivial view's 15 s) makes every rater's refresh due on their first loop, 32 at once, a burst no
    campaign sees."""
    rng = random.Random(SEED + 2)
    now = time.perf_counter()
    for conn in conns:
        conn.progress_at = now - rng.uniform(0.0, PROGRESS_REFRESH_SECONDS)


async def closed_loop(conns: list[Connection], loop: Loop, seconds: float, tally: Tally) -> float:
    """Every connection loops with no think time; loops completed inside the window count. Returns the
    window's length."""
    rng = random.Random(SEED)
    stagger_refreshes(conns)
    start = time.perf_counter()
    deadline = start + seconds

    async def rater(conn: Connection) -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            answered = await one_loop(conn, loop, rng.randrange(4), tally)
            if answered is not None and time.perf_counter() <= deadline:
                tally.loops += 1
                tally.latencies.append(answered - began)
            elif answered is None:
                await asyncio.sleep(0.01)

    await asyncio.gather(*(rater(conn) for conn in conns))
    return seconds


async def ping_loop(conns: list[Connection], seconds: float, tally: Tally) -> float:
    start = time.perf_counter()
    deadline = start + seconds

    async def client(conn: Connection) -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            try:
                status, body = await conn.request("GET", "/api/ping/")
            except HttpError as exc:
                tally.error("connection", str(exc))
                continue
            done = time.perf_counter()
            if status != 200 or body != b'{"ok":true}':
                tally.error(f"ping {status}", body.decode(errors="replace"))
            elif done <= deadline:
                tally.loops += 1
                tally.latencies.append(done - began)

    await asyncio.gather(*(client(conn) for conn in conns))
    return seconds


async def open_loop(conns: list[Connection], loop: Loop, rate: float, seconds: float, tally: Tally) -> int:
    """Poisson arrivals of loops at `rate` per second for `seconds`; each loop takes a free connection.
    Latency runs from the scheduled arrival. Returns how many loops arrived."""
    rng = random.Random(SEED + 1)
    stagger_refreshes(conns)
    free: asyncio.Queue[Connection] = asyncio.Queue()
    for conn in conns:
        free.put_nowait(conn)

    async def arrival(scheduled: float) -> None:
        conn = await free.get()
        try:
            answered = await one_loop(conn, loop, rng.randrange(4), tally)
        finally:
            free.put_nowait(conn)
        if answered is not None:
            tally.loops += 1
            tally.latencies.append(answered - scheduled)

    return await poisson_arrivals(rng, rate, seconds, arrival)


async def poisson_arrivals(
    rng: random.Random, rate: float, seconds: float, arrival: Callable[[float], Coroutine[Any, Any, None]]
) -> int:
    """Start `arrival(scheduled)` at Poisson arrival times (`rate` per second, drawn from `rng`) for
    `seconds`, each as its own task; wait for them all. Returns how many arrived."""
    pending: set[asyncio.Task[None]] = set()
    start = time.perf_counter()
    offset, arrived = 0.0, 0
    while True:
        offset += rng.expovariate(rate)
        if offset >= seconds:
            break
        delay = start + offset - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(arrival(start + offset))
        pending.add(task)
        task.add_done_callback(pending.discard)
        arrived += 1
    await asyncio.gather(*pending)
    return arrived


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of `values`."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


async def wait_ready(port: int, token: str, process: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise SystemExit("gunicorn exited during start-up (see its log above)")
        conn = Connection(port, token)
        try:
            status, _ = await conn.request("GET", "/api/ping/")
            if status == 200:
                return
        except (OSError, HttpError):
            pass
        finally:
            conn.close()
        await asyncio.sleep(0.25)
    raise SystemExit("gunicorn did not answer /api/ping/ in time")


# ------------------------------------------------------------------------------------------- checks


def check_database(acked: list[int]) -> dict[str, int]:
    """Duplicates, lost judgements and counter drift, read from the database after the server stopped."""
    import psycopg

    with psycopg.connect(f"{SERVER}/{DATABASE}") as conn:

        def one(sql: str, *params: Any) -> int:
            return int(conn.execute(sql, params).fetchone()[0] or 0)  # type: ignore[index]  # an aggregate: one row

        return {
            "judgements": one("SELECT count(*) FROM judgements_judgement"),
            "acked": len(acked),
            "acked_distinct": len(set(acked)),
            "acked_missing": len(set(acked))
            - one("SELECT count(*) FROM judgements_judgement WHERE id = ANY(%s)", sorted(set(acked))),
            "unacknowledged": one(
                "SELECT count(*) FROM judgements_judgement WHERE NOT (id = ANY(%s))", sorted(set(acked))
            ),
            "duplicate_pairs": one(
                "SELECT count(*) FROM (SELECT 1 FROM judgements_judgement GROUP BY item_id, rater_id "
                "HAVING count(*) > 1) d"
            ),
            "over_judged_items": one(
                "SELECT count(*) FROM pooling_poolitem pi WHERE NOT pi.gold AND pi.required_judgements < "
                "(SELECT count(*) FROM judgements_judgement j WHERE j.item_id = pi.id)"
            ),
            "over_leased_items": one(
                "SELECT count(*) FROM pooling_poolitem pi WHERE NOT pi.gold AND pi.required_judgements < "
                "(SELECT count(*) FROM judgements_judgement j WHERE j.item_id = pi.id) + "
                "(SELECT count(*) FROM judgements_assignment a "
                "WHERE a.item_id = pi.id AND a.state = 'active')"
            ),
            "lease_drift": one(
                "SELECT sum(abs(pi.active_leases - (SELECT count(*) FROM judgements_assignment a "
                "WHERE a.item_id = pi.id AND a.state = 'active'))) FROM pooling_poolitem pi"
            ),
            "judgement_drift": one(
                "SELECT sum(abs(pi.num_judgements - (SELECT count(*) FROM judgements_judgement j "
                "WHERE j.item_id = pi.id))) FROM pooling_poolitem pi"
            ),
            "done_without_judgement": one(
                "SELECT count(*) FROM judgements_assignment a WHERE a.state = 'done' AND NOT EXISTS "
                "(SELECT 1 FROM judgements_judgement j "
                "WHERE j.item_id = a.item_id AND j.rater_id = a.rater_id)"
            ),
            "live_leases": one("SELECT count(*) FROM judgements_assignment WHERE state = 'active'"),
            "open_slots": one(
                "SELECT sum(greatest(required_judgements - num_judgements - active_leases, 0)) "
                "FROM pooling_poolitem"
            ),
        }


# ------------------------------------------------------------------------------------------ profile


def profile_in_process(tokens: list[str], sessions: list[str] | None, top: int, loops: int = 300) -> None:
    """`loops` judgements through `judgement-and-next` by Django's test client (same database, same
    middleware) under cProfile, round-robin over the raters: with their tokens (the `api` path), or with
    `sessions`, their session cookies and a CSRF token in cookie and header, CSRF checked (the `browser`
    path's key press); then the SQL of one judgement and of one ping."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    if sessions is None:
        clients = [Client(HTTP_AUTHORIZATION=f"Token {token}") for token in tokens]
    else:
        clients = []
        for session in sessions:
            csrf = secrets.token_hex(16)
            client = Client(enforce_csrf_checks=True, HTTP_X_CSRFTOKEN=csrf)
            client.cookies["sessionid"] = session
            client.cookies["csrftoken"] = csrf
            clients.append(client)
    leases: dict[int, int] = {}

    def loop(n: int) -> None:
        client = clients[n % len(clients)]
        if n % len(clients) not in leases:
            response = client.post(f"/api/pools/{POOL}/next/")
            assert response.status_code == 200, response.content
            leases[n % len(clients)] = response.json()["assignment"]
        response = client.post(
            f"/api/assignments/{leases[n % len(clients)]}/judgement-and-next/",
            {"grade": n % 4, "seconds": 4.5}, content_type="application/json",
        )  # fmt: skip
        assert response.status_code == 201, response.content
        leases[n % len(clients)] = response.json()["next"]["assignment"]

    for n in range(40):  # warm-up (and each rater's first lease)
        loop(n)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for n in range(loops):
        loop(n)
    profiler.disable()
    elapsed = time.perf_counter() - started
    print(
        f"\nprofile: {loops} judgements in process in {elapsed:.2f} s ({elapsed / loops * 1000:.2f} ms each)"
    )
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        print(out.getvalue())
    with CaptureQueriesContext(connection) as judge_queries:
        loop(0)
    with CaptureQueriesContext(connection) as ping_queries:
        clients[0].get("/api/ping/")
    for name, captured in (("judgement-and-next", judge_queries), ("ping", ping_queries)):
        print(f"{name}: {len(captured.captured_queries)} queries")
        for query in captured.captured_queries:
            print(f"  {query['time']:>6}s  {query['sql'][:220]}")


# ---------------------------------------------------------------------------------------------- main


def summary(name: str, tally: Tally, seconds: float) -> str:
    lat = tally.latencies
    return (
        f"{name}: {tally.loops} in {seconds:.1f} s = {tally.loops / seconds:.1f}/s; latency p50 "
        f"{percentile(lat, 50) * 1000:.1f} ms, p90 {percentile(lat, 90) * 1000:.1f} ms, "
        f"max {max(lat, default=math.nan) * 1000:.1f} ms"
    )


def cpu_line(name: str, cpu: tuple[float, float, float], count: int, seconds: float) -> str:
    server, database, client = cpu
    per = 1000 / max(count, 1)
    return (
        f"  cpu during {name}: gunicorn {server:.1f} s ({server * per:.2f} ms each), PostgreSQL "
        f"{database:.1f} s ({database * per:.2f} ms each), this client {client:.1f} s "
        f"({client / seconds:.2f} of a core)"
    )


def report_errors(name: str, tally: Tally) -> None:
    if tally.errors:
        print(f"  {name} errors: {dict(tally.errors)}")
        for sample in tally.samples:
            print(f"    {sample}")
    if tally.dry:
        print(f"  {name}: {tally.dry} times nothing was left for a rater (204)")


async def run_load(
    args: argparse.Namespace, port: int, tokens: list[str], sessions: list[str], master: int
) -> dict[str, Any]:
    seconds, ping_seconds, open_seconds = args.seconds, args.ping_seconds, args.open_seconds
    loop = Loop(path=args.path, pool=POOL)
    if args.path == "browser":
        conns = [Connection(port, token, session) for token, session in zip(tokens, sessions, strict=True)]
    else:
        conns = [Connection(port, token) for token in tokens]
    pingers = [Connection(port, token) for token in tokens]
    meter = CpuMeter(master)
    results: dict[str, Any] = {"acked": []}

    warm = Tally()
    await closed_loop(conns, loop, args.warmup, warm)
    await ping_loop(pingers, args.warmup / 2, Tally())
    results["acked"] += warm.acked
    print(f"warm-up: {warm.loops} loops, {dict(warm.errors) or 'no errors'}")

    # Capacity and the anchor, alternating, `--repeats` times: the best of each counts (a busy neighbour
    # only ever lowers a figure), with the server's CPU per loop / per ping of that round.
    rounds: list[Tally] = []

    async def measure(
        what: str, name: str, run: Callable[[Tally], Coroutine[Any, Any, Any]], length: float
    ) -> tuple[Tally, float]:
        """One phase: its tally, printed, and the server's CPU seconds per loop of it."""
        tally = Tally()
        meter.begin()
        await run(tally)
        cpu = meter.end()
        rounds.append(tally)
        print(summary(name, tally, length))
        print(cpu_line(f"the {what}", cpu, tally.loops, length))
        report_errors(what, tally)
        return tally, (cpu[0] + cpu[1]) / max(tally.loops, 1)

    best: dict[str, tuple[Tally, float]] = {}
    for round_ in range(1, args.repeats + 1):
        for conn in conns + pingers:
            conn.close()
        closed = await measure(
            "closed loop",
            f"closed loop {round_}/{args.repeats}, {len(conns)} raters, path {args.path} (judgements)",
            lambda tally: closed_loop(conns, loop, seconds, tally), seconds,
        )  # fmt: skip
        results["acked"] += closed[0].acked
        for conn in conns:
            conn.close()
        pinged = await measure(
            "trivial view", f"trivial view {round_}/{args.repeats}, {args.ping_clients} clients (requests)",
            lambda tally: ping_loop(pingers[: args.ping_clients], ping_seconds, tally), ping_seconds,
        )  # fmt: skip
        for key, measured in (("capacity", closed), ("ping", pinged)):
            if key not in best or measured[0].loops > best[key][0].loops:
                best[key] = measured
    capacity, results["loop_cpu"] = best["capacity"]
    pings, results["ping_cpu"] = best["ping"]

    rate = capacity.loops / seconds / 2
    for conn in conns + pingers:
        conn.close()
    latency = Tally()
    meter.begin()
    probe = asyncio.create_task(commit_probe(open_seconds))
    arrived = await open_loop(conns, loop, rate, open_seconds, latency)
    cpu = meter.end()
    commits = await probe
    results["acked"] += latency.acked
    print(
        f"open loop: Poisson arrivals at {rate:.1f} loops/s for {open_seconds:.0f} s: {arrived} arrived, "
        f"{latency.loops} completed"
    )
    print(cpu_line("the open loop", cpu, latency.loops, open_seconds))
    report_errors("open loop", latency)
    for conn in conns:
        conn.close()
    results.update(
        capacity=capacity.loops / seconds,
        ping=pings.loops / ping_seconds,
        p50=percentile(latency.latencies, 50) * 1000,
        p90=percentile(latency.latencies, 90) * 1000,
        p99=percentile(latency.latencies, 99) * 1000,
        max=max(latency.latencies, default=math.nan) * 1000,
        errors=sum(t.errors.total() for t in (warm, *rounds, latency)),
        dry=sum(t.dry for t in (warm, *rounds, latency)),
        connects=sum(conn.connects for conn in conns + pingers),
        commit_p99=percentile(commits, 99) * 1000,
        commit_max=max(commits, default=math.nan) * 1000,
        commits=len(commits),
    )
    return results


async def commit_probe(seconds: float, every: float = 0.05) -> list[float]:
    """Beside the open loop: a one-row INSERT committed (synchronously, as a judgement is) every `every`
    seconds on a table of its own, timed. Its latency is the disk's flush: when the machine's fsync stalls,
    every commit waits for it, a judgement's too, and the probe's maximum shows it beside the loop's."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(f"{SERVER}/{DATABASE}", autocommit=True) as conn:
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (at double precision)")
        times: list[float] = []
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            await conn.execute("INSERT INTO bench_commit_probe VALUES (%s)", [began])
            times.append(time.perf_counter() - began)
            await asyncio.sleep(max(0.0, every - (time.perf_counter() - began)))
        await conn.execute("DROP TABLE bench_commit_probe")
    return times


def main() -> None:
    global DATABASE
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="5-second smoke run")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--worker-class", default="sync")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, help="closed and open loop length (default 30; small 5)")
    parser.add_argument(
        "--repeats", type=int, help="rounds of closed loop and anchor; the best of each counts (default 3)"
    )
    parser.add_argument("--ping-clients", type=int, default=RATERS)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--path", choices=("api", "browser", "two-requests"), default="api")
    parser.add_argument("--database", default=DATABASE, help=f"the database to create (default {DATABASE})")
    args = parser.parse_args()
    DATABASE = args.database
    args.seconds = args.seconds or (5.0 if args.small else 30.0)
    args.open_seconds = args.seconds
    args.repeats = max(1, args.repeats or (1 if args.small else 3))
    args.ping_seconds = 5.0 if args.small else 15.0
    args.warmup = 2.0 if args.small else 5.0
    items_per_topic = 150 if args.small else 1000

    work, env = set_up_django("rater-load-", database=DATABASE)
    process: subprocess.Popen[bytes] | None = None
    log = work / "gunicorn.log"
    try:
        started = time.perf_counter()
        pool, tokens, sessions, items = load_data(items_per_topic=items_per_topic)
        print(
            f"data: {TOPICS} topics × {items_per_topic} items = {items:,} items, J={J} "
            f"({items * J:,} judgements to give), {RATERS} raters with tokens and sessions, database "
            f"{DATABASE} ({time.perf_counter() - started:.1f} s)"
        )
        what = {
            "api": "POST /api/assignments/<id>/judgement-and-next/ (token): one request per judgement",
            "browser": "the judging page's key press: POST …/judgement-and-next/ (session + CSRF), then "
            "GET /judge/<pool>/progress/",
            "two-requests": "POST /api/pools/<pool>/next/ then POST /api/assignments/<id>/judgement/ (token)",
        }[args.path]
        print(f"path: {args.path}: {what}")
        port = free_port()
        setup = f"{args.workers} {args.worker_class} workers" + (
            f" × {args.threads} threads" if args.worker_class == "gthread" else ""
        )
        print(
            f"server: gunicorn labeling.wsgi, {setup}, keep-alive 75 s, DB_CONN_MAX_AGE=600, "
            f"{'Redis' if 'CELERY_BROKER_URL' in env else 'no Redis'}; on 127.0.0.1:{port}; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        process = start_gunicorn(
            env=env, port=port, workers=args.workers, worker_class=args.worker_class, threads=args.threads,
            log=log,
        )  # fmt: skip
        asyncio.run(wait_ready(port, tokens[0], process))
        results = asyncio.run(run_load(args, port, tokens, sessions, process.pid))
    finally:
        if process is not None:
            stop_gunicorn_and_check_log(process, log=log, work=work)
    checks = check_database(results["acked"])
    duplicates = checks["duplicate_pairs"] + checks["over_judged_items"]
    lost = checks["acked_missing"] + checks["lease_drift"] + checks["judgement_drift"]
    print(
        f"database: {checks['judgements']:,} judgements, {checks['acked']:,} answered 201 "
        f"({checks['unacknowledged']} in the database without a 201), {checks['live_leases']} live leases, "
        f"{checks['over_leased_items']} items over-leased, {checks['done_without_judgement']} done "
        f"assignments without a judgement, {checks['open_slots']:,} judgements still to give"
    )
    print(
        f"client: {results['connects']} connections opened, {results['errors']} errors, "
        f"{results['dry']} times dry"
    )
    if args.profile:
        profile_in_process(tokens, sessions if args.path == "browser" else None, args.profile)
    if not args.keep:
        drop_database(DATABASE)
    print(
        f"load average now: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs; noisy figures when it is high)"
    )
    print(
        f"anchor, trivial view: {results['ping']:.1f} requests/s ({args.ping_clients} clients, "
        f"GET /api/ping/; best of {args.repeats})"
    )
    print(
        f"ours, capacity: {results['capacity']:.1f} judgements/s (path {args.path}, 32 raters, closed loop, "
        f"{args.seconds:.0f} s; best of {args.repeats})"
    )
    print(
        f"server cpu (gunicorn + PostgreSQL) per loop / per ping: {results['loop_cpu'] * 1000:.2f} ms / "
        f"{results['ping_cpu'] * 1000:.2f} ms"
    )
    print(
        f"open loop at {results['capacity'] / 2:.1f} loops/s: p50 {results['p50']:.1f} ms, p99 "
        f"{results['p99']:.1f} ms (target ≤ {P99_TARGET_MS:.0f} ms: "
        f"{'met' if results['p99'] <= P99_TARGET_MS else 'MISSED'}), p90 {results['p90']:.1f} ms, "
        f"max {results['max']:.1f} ms"
    )
    print(
        f"the disk's flush beside it ({results['commits']} one-row commits, one per 50 ms): p99 "
        f"{results['commit_p99']:.1f} ms, max {results['commit_max']:.1f} ms (a stall of the disk holds "
        "every judgement's commit as long)"
    )
    print(
        f"duplicates: {duplicates} ({checks['duplicate_pairs']} pairs judged twice, "
        f"{checks['over_judged_items']} items over J)"
    )
    print(
        f"lost: {lost} ({checks['acked_missing']} answered 201 but missing, lease counter drift "
        f"{checks['lease_drift']}, judgement counter drift {checks['judgement_drift']})"
    )
    ratio = results["capacity"] / results["ping"]
    print(f"target ratio ≥ {RATIO_TARGET}: {'met' if ratio >= RATIO_TARGET else 'MISSED'} (path {args.path})")
    print(f"ratio judgements/s / trivial req/s: {ratio:.2f}")
    if duplicates or lost:
        sys.exit(1)


if __name__ == "__main__":
    main()

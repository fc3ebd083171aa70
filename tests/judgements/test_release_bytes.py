"""A release's bytes: on PostgreSQL the server writes the lines of judgements.jsonl, and the files are exactly
those of the portable path (every row encoded in Python); on either database the files are those this
platform wrote before the server path existed (tests/judgements/data/release_bytes/, written by the
portable path, which is the code releases ran before; raters' pseudonyms and the hashes that depend on
them as placeholders)."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from judgements import exclusions, release_files, release_jsonl, releases
from judgements.models import Adjudication, Judgement
from pooling.models import Document, PoolItem
from tests.factories import make_collection, make_pool, make_run, make_user

DATA = Path(__file__).parent / "data" / "release_bytes"
FILES = ("qrels.txt", release_files.UNJUDGED_TOPICS_FILE, "judgements.jsonl")
ODD_DOCIDS = ['dé "q" x', "d\x1fx", "d\x1ey", "d\\n"]  # quotes, backslash, the COPY's delimiter and quote
NOTES = [
    "",
    'näh — "quoted", with a \\ backslash',
    "tab\tnewline\nreturn\r \x01 \x1f \x1e \x7f ✓ 😀 \u2028 \x02s1\x03",
    '"updated_at": "9999"}',
]
FACETS: list[object] = [
    {},
    {"b": "x", "a": 'ü "q" \\ \n'},
    {"n": 1.5, "i": 2, "big": 10**20, "l": [1, "a", None], "o": {"z": None, "a": True}},
    {"é": "1", "e": "2", "E": "3", "ab": "4", "a": "5"},
    {"updated_at": "9999-12-31"},
    [],
    "text",
    {"t": True, "f": False, "n": None},
]
# Doubles whose round(x, 3) is easy, a tie in their shortest text, exactly a tie (0.0625), near zero on
# either side, large, huge and tiny.
SECONDS = [0.0, -0.0, 12.3456, 2.0005, 0.0625, 0.1875, -0.0004, 5.0, -3.25, 123456.7895, 999999.9995,
           1e6 + 0.25, 1e9 + 0.0005, 1e16, 1e-300, 7.123456789, 0.0005, 1.0015, 2.675, 1234.5]  # fmt: skip


def build_pool(*, exotic: bool = False, required: int = 2):
    """A pool with two topics of judged items, one topic nobody judged, three raters, odd docids, every kind
    of note, facets and seconds, imported judgements, adjudications (a grade, unrateable) and pending
    items. `exotic` adds what only PostgreSQL stores: NaN and infinite seconds, a time in the year 999;
    `required` is the judgements each item needs (with 1, an item nobody judged must stay pending)."""
    collection = make_collection(name="bytes", topics=("q1", "q2", "q3"))
    for docid in ODD_DOCIDS:
        Document.objects.create(collection=collection, docid=docid, title="odd", text="odd")
    runs = [
        make_run(collection=collection, name="alpha",
                 lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012", *ODD_DOCIDS],
                        "q3": ["d015", "d016"]}),
        make_run(collection=collection, name="beta", lists={"q1": ["d003", "d005", "d001", "d006"],
                                                            "q2": ["d013", "d010"]}),
    ]  # fmt: skip
    raters = [make_user("alice"), make_user("bob"), make_user("carol")]
    pool = make_pool(collection=collection, runs=runs, name="bytes", judgements_per_item=required,
                     raters=raters, depth=10)  # fmt: skip
    items = list(PoolItem.objects.filter(pool=pool).exclude(topic__qid="q3").order_by("id"))
    base = datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    count = 0
    for n, item in enumerate(items):
        for r, rater in enumerate(raters):
            if (n + r) % 4 == 3 or (n == 2 and r > 0):
                continue  # pending items, and items judged once
            grade = None if (3 * n + r) % 7 == 0 else (n + 2 * r) % 4
            made = Judgement.objects.create(
                item=item, rater=rater, rubric=pool.judging.rubric, grade=grade, unrateable=grade is None,
                facets=FACETS[count % len(FACETS)], note=NOTES[count % len(NOTES)],
                seconds=SECONDS[count % len(SECONDS)], imported=count % 5 == 0,
            )  # fmt: skip
            created = base + timedelta(hours=count, microseconds=count)
            Judgement.objects.filter(pk=made.pk).update(
                created_at=created, updated_at=created + timedelta(minutes=count % 3)
            )
            count += 1
    boss = make_user("boss")
    Adjudication.objects.create(item=items[1], grade=3, adjudicator=boss, decided_at=base)
    Adjudication.objects.create(item=items[5], unrateable=True, adjudicator=boss, decided_at=base)
    if exotic:
        rows = list(Judgement.objects.filter(item__pool=pool).order_by("id"))
        for row, seconds in zip(rows, [math.nan, math.inf, -math.inf], strict=False):
            Judgement.objects.filter(pk=row.pk).update(seconds=seconds)
        early = datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
        Judgement.objects.filter(pk=rows[3].pk).update(created_at=early, updated_at=early)
        # labels that are not votes: an excluded rater's, and a model's
        exclusions.exclude_rater(pool=pool, rater=raters[2], by=boss)
        Judgement.all_kinds.filter(pk=rows[4].pk).update(kind="model")
    return pool, raters


def written(pool, tmp_path: Path, *, policy: str, explicit: bool):
    work = tmp_path / f"{policy}-{explicit}".replace(":", "_")
    work.mkdir()
    parsed = releases.check_policy(pool=pool, policy=policy)
    tally = release_files.write_qrels_and_judgements(work, pool=pool, policy=parsed, explicit=explicit)
    return {name: (work / name).read_bytes() for name in FILES}, tally


def placeholders(pool, raters) -> dict[str, str]:
    """Each rater's pseudonym → a placeholder naming the rater (pseudonyms depend on the pool's id)."""
    lines = release_jsonl.JudgementLines(pool=pool, tally=release_files.Tally())
    return {lines.pseudonym(rater.pk): f"<{rater.username}>" for rater in raters}


EXOTIC_ON_POSTGRESQL = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite stores a NaN of a float column as NULL"
)


@pytest.mark.parametrize(
    ("exotic", "required"), [(False, 2), pytest.param(True, 1, marks=EXOTIC_ON_POSTGRESQL)]
)
@pytest.mark.django_db
def test_it_writes_every_value_as_json_reads_it_back_under_every_policy(tmp_path, exotic, required):
    pool, raters = build_pool(exotic=exotic, required=required)
    seen = []
    # carol is excluded from the exotic pool: a policy naming her is refused (test_release_policy_check)
    for policy in ("majority", "median", "mean", "rater:alice", "rater:bob" if exotic else "rater:carol"):
        for explicit in (True, False):
            files, tally = written(pool, tmp_path, policy=policy, explicit=explicit)
            seen.append(files)
            lines = (
                files["judgements.jsonl"].decode("utf-8").split("\n")[:-1]
            )  # not splitlines: \x1c is no end
            assert lines, (policy, explicit)
            assert tally.counts["judged"] + tally.counts["pending"] > 0
            for line in lines:  # one JSON object a line, re-encoded to the same text
                record = json.loads(line)
                assert json.dumps(record, sort_keys=True, ensure_ascii=False) == line
    assert b"NaN" in seen[0]["judgements.jsonl"] or not exotic  # the exotic values are in the files
    assert b"\\u001f" in seen[0]["judgements.jsonl"]  # the docid with a control character
    assert any(b" -1\n" in files["qrels.txt"] for files in seen)  # pending items


@pytest.mark.django_db
def test_it_writes_the_release_files_this_platform_wrote_before(settings_secret):
    pool, raters = build_pool()
    release = releases.create_release(pool=pool, policy="majority")
    root = Path(settings.MEDIA_ROOT) / release.directory
    names = placeholders(pool, raters)
    for name in (*FILES, "manifest.json"):
        text = (root / name).read_bytes().decode()
        for pseudonym, placeholder in names.items():
            text = text.replace(pseudonym, placeholder)
        if name == "manifest.json":
            manifest = json.loads(text)
            for file, info in manifest["files"].items():
                assert info["sha256"] == hashlib.sha256((root / file).read_bytes()).hexdigest()
                if file in ("judgements.jsonl", "manifest.json"):  # they hold pseudonyms
                    info["sha256"] = f"<sha256 of {file}>"
            text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        assert text == (DATA / name).read_text(encoding="utf-8"), name


@pytest.fixture
def settings_secret(settings):
    settings.SECRET_KEY = "release-bytes-test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
    return settings

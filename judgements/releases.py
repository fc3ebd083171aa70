"""Releases: a pool's judgements aggregated under a policy, written as immutable files; and the qrels
of the pool right now."""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.http import FileResponse, Http404

from judgements.errors import JudgingError
from judgements.models import (
    Adjudication,
    Judging,
    Release,
)
from judgements.queries import unpooled_by_run
from judgements.release_rows import ItemVotes, iso, iso_text, json_float, json_text, json_value, stream_items
from pooling.jobs import remove_stale_workdirs
from pooling.models import Pool, PoolItem

#: Where an explicit release writes the -1 lines of the topics nobody judged (see create_release).
UNJUDGED_TOPICS_FILE = "qrels.unjudged.txt"
#: Every file a release may hold, the only names its download pages and endpoints serve.
RELEASE_FILES = ("qrels.txt", UNJUDGED_TOPICS_FILE, "judgements.jsonl", "manifest.json")
QRELS_LAYOUT = (
    "qrels.txt has every topic with at least one judged item (grade >= 0): its judged items and its "
    "pending and unrateable items as -1. A topic with no judged item has its -1 lines in "
    "qrels.unjudged.txt instead, so trec_eval, pytrec_eval, ir_measures and ranx read qrels.txt unchanged "
    "(trec_eval aborts and pytrec_eval hangs on a topic whose every line is -1). "
    "LC_ALL=C sort -k1,1 -k3,3 qrels.txt qrels.unjudged.txt restores the single explicit file."
)
QRELS_LAYOUT_OMIT = "qrels.txt has the judged items only; a topic with no judged item has no line."


def by_rater_id(parsed: Any) -> Any:
    """A parsed policy whose `rater:NAME` names a rater by id, the key the votes carry (refused when no
    user has that name); any other policy as it is."""
    from django.contrib.auth import get_user_model

    from judgements import aggregation

    if parsed.kind != "rater":
        return parsed
    user = get_user_model().objects.filter(username=parsed.rater).first()
    if user is None:
        raise JudgingError(f"no user named {parsed.rater!r}")
    return aggregation.Policy("rater", str(user.pk))


def create_release(
    *,
    pool: Pool,
    policy: str = "majority",
    unjudged: str = "explicit",
    by: User | None = None,
    progress: Any = None,
) -> Any:
    """Aggregate a pool's judgements under `policy` and write an immutable release:

    - `qrels.txt`: `qid 0 docid grade`, sorted by qid then docid (byte order), one line per judged item;
      with `unjudged="explicit"` every pending and unrateable item is written with grade -1, with `omit`
      they are left out. Only topics with at least one judged item (grade >= 0) are in it;
    - `qrels.unjudged.txt` (explicit only): the -1 lines of the topics with no judged item at all, same
      format and order. trec_eval aborts ("Can't calculate measure") and pytrec_eval hangs on a topic
      whose every line is negative, so such topics stay out of `qrels.txt`, which every standard tool then
      reads unchanged in every state of a campaign; nothing is lost (`LC_ALL=C sort -k1,1 -k3,3` of the
      two files is the single explicit file);
    - `judgements.jsonl`: every current judgement, rater pseudonymised, with state, grade, facets, note,
      seconds and times;
    - `manifest.json`: pool, policy, rubric version, counts per state, unpooled documents per run, the
      agreement summary (Cohen's kappa, no bootstrap) and the SHA-256 of each file.

    Nothing in the files depends on when the release is made, so two releases of unchanged data are
    byte-identical. Streams: memory does not grow with the number of judgements.

    The files are written in a work directory `.tmp-*` beside the releases and moved to `<id>/` once the
    row commits; a killed release's work directory is removed by the next release of the pool or the job
    sweep. A release never writes into a directory that exists already: when `<id>/` is there (a restored
    or reset database), the release goes to `<id>-2/` and `release.warnings` says what it found.
    """
    import contextlib
    import functools
    import hashlib
    import json
    import os
    import shutil
    import tempfile

    import numpy as np
    from django.conf import settings

    from judgements import aggregation, agreement
    from judgements.models import Release

    if unjudged not in Release.Unjudged.values:
        raise JudgingError(f"unjudged must be one of {', '.join(Release.Unjudged.values)}")
    try:
        parsed = aggregation.parse_policy(policy)
    except ValueError as exc:
        raise JudgingError(str(exc)) from None
    judging = Judging.objects.select_related("rubric").filter(pool=pool).first()
    if judging is None:
        raise JudgingError(f"pool {pool.name!r} has no judging set-up (rubric, raters)")
    rubric = judging.rubric
    labels = rubric.labels
    parsed = by_rater_id(parsed)
    secret = f"{settings.SECRET_KEY}:{pool.pk}:".encode()
    pseudonyms: dict[int, str] = {}

    def pseudonym(rater_id: int) -> str:
        name = pseudonyms.get(rater_id)
        if name is None:
            name = "rater-" + hashlib.sha256(secret + str(rater_id).encode()).hexdigest()[:10]
            pseudonyms[rater_id] = name
        return name

    total = max(PoolItem.objects.filter(pool=pool, selected=True).count(), 1)
    counts = {"judged": 0, "unrateable": 0, "pending": 0, "ties": 0, "judgements": 0}
    grades_count: Counter[int] = Counter()
    # (grade of the earlier rater, grade of the later rater) → number of such pairs: the same confusion
    # matrix as the lists of pairs, in memory that does not grow with the number of judgements.
    pair_counts: Counter[tuple[int, int]] = Counter()
    memo: dict[tuple[Any, ...], tuple[aggregation.Aggregate, tuple[tuple[int, int], ...]]] = {}

    def consensus(item: ItemVotes) -> tuple[aggregation.Aggregate, tuple[tuple[int, int], ...]]:
        """`aggregation.aggregate` of the item and its pairs of grades, remembered by what the result
        depends on: the grades in rater order, `required`, the adjudication and (for `rater:NAME`) which
        vote is NAME's. An item is looked up only when `aggregate` could not raise for it (plain int
        grades, distinct raters), so a remembered result is exactly what `aggregate` would return."""
        votes = item.votes
        grades = tuple([g for _, g in votes])
        key = None
        if (
            type(item.required) is int
            and (item.adjudicated is None or type(item.adjudicated) in (int, str))
            and all(g is None or type(g) is int for g in grades)
            and len({rater for rater, _ in votes}) == len(votes)
        ):
            flags = (
                tuple([str(rater) == parsed.rater for rater, _ in votes]) if parsed.kind == "rater" else ()
            )
            key = (grades, item.required, item.adjudicated, flags)
            found = memo.get(key)
            if found is not None:
                return found
        result = aggregation.aggregate(
            votes, policy=parsed, required=item.required, adjudicated=item.adjudicated
        )
        graded = [g for g in grades if g is not None]
        pairs = tuple((graded[x], graded[y]) for x in range(len(graded)) for y in range(x + 1, len(graded)))
        if key is not None and len(memo) < 4096:
            memo[key] = (result, pairs)
        return result, pairs

    latest = ""
    release_root = Path(settings.MEDIA_ROOT) / "releases" / pool.name
    release_root.mkdir(parents=True, exist_ok=True)
    # What a release killed before it could clean up left behind (see `jobs.remove_stale_workdirs`).
    remove_stale_workdirs(release_root)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=release_root))
    final: Path | None = None
    committed = False
    warnings: list[str] = []
    try:
        qrels_path = work / "qrels.txt"
        jsonl_path = work / "judgements.jsonl"
        unjudged_path = work / UNJUDGED_TOPICS_FILE
        topics = {"judged": 0, "not_judged": 0}
        lines = {"qrels.txt": 0, UNJUDGED_TOPICS_FILE: 0}
        with (
            transaction.atomic(),
            open(qrels_path, "w", encoding="utf-8", newline="\n") as qrels,
            open(jsonl_path, "w", encoding="utf-8", newline="\n") as jsonl,
            open(unjudged_path, "w", encoding="utf-8", newline="\n") as unjudged_file,
            contextlib.closing(stream_items(pool=pool, iso_times=True, copy=True)) as items,
        ):
            qrels_lines: list[str] = []
            jsonl_lines: list[str] = []
            # One topic's qrels lines wait here until the topic ends: they go to qrels.txt if any item of
            # the topic is judged, else (explicit) to qrels.unjudged.txt.
            topic_lines: list[str] = []
            topic_state = {"qid": None, "judged": False}
            unjudged_lines: list[str] = []

            def end_topic() -> None:
                if topic_state["qid"] is None:
                    return
                if topic_state["judged"]:
                    topics["judged"] += 1
                    qrels_lines.extend(topic_lines)
                    lines["qrels.txt"] += len(topic_lines)
                else:
                    topics["not_judged"] += 1
                    unjudged_lines.extend(topic_lines)
                    lines["qrels.unjudged.txt"] += len(topic_lines)
                topic_lines.clear()

            to_iso = iso_text if connection.vendor == "postgresql" else iso
            dumps = functools.partial(json.dumps, sort_keys=True, ensure_ascii=False)
            encode = json.encoder.encode_basestring
            rater_texts: dict[Any, str] = {}
            facet_texts: dict[str, str] = {}  # facets text -> its JSON (few distinct ones)
            state_texts = {True: json_text("unrateable"), False: json_text("graded")}
            for done, (item, rows) in enumerate(items, 1):
                result, pairs = consensus(item)
                counts[result.state] += 1
                counts["ties"] += int(result.tie)
                if item.qid != topic_state["qid"]:
                    end_topic()
                    topic_state["qid"], topic_state["judged"] = item.qid, False
                if result.state == "judged":
                    grades_count[result.grade] += 1  # type: ignore[index]  # a judged result has a grade
                    topic_state["judged"] = True
                    topic_lines.append(f"{item.qid} 0 {item.docid} {result.grade}\n")
                elif unjudged == "explicit":
                    topic_lines.append(f"{item.qid} 0 {item.docid} -1\n")
                for pair in pairs:
                    pair_counts[pair] += 1
                if rows:
                    # Each line is json.dumps({...}, sort_keys=True, ensure_ascii=False) of the judgement,
                    # written out key by key in sorted order with the same separators and value texts.
                    counts["judgements"] += len(rows)
                    head = f'{{"consensus": {json_text(result.state)}, "created_at": '
                    docid = f', "docid": {json_text(item.docid)}, "facets": '
                    qid = f', "qid": {json_text(item.qid)}, "rater": '
                for row in rows:
                    rater_id, grade, unrateable, raw, note, seconds, created, updated = row[7:15]
                    if to_iso is not iso_text:
                        created, updated = to_iso(created), to_iso(updated)
                    if updated is not None and updated > latest:  # max(latest, updated or "")
                        latest = updated
                    rater = rater_texts.get(rater_id)
                    if rater is None:
                        rater = rater_texts[rater_id] = json_text(pseudonym(rater_id))
                    facets = facet_texts.get(raw) if type(raw) is str else None
                    if facets is None:
                        facets = dumps(json_value(raw))
                        if type(raw) is str and len(facet_texts) < 1000:
                            facet_texts[raw] = facets
                    # The common types inline, anything else through json_text: the same text.
                    grade = None if unrateable else grade
                    seconds = round(float(seconds or 0.0), 3)
                    seconds_json = (
                        float.__repr__(seconds) if seconds - seconds == 0.0 else json_float(seconds)
                    )
                    updated_json = encode(updated) if type(updated) is str else json_text(updated)
                    jsonl_lines.append(
                        f"{head}{encode(created) if type(created) is str else json_text(created)}"
                        f"{docid}{facets}"
                        f', "grade": {int.__repr__(grade) if type(grade) is int else json_text(grade)}'
                        f', "imported": {"true" if row[15] else "false"}'
                        f', "note": {encode(note) if type(note) is str else json_text(note or "")}'
                        f"{qid}{rater}"
                        f', "seconds": {seconds_json}'
                        f', "state": {state_texts[bool(unrateable)]}'
                        f', "updated_at": {updated_json}}}\n'
                    )
                if len(jsonl_lines) >= 10000 or len(qrels_lines) >= 10000 or len(unjudged_lines) >= 10000:
                    qrels.writelines(qrels_lines)
                    jsonl.writelines(jsonl_lines)
                    unjudged_file.writelines(unjudged_lines)
                    qrels_lines.clear()
                    jsonl_lines.clear()
                    unjudged_lines.clear()
                    if progress:
                        progress(done / total, f"{done} items")
            end_topic()
            qrels.writelines(qrels_lines)
            jsonl.writelines(jsonl_lines)
            unjudged_file.writelines(unjudged_lines)
            adjudicated = Adjudication.objects.filter(item__pool=pool).order_by("-decided_at").first()
            if adjudicated:
                latest = max(latest, iso(adjudicated.decided_at) or "")

        def sha256(path: Path) -> str:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()

        n_pairs = sum(pair_counts.values())
        position = {value: i for i, value in enumerate(labels)}
        if (
            labels
            and len(position) == len(labels)
            and all(type(value) is int and -(2**63) <= value < 2**63 for value in labels)
            and all(pa in position and pb in position for pa, pb in pair_counts)
        ):
            # The confusion matrix that cohen_kappa(a, b, labels=labels) builds from the pairs (rows: the
            # earlier rater's grade), without the pairs themselves: memory flat in the number of pairs.
            confusion = np.zeros((len(labels), len(labels)), dtype=np.int64)
            for (pa, pb), n in pair_counts.items():
                confusion[position[pa], position[pb]] += n

            def kappa(weights: Any) -> float | None:
                return agreement.kappa_from_confusion(confusion, weights=weights)

        else:  # anything unusual: cohen_kappa on the pairs themselves, errors included
            repeats = list(pair_counts.values())
            a = np.repeat(np.asarray([pa for pa, _ in pair_counts], dtype=np.int64), repeats)
            b = np.repeat(np.asarray([pb for _, pb in pair_counts], dtype=np.int64), repeats)

            def kappa(weights: Any) -> float | None:
                return agreement.cohen_kappa(a, b, labels=labels, weights=weights)

        kappas = {
            name: (kappa(weights) if n_pairs else None)
            for name, weights in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic"))
        }
        files = {
            "qrels.txt": {"sha256": sha256(qrels_path), "lines": lines["qrels.txt"]},
            "judgements.jsonl": {"sha256": sha256(jsonl_path), "lines": counts["judgements"]},
        }
        if unjudged == "explicit":
            files[UNJUDGED_TOPICS_FILE] = {
                "sha256": sha256(unjudged_path),
                "lines": lines[UNJUDGED_TOPICS_FILE],
            }
        else:
            unjudged_path.unlink()  # omit: such topics have no line at all
        candidates = PoolItem.objects.filter(pool=pool, selected=False).count()
        manifest = {
            "format": "relevance-release/1",
            "pool": pool.name,
            "collection": pool.collection.name,
            "strategy": pool.strategy,
            "depth": pool.depth,
            "policy": policy,
            "unjudged": unjudged,
            "unjudged_label": -1 if unjudged == "explicit" else None,
            "relevance_level": pool.relevance_level,
            "rubric": {"name": rubric.name, "version": rubric.version, "labels": labels},
            "counts": {
                "items": counts["judged"] + counts["unrateable"] + counts["pending"],
                "judged": counts["judged"],
                "unrateable": counts["unrateable"],
                "pending": counts["pending"],
                "ties": counts["ties"],
                "judgements": counts["judgements"],
                "unselected_candidates": candidates,
                "grades": {str(g): grades_count[g] for g in labels},
            },
            "runs": unpooled_by_run(pool=pool),
            "agreement": {
                "pairs": n_pairs,
                "cohen_kappa": kappas,
                "band": agreement.landis_koch_band(kappas["unweighted"]),
            },
            "data_as_of": latest or None,
            "files": files,
            "topics": {
                "judged": topics["judged"],
                "not_judged": topics["not_judged"],
                "not_judged_file": UNJUDGED_TOPICS_FILE if unjudged == "explicit" else None,
                "layout": QRELS_LAYOUT if unjudged == "explicit" else QRELS_LAYOUT_OMIT,
            },
        }
        (work / "manifest.json").write_text(
            json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        files["manifest.json"] = {"sha256": sha256(work / "manifest.json"), "lines": 0}
        with transaction.atomic():
            release = Release.objects.create(
                pool=pool,
                policy=policy,
                unjudged=unjudged,
                rubric=rubric,
                directory="",
                files={name: info["sha256"] for name, info in files.items()},
                counts=manifest["counts"],
                manifest=manifest,
                created_by=by if by is not None and by.is_authenticated else None,
            )
            final = _free_directory(release_root, release.pk, warnings=warnings)
            os.rename(work, final)  # never onto a directory with files: _free_directory found it absent
            for name in files:
                os.chmod(final / name, 0o444)
            release.directory = _relative(final)
            release.save(update_fields=["directory"])
        committed = True
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        if final is not None and not committed:
            shutil.rmtree(final, ignore_errors=True)  # ours, moved in before the row failed to commit
        raise
    release.warnings = warnings  # type: ignore[attr-defined]  # for the caller to show, not a field
    if progress:
        progress(1.0, "released")
    return release


def _relative(path: Path) -> str:
    from django.conf import settings

    return str(path.relative_to(Path(settings.MEDIA_ROOT)))


def _free_directory(root: Path, release_id: int, *, warnings: list[str]) -> Path:
    """`root/<id>`, or when that exists already (files this database did not write: a database restored
    from a backup, or reset while the media stayed) the first free `root/<id>-<n>`, leaving what is there
    untouched and saying so in `warnings`."""
    path = root / str(release_id)
    if not path.exists():
        return path
    found = sorted(child.name for child in path.iterdir())[:5] if path.is_dir() else ["(a file)"]
    number = 2
    while (root / f"{release_id}-{number}").exists():
        number += 1
    free = root / f"{release_id}-{number}"
    warnings.append(
        f"{_relative(path)} already existed ({', '.join(found) or 'empty'}), not written by this database "
        f"(restored from a backup, or reset while the media stayed?): left untouched, this release is in "
        f"{_relative(free)}"
    )
    return free


def current_qrels(*, pool: Pool, policy: str = "majority") -> dict[str, dict[str, int]]:
    """The pool's labels right now under `policy`, as `{qid: {docid: grade}}`, with -1 for every pending or
    unrateable item (trec_eval's "in the pool, unjudged"), exactly as an explicit release would write them."""
    from judgements import aggregation

    parsed = aggregation.parse_policy(policy)
    parsed = by_rater_id(parsed)
    qrels: dict[str, dict[str, int]] = {}
    with transaction.atomic(), contextlib.closing(stream_items(pool=pool, copy=True)) as items:
        for item, _rows in items:
            result = aggregation.aggregate(
                item.votes, policy=parsed, required=item.required, adjudicated=item.adjudicated
            )
            grade = result.grade if result.state == "judged" and result.grade is not None else -1
            qrels.setdefault(item.qid, {})[item.docid] = grade
    return qrels


def release_file_response(release: Release, filename: str) -> FileResponse:
    """One file of a release as a download (404 for a name a release never holds, or a file not written,
    such as qrels.unjudged.txt of a release that omits unjudged items)."""
    if filename not in RELEASE_FILES:
        raise Http404("a release has no such file")
    path = Path(settings.MEDIA_ROOT) / release.directory / filename
    if not path.is_file():
        raise Http404("this release has no such file")
    content_type = "application/json" if filename.endswith(".json") else "text/plain; charset=utf-8"
    return FileResponse(path.open("rb"), as_attachment=True, filename=filename, content_type=content_type)


def remove_stale_release_workdirs() -> list[Path]:
    """The work directories of killed releases, of every pool, removed (periodic, beside the job sweep)."""
    from django.conf import settings

    root = Path(settings.MEDIA_ROOT) / "releases"
    if not root.is_dir():
        return []
    return [
        path
        for pool_root in root.iterdir()
        if pool_root.is_dir()
        for path in remove_stale_workdirs(pool_root)
    ]


def start_release(
    *, pool: Pool, policy: str = "majority", unjudged: str = "explicit", user: Any = None
) -> Any:
    """Check the release's parameters and start its job (`tasks.create_release` once the row commits).

    Every caller (the releases page, the API, a retry) goes through here. Raises JudgingError on a bad
    policy or `unjudged` value, or a pool without a judging set-up; `jobs.QueueUnavailable` when the broker
    refused the task (the job is then failed with that reason).
    """
    from judgements import aggregation
    from judgements.models import Release
    from pooling import jobs
    from pooling.models import Job

    if unjudged not in Release.Unjudged.values:
        raise JudgingError(f"unjudged must be one of {', '.join(Release.Unjudged.values)}")
    try:
        aggregation.parse_policy(policy)
    except ValueError as exc:
        raise JudgingError(str(exc)) from None
    if not Judging.objects.filter(pool=pool).exists():
        raise JudgingError("this pool has no judging set-up (rubric, raters)")
    return jobs.start_job(
        kind=Job.Kind.RELEASE,
        params={"pool": pool.pk, "policy": policy, "unjudged": unjudged},
        user=user,
    )

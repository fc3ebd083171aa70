"""Releases: a pool's judgements aggregated under a policy, written as immutable files; and the qrels
of the pool right now. What the files hold is written by `release_files` (one streamed pass), from the
rows `release_rows` reads; the policies are in `aggregation`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Max
from django.http import FileResponse, Http404

from judgements import aggregation
from judgements.crowd_policies import fit_policy
from judgements.errors import JudgingError
from judgements.exclusions import excluded_rater_ids
from judgements.models import Judging, Release
from judgements.release_files import write_qrels_and_judgements
from judgements.release_manifest import RELEASE_FILES, describe_files, release_manifest, write_manifest
from judgements.release_rows import current_judgements_join, stream_items
from pooling.jobs import remove_stale_workdirs
from pooling.models import Pool, PoolItem


def check_policy(*, pool: Pool, policy: str) -> aggregation.Policy:
    """`policy` parsed for `pool`: JudgingError on `policy` when it does not parse, or when its
    `rater:NAME` names nobody whose judgements in the pool count (`by_rater_id`: not a rater excluded
    from it). The one check of a policy for every release (the API, the releases page, `release_qrels`)
    and every read of the current labels (the evaluation reports)."""
    try:
        parsed = aggregation.parse_policy(policy)
    except ValueError as exc:
        raise JudgingError(str(exc), field="policy") from None
    return by_rater_id(parsed, pool=pool)


def by_rater_id(parsed: aggregation.Policy, *, pool: Pool) -> aggregation.Policy:
    """A parsed policy whose `rater:NAME` names a rater by id, the key the votes carry; any other policy
    as it is. Refused (on `policy`) unless NAME has judgements in `pool` that a release counts: read
    through the release's own join (`release_rows.current_judgements_join`: people's, not those of a
    rater excluded from the pool), so a release of anyone else's labels, which would hold none, is never
    made. The message is the same whether or not a user of that name exists elsewhere on the platform;
    for a rater of the pool excluded from it, it says so."""
    if parsed.kind != "rater":
        return parsed
    sql = f"""SELECT j.rater_id FROM {PoolItem._meta.db_table} i {current_judgements_join()}
        JOIN {User._meta.db_table} u ON u.id = j.rater_id
        WHERE i.pool_id = %(pool)s AND u.username = %(name)s LIMIT 1"""
    with connection.cursor() as cursor:
        cursor.execute(sql, {"pool": pool.pk, "name": parsed.rater})
        row = cursor.fetchone()
    if row is None:
        if User.objects.filter(pk__in=excluded_rater_ids(pool=pool), username=parsed.rater).exists():
            raise JudgingError(
                f"{parsed.rater!r} is excluded from this pool's releases (restore them first)", field="policy"
            )
        raise JudgingError(f"no rater named {parsed.rater!r} has judged in this pool", field="policy")
    return aggregation.Policy("rater", str(row[0]))


def create_release(
    *,
    pool: Pool,
    policy: str = aggregation.DEFAULT_POLICY,
    unjudged: str = "explicit",
    by: User | None = None,
    progress: Any = None,
    judge: str | None = None,
) -> Any:
    """Aggregate a pool's judgements under `policy` and write an immutable release:

    - `qrels.txt`: `qid 0 docid grade`, sorted by qid then docid (byte order), one line per judged item;
      with `unjudged="explicit"` every pending and unrateable item is written with grade -1, with `omit`
      they are left out. Only topics with at least one judged item (grade >= 0) are in it;
    - `qrels.unjudged.txt` (explicit only): the -1 lines of the topics with no judged item at all, same
      format and order. On a topic whose every line is negative trec_eval aborts ("Can't calculate
      measure") and pytrec_eval scores 0 on every measure (a topic nobody judged as a failure) or crashes
      (a segmentation fault with some measures), so such topics stay out of `qrels.txt`, which every
      standard tool then reads unchanged in every state of a campaign; nothing is lost
      (`LC_ALL=C sort -k1,1 -k3,3` of the two files is the single explicit file);
    - `judgements.jsonl`: every current judgement, rater pseudonymised, with state, grade, facets, note,
      seconds and times;
    - `manifest.json`: pool, policy, rubric version, counts per state, unpooled documents per run, the
      agreement summary (Cohen's kappa, no bootstrap) and the SHA-256 of each file.

    With `judge` (an admitted model judge of the pool, `judges.model_fill`) the items people have not
    judged take its labels; `judgements.jsonl` says the source of every label (`human` or `model:NAME`),
    the manifest counts the judged items by source (`counts.sources`) and carries the judge's gate
    figures (`model_judge`). Without, nothing of a model enters the release.

    Nothing in the files depends on when the release is made, so two releases of unchanged data are
    byte-identical. Streams: memory does not grow with the number of judgements.

    The steps: check the parameters; select, aggregate and write the qrels files and judgements.jsonl in
    one streamed pass (`release_files.write_qrels_and_judgements`); summarise agreement; write the
    manifest; publish atomically (`publish_release`). The files are written in a work directory `.tmp-*`
    beside the releases and moved to `<id>/` once the row commits; a killed release's work directory is
    removed by the next release of the pool or the job sweep. A release never writes into a directory
    that exists already: when `<id>/` is there (a restored or reset database), the release goes to
    `<id>-2/` and `release.warnings` says what it found.
    """
    parsed, judging = check_release(pool=pool, policy=policy, unjudged=unjudged)
    fill = None
    if judge:
        from judgements.judges import model_fill

        fill = model_fill(pool=pool, name=judge)
    explicit = unjudged == "explicit"
    release_root = Path(settings.MEDIA_ROOT) / "releases" / pool.name
    release_root.mkdir(parents=True, exist_ok=True)
    # What a release killed before it could clean up left behind (see `jobs.remove_stale_workdirs`).
    remove_stale_workdirs(release_root)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=release_root))
    try:
        tally = write_qrels_and_judgements(
            work,
            pool=pool,
            policy=fit_policy(parsed, pool=pool),
            explicit=explicit,
            progress=progress,
            fill=fill,
        )
        files = describe_files(work, tally=tally, explicit=explicit)
        manifest = release_manifest(
            pool=pool, policy=policy, unjudged=unjudged, rubric=judging.rubric, tally=tally, files=files
        )
        manifest["counts"]["sources"] = dict(sorted(tally.sources.items()))
        manifest["model_judge"] = None if fill is None else fill.gate
        write_manifest(work, manifest)
        release = publish_release(
            work,
            release_root,
            pool=pool,
            policy=policy,
            unjudged=unjudged,
            rubric=judging.rubric,
            manifest=manifest,
            by=by,
        )
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if progress:
        progress(1.0, "released")
    return release


def check_release(*, pool: Pool, policy: str, unjudged: str) -> tuple[aggregation.Policy, Judging]:
    """The policy parsed for the pool (`check_policy`) and the pool's judging set-up; JudgingError on a bad
    `policy` or `unjudged`, or a pool without a judging set-up."""
    if unjudged not in Release.Unjudged.values:
        raise JudgingError(f"unjudged must be one of {', '.join(Release.Unjudged.values)}", field="unjudged")
    judging = Judging.objects.select_related("rubric").filter(pool=pool).first()
    if judging is None:
        raise JudgingError(f"pool {pool.name!r} has no judging set-up (rubric, raters)")
    return check_policy(pool=pool, policy=policy), judging


def publish_release(
    work: Path,
    release_root: Path,
    *,
    pool: Pool,
    policy: str,
    unjudged: str,
    rubric: Any,
    manifest: dict[str, Any],
    by: User | None,
) -> Release:
    """Create the release's row and move the work directory to its final place, atomically: if the row
    does not commit, the directory moved in is removed (the caller removes `work`). The files become
    read-only; `release.warnings` lists what `_free_directory` found. The release's `number` is the
    pool's next (`_next_number`, which locks the pool row until the commit)."""
    files = manifest["files"]
    warnings: list[str] = []
    final: Path | None = None
    try:
        with transaction.atomic():
            release = Release.objects.create(
                pool=pool,
                number=_next_number(pool),
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
    except BaseException:
        if final is not None:
            shutil.rmtree(final, ignore_errors=True)  # ours, moved in before the row failed to commit
        raise
    release.warnings = warnings  # type: ignore[attr-defined]  # for the caller to show, not a field
    return release


def _next_number(pool: Pool) -> int:
    """The number of the pool's next release: one more than its highest, 1 for its first. Takes the pool
    row's NO KEY UPDATE lock, held to the end of the caller's transaction, so two releases of a pool made
    at once take turns and never get the same number (the unique (pool, number) is the backstop); raters'
    leases, which only reference the pool, go on."""
    Pool.objects.select_for_update(no_key=True).filter(pk=pool.pk).values_list("pk").first()
    highest = Release.objects.filter(pool=pool).aggregate(highest=Max("number"))["highest"]
    return (highest or 0) + 1


def _relative(path: Path) -> str:
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


def current_qrels(*, pool: Pool, policy: str = aggregation.DEFAULT_POLICY) -> dict[str, dict[str, int]]:
    """The pool's labels right now under `policy`, as `{qid: {docid: grade}}`, with -1 for every pending or
    unrateable item (trec_eval's "in the pool, unjudged"), exactly as an explicit release would write them."""
    return current_labels(pool=pool, policy=policy).qrels


@dataclass(frozen=True)
class CurrentLabels:
    """The pool's labels right now (`current_labels`): `qrels` as `current_qrels`, and the (qid, docid) of
    the items whose label is a model judge's."""

    qrels: dict[str, dict[str, int]]
    from_model: frozenset[tuple[str, str]]


def current_labels(
    *, pool: Pool, policy: str = aggregation.DEFAULT_POLICY, judge: str | None = None
) -> CurrentLabels:
    """`current_qrels`; with `judge` (an admitted model judge of the pool, `judges.model_fill`; JudgingError
    otherwise) the items people left pending take its labels, exactly as a release with that judge writes
    them (`ModelFill.grade_for`, the one rule of which items a judge fills)."""
    parsed = fit_policy(check_policy(pool=pool, policy=policy), pool=pool)
    fill = None
    if judge:
        from judgements.judges import model_fill

        fill = model_fill(pool=pool, name=judge)
    qrels: dict[str, dict[str, int]] = {}
    from_model: set[tuple[str, str]] = set()
    with transaction.atomic(), contextlib.closing(stream_items(pool=pool, copy=True)) as items:
        for item, _rows in items:
            result = aggregation.aggregate(
                item.votes, policy=parsed, required=item.required, adjudicated=item.adjudicated
            )
            grade = result.qrels_grade
            if fill is not None:
                model = fill.grade_for(item.qid, item.docid, result)
                if model is not None:
                    grade = model
                    from_model.add((item.qid, item.docid))
            qrels.setdefault(item.qid, {})[item.docid] = grade
    return CurrentLabels(qrels, frozenset(from_model))


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
    *,
    pool: Pool,
    policy: str = aggregation.DEFAULT_POLICY,
    unjudged: str = "explicit",
    user: Any = None,
    judge: str | None = None,
) -> Any:
    """Check the release's parameters and start its job (`tasks.create_release` once the row commits).

    Every caller (the releases page, the API, a retry) goes through here. Raises JudgingError on a bad
    policy or `unjudged` value, or a pool without a judging set-up (`check_release`, what the job checks
    again); `jobs.QueueUnavailable` when the broker refused the task (the job is then failed with that
    reason).
    """
    from pooling import jobs
    from pooling.models import Job

    check_release(pool=pool, policy=policy, unjudged=unjudged)
    params: dict[str, Any] = {"pool": pool.pk, "policy": policy, "unjudged": unjudged}
    if judge:
        from judgements.judges import admitted_judge

        params["judge"] = admitted_judge(pool=pool, name=judge).name  # refused now, not in the job
    return jobs.start_job(kind=Job.Kind.RELEASE, params=params, user=user)

"""The `start_*` services of the online app's jobs (one per kind, on `pooling.jobs.start_job`): importing a
click log, estimating propensities, deriving click labels. Each validates first, so what would be refused
is refused before any job exists (the API's 400, the page's form error)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from online import clicklogs
from online.models import ClickLog, PropensityEstimate
from pooling.errors import Refused
from pooling.formats import client_name
from pooling.jobs import start_job
from pooling.models import Collection, Job, Pool
from pooling.upload_checks import rehearsed

METHODS = ("given", "randtop", "swap", "em", "harvest")


#: The formats a click log is uploaded in (`simulated` logs are made by the simulator, not uploaded).
UPLOAD_FORMATS = ("jsonl", "counts", "ubi")


def click_uploads(*, format: str, file: Any, events: Any = None) -> list[Any]:
    """The uploaded files of a click log in the order the import reads them (UBI: queries, then events),
    for the page's form and the API's upload alike: a UBI log without its events export is refused, and so
    is an events file with another format (which would otherwise be dropped without a word)."""
    if format != "ubi":
        if events:
            raise Refused("only the UBI format takes an events file", field="events")
        return [file]
    if not events:
        raise Refused("a UBI log needs the ubi_events export too", field="events")
    return [file, events]


def start_click_import(
    *,
    collection: Collection,
    name: str,
    format: str,
    uploads: list[Any],
    pool: Pool | None = None,
    object_field: str = "",
    ordinal_base: int = 1,
    user: Any = None,
) -> Job:
    """Store the uploaded file(s) (UBI: queries, then events) and start the import job. The arguments are
    checked first by the import's own `clicklogs.check_click_log` (`Refused`, naming the field), before
    anything is stored. Files up to IMPORT_CHECK_MAX_BYTES together are then imported in a transaction that
    is rolled back, so errors come back at once (`ImportFailed`, FILE:LINE) with nothing stored; larger
    ones, and files whose data expands past IMPORT_CHECK_MAX_DECOMPRESSED_BYTES, are checked by the job.
    Whatever stops the check, the stored files are removed."""
    clicklogs.check_click_log(collection=collection, name=name, format=format, pool=pool)
    folder = Path("uploads") / "clicks" / uuid.uuid4().hex
    root = Path(settings.MEDIA_ROOT) / folder
    names = [client_name(upload.name) for upload in uploads]
    paths = _stored_files(root, names)
    try:
        root.mkdir(parents=True)
        for upload, target in zip(uploads, paths, strict=True):
            with open(target, "wb") as out:
                for block in upload.chunks():
                    out.write(block)
        if sum(upload.size for upload in uploads) <= settings.IMPORT_CHECK_MAX_BYTES:
            rehearsed(  # a gzip file that expands past the check's limit is the job's to check
                lambda: clicklogs.import_click_log(
                    collection=collection,
                    name=name,
                    format=format,
                    paths=paths,
                    display_names=names,
                    pool=pool,
                    object_field=object_field,
                    ordinal_base=ordinal_base,
                )
            )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    params = {
        "name": name,
        "format": format,
        "names": names,
        "pool": pool.pk if pool else None,
        "object_field": object_field,
        "ordinal_base": ordinal_base,
    }
    return start_job(
        kind=Job.Kind.CLICK_LOG,
        collection=collection,
        params=params,
        user=user,
        upload=str(folder),  # like every job's stored upload, kept from clients (the API shows `params`)
        upload_name=", ".join(names),
    )


def _stored_files(folder: Path, names: list[str]) -> list[str]:
    """Where a click log's uploaded files are kept in `folder`: each under its place and its own name."""
    return [str(folder / f"{index}-{name}") for index, name in enumerate(names)]


def click_files(job: Job) -> list[str]:
    """The stored files of a click log's import job, in the order its import reads them: in the job's
    upload folder (`start_click_import`; pooling migration 0023 moved older jobs' paths there)."""
    return _stored_files(Path(job.upload.path), job.params["names"])


def start_propensity(
    *, log: ClickLog, method: str, params: dict[str, Any], name: str = "", user: Any = None
) -> Job:
    """Start estimating θ for `log` by `method`; a given θ and RandTop's `n` are checked at once (by the
    estimators' own rules: `propensity.validate`, `propensity.depth_problem`), refused naming the field."""
    from online import propensity

    if method not in METHODS:
        raise Refused(f"method must be one of {', '.join(METHODS)}", field="method")
    if method == "given":
        try:
            propensity.validate(params.get("theta") or [])
        except propensity.PropensityError as exc:
            raise Refused(str(exc), field="theta") from None
    # a depth given is RandTop's, whatever the method (as the command's --n): a bad one is a mistake to say
    if params.get("n") is not None and (problem := propensity.depth_problem(params["n"])):
        raise Refused(problem, field="n")
    return start_job(
        kind=Job.Kind.PROPENSITY,
        collection=log.collection,
        params={"log": log.pk, "method": method, "params": params, "name": name},
        user=user,
    )


def start_click_labels(
    *,
    log: ClickLog,
    estimator: str,
    propensity_estimate: PropensityEstimate | None,
    options: dict[str, Any],
    user: Any = None,
) -> Job:
    """Start deriving click labels for `log`; the arguments a job would refuse are refused here (by the
    derivation's own `check_click_label_options`)."""
    from online.services import check_click_label_options

    _, parsed = check_click_label_options(  # an OptionError is a Refused naming its field
        log=log,
        estimator=estimator,
        propensity_estimate=propensity_estimate,
        thresholds=options.get("thresholds"),
        replicates=int(options.get("replicates") or 0),
        min_impressions=int(options.get("min_impressions") or 1),
        tau=options.get("tau"),
    )
    if parsed is not None:
        options["thresholds"] = parsed
    return start_job(
        kind=Job.Kind.CLICK_LABELS,
        collection=log.collection,
        params={
            "log": log.pk,
            "estimator": estimator,
            "propensity": propensity_estimate.pk if propensity_estimate else None,
            **options,
        },
        user=user,
    )

"""``evaluate --noise-floor``: a verdict on every pair of the runs given, written to stderr after the
scores (stdout stays byte for byte trec_eval's). With ``pool:NAME`` the raters' votes are read too, so the
verdict weighs the noise of the raters and of the topics; with a qrels file only the topics' (a file holds
one label per document), and the line says the raters were not measured."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from evaluation import metrics, noise_floor
from pooling.trec_io import QrelsTable, RunTable


def verdict_measure(specs: Sequence[str]) -> str:
    """The measure the verdict is on: the first the user named, in the order of the -m options on the
    command line (not trec_eval's output order), skipping those that score no ranking per topic (runid,
    the counts such as num_ret, relstring, gm_map); nDCG@10 when none is left, as when only nicknames such
    as ``official`` (the default) or ``all_trec`` were given."""
    return next(
        (
            m.name
            for m in metrics.measures_as_asked(specs)
            if m.family.per_topic and m.family.kind not in ("meta", "text", "long")
        ),
        "ndcg_cut_10",
    )


def write_verdicts(
    options: dict[str, Any],
    qrels: QrelsTable,
    runs: Sequence[tuple[str, RunTable]],
    settings: dict[str, Any],
    specs: Sequence[str],
    stderr: IO[str],
) -> None:
    """Print ``# noise floor: A vs B: <verdict>`` for each pair, on `verdict_measure` of the -m
    specifications, under the scores' settings: with -c a judged topic a run lacks counts 0, so the
    verdict's Δ is the difference of the -c means printed."""
    if len(runs) < 2:
        stderr.write("# noise floor: give two runs or more to compare\n")
        return
    measure = verdict_measure(specs)
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    fixed: dict[tuple[str, str], int] = {}
    spec = options["qrels"]
    if spec.startswith("pool:"):
        from evaluation.noise_pool import pool_votes
        from pooling.models import Pool

        votes, fixed = pool_votes(pool=Pool.objects.get(name=spec.removeprefix("pool:")))
    names = [Path(path).name for path, _ in runs]
    campaign = noise_floor.Campaign.of(
        dict(zip(names, (run for _, run in runs), strict=True)),
        qrels.to_dict(),
        votes,
        measures=[measure],
        fixed=fixed,
        relevance_level=settings["relevance_level"],
        gain=settings["gain"],
        unjudged=settings["unjudged"],
        depth=settings["depth"],
        average=settings["average"],  # -c: a judged topic a run lacks is 0 in the verdict's Δ too
    )
    seed = int(options.get("seed") or 0)
    data = noise_floor.report(campaign, seed=seed)
    stderr.write(
        f"# noise floor ({data['judged_topics']} judged topics, seed {seed}, "
        f"{data['settings']['topic_samples']} topic and {data['settings']['label_samples']} label samples):\n"
    )
    for line in noise_floor.comparisons(data):
        stderr.write(f"# noise floor: {line}\n")

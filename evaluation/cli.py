"""``python -m evaluation.cli QRELS RUN [RUN ...]`` (also ``manage.py evaluate``): trec_eval, drop-in.

The one implementation of the evaluate command. It imports no Django for files, so it starts in the time
numpy takes; ``pool:NAME`` sets Django up on demand to read that pool's labels. ``manage.py evaluate`` goes
straight here for files (see manage.py) and through the management command for everything else.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from evaluation import metrics
from evaluation.trec_format import format_result
from pooling.cli_types import SEED
from pooling.formats import FormatError
from pooling.trec_io import QrelsTable, read_qrels, read_run

if TYPE_CHECKING:
    from pathlib import Path

DESCRIPTION = "Score TREC runs on qrels exactly as trec_eval does (see evaluation/metrics/)."
EPILOG = """\
Output: what trec_eval prints, byte for byte: 'measure<TAB>qid<TAB>value' with the name padded to 22
characters (%-22s), values as %6.4f and counts as integers; with -q the per-topic lines come first, then
the 'all' lines, starting with runid and num_q. Nothing else is written to stdout: the settings line
('# gain=linear unjudged=nonrelevant ...') and warnings go to stderr.

Several RUNs: each run's output is exactly trec_eval's for that run, one after the other in the order
given (each run's block ends with its 'all' lines). With -o DIR, each run's output goes to its own file
DIR/<run file name>.eval instead and stdout stays empty; DIR is made (parents too) if missing, once every
run is scored, and a DIR that exists as a file is refused.

Version semantics (--trec-eval, default 10):
  10  a qrels topic missing from the run is an error unless -c is given (trec_eval 10.0-rc2 there
      re-scores the previous topic's results under its qid, or crashes when it is the first); with -c it
      scores 0 (trec_eval's one-document stand-in ranking) and has per-topic lines under -q.
  9   trec_eval 9.0.8: the mean is over the run's topics (a warning names the qrels topics it lacks);
      with -c the mean is over all qrels topics but -q prints the run's topics only, and the num_rel 'all'
      line counts every qrels line with rel > 0 whatever -l says.
Both: iprec_at_recall and 11pt_avg take floor(p*R + 0.9) relevant documents, (long) (p * R + 0.9).

Topics nobody judged (every qrels line negative: only pending or unrateable items) are left out of every
mean, -c included, and named on stderr: nobody observed a failure there, so a 0 would be invented
(trec_eval would average them as 0, or abort when such a topic sorts first).

QRELS is a qrels file (qid iter docid rel; .gz read transparently) or pool:NAME (that pool's current
labels under the majority policy, -1 for every pending or unrateable item, as an explicit release; scored
at the pool's relevance level unless -l says otherwise, as the pool's report is).
Measures, trec_eval's syntax: -m map -m P.5,10 -m ndcg_cut.10 -m iprec_at_recall.0.5 -m set_F.0.5, a
bare family for its default parameters (-m P), nicknames official (the default), all_trec and set. The
first parameters given for a family win, as in trec_eval (-m P.5 -m P.20 prints P_5). pytrec_eval's
names (P_5, ndcg_cut_10) are accepted too, and so is judged.K (the platform's judged@k).
"""


class EvaluateError(Exception):
    """A clear, one-line failure: bad input, an unknown measure, a topic trec_eval 10 would stop on."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options (shared by ``python -m evaluation.cli`` and ``manage.py evaluate``)."""
    parser.add_argument("qrels", help="qrels file, or pool:NAME")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="TREC run file(s)")
    parser.add_argument("-q", dest="per_topic", action="store_true", help="print per-topic values too")
    parser.add_argument(
        "-c",
        dest="complete",
        action="store_true",
        help="average over all qrels topics, a topic missing from the run counting 0 (trec_eval -c)",
    )
    parser.add_argument(
        "-J",
        dest="condensed",
        action="store_true",
        help="condensed lists: drop unjudged documents and re-rank (trec_eval -J)",
    )
    parser.add_argument(
        "-l",
        dest="level",
        type=int,
        default=None,
        help="relevance level (default 1, trec_eval's; for pool:NAME the pool's relevance level)",
    )
    parser.add_argument("-M", dest="depth", type=int, default=None, help="evaluate the top DEPTH only")
    parser.add_argument("-n", dest="no_summary", action="store_true", help="no 'all' lines (trec_eval -n)")
    parser.add_argument(
        "--gain",
        choices=["linear", "exp"],
        default="linear",
        help="nDCG gain: the grade, or 2^grade - 1 (default linear)",
    )
    parser.add_argument(
        "--trec-eval",
        dest="trec_eval",
        choices=["10", "9"],
        default="10",
        help="which trec_eval's semantics to follow where 10 and 9.0.8 differ (default 10)",
    )
    parser.add_argument("-o", dest="output_dir", metavar="DIR", help="a file per run in DIR (made if absent)")
    parser.add_argument(
        "-m",
        dest="measures",
        action="append",
        default=None,
        metavar="MEASURE",
        help="measure(s) to print (default: official)",
    )
    parser.add_argument(
        "--noise-floor",
        dest="noise_floor",
        action="store_true",
        help="after the scores, a verdict on every pair of runs on stderr: the difference against the noise "
        "of the topics (paired bootstrap) and, for pool:NAME, of the raters (evaluation/noise_cli.py); on "
        "the first measure given with -m, in the order given (nDCG@10 when only nicknames such as "
        "official, the default, were given)",
    )
    parser.add_argument(
        "--seed", type=SEED, default=0, help="seed of the --noise-floor resampling (default 0)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evaluate",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def resolve_qrels(spec: str) -> QrelsTable | dict[str, dict[str, int]]:
    """The qrels named on the command line: a file path, or ``pool:NAME`` — that pool's current labels
    under the default (majority) policy, with -1 for every pending or unrateable item, exactly as an
    explicit release would write them (this one needs the database, and sets Django up if needed)."""
    return _resolve(spec)[0]


#: trec_eval's relevance level when -l is not given (a qrels file's; a pool has its own).
DEFAULT_LEVEL = 1


def _resolve(spec: str) -> tuple[QrelsTable | dict[str, dict[str, int]], int]:
    """`resolve_qrels`, with the relevance level to score at when -l is not given: the pool's for
    ``pool:NAME`` (the level its report, its releases' manifests and the offline tracker score at),
    trec_eval's default for a file."""
    if spec.startswith("pool:"):
        return _pool_qrels(spec.removeprefix("pool:"))
    return _read(read_qrels, spec, other=(read_run, "a run")), DEFAULT_LEVEL


def _pool_qrels(name: str) -> tuple[dict[str, dict[str, int]], int]:
    from django.apps import apps

    if not apps.ready:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
        django.setup()
    from judgements.errors import JudgingError
    from judgements.releases import current_qrels
    from pooling.models import Pool

    pool = Pool.objects.filter(name=name).first()
    if pool is None:
        raise EvaluateError(f"no pool named {name!r}")
    try:
        return current_qrels(pool=pool), pool.relevance_level
    except JudgingError as exc:
        raise EvaluateError(str(exc)) from None


def _read(reader: Any, path: str, *, other: tuple[Any, str]) -> Any:
    """The file `reader` reads, or EvaluateError. `other` is the reader of the other kind of file and its
    name: when the file is read by that one, the one line says so (QRELS and RUN given the other way round
    would otherwise list the same field-count error for each of their lines)."""
    try:
        return reader(path)
    except FormatError as exc:
        try:
            other[0](path)
        except (FormatError, OSError):
            raise EvaluateError(str(exc)) from None
        raise EvaluateError(
            f"{exc.errors[0]}: this is {other[1]}; the order is evaluate QRELS RUN [RUN ...]"
        ) from None
    except OSError as exc:
        raise EvaluateError(f"{path}: {exc.strerror or exc}") from None


def _split_spec(spec: str) -> list[str]:
    """``-m map,P.5,10`` is not trec_eval syntax, but ``map,recip_rank`` (no '.') is read as two names."""
    return spec.split(",") if "." not in spec else [spec]


def execute(options: dict[str, Any], stdout: IO[str], stderr: IO[str]) -> None:
    """Run the command on parsed options; raises EvaluateError on any failure (nothing printed then).

    With -o the directory is made (parents too) and checked before any work, and removed again if the
    command fails (`cli_types.output_directory`, as release_qrels's -o)."""
    if not options.get("output_dir"):
        _execute(options, stdout, stderr, None)
        return
    from pooling.cli_types import output_directory

    with output_directory("-o", options["output_dir"], EvaluateError) as out_dir:
        _execute(options, stdout, stderr, out_dir)


def _execute(options: dict[str, Any], stdout: IO[str], stderr: IO[str], out_dir: Path | None) -> None:
    try:
        specs = [part for spec in options["measures"] or ["official"] for part in _split_spec(spec)]
        plan = metrics.plan_measures(specs)
    except ValueError as exc:
        raise EvaluateError(str(exc)) from None
    if options["depth"] is not None and options["depth"] < 1:
        raise EvaluateError("-M must be a positive integer")
    if options["level"] is not None and options["level"] < 0:
        raise EvaluateError("-l must be >= 0")
    version: metrics.Version = "9" if options.get("trec_eval") == "9" else "10"
    targets = None  # with -o: the file of each run's output
    if out_dir is not None:
        names = [os.path.basename(p) for p in options["runs"]]
        if len(set(names)) != len(names):
            raise EvaluateError("-o DIR: two runs have the same file name; their outputs would collide")
        targets = [out_dir / f"{name}.eval" for name in names]
    qrels, level = _resolve(options["qrels"])
    if not isinstance(qrels, QrelsTable):
        qrels = QrelsTable.from_dict(qrels)  # once, not once per run
    runs = [(path, _read(read_run, path, other=(read_qrels, "a qrels file"))) for path in options["runs"]]
    settings: dict[str, Any] = {
        "relevance_level": level if options["level"] is None else options["level"],
        "gain": options["gain"],
        "unjudged": "condensed" if options["condensed"] else "nonrelevant",
        "depth": options["depth"],
        "average": "all" if options["complete"] else "common",
    }
    stderr.write(
        f"# gain={settings['gain']} unjudged={settings['unjudged']} "
        f"relevance_level={settings['relevance_level']} average={settings['average']} "
        f"depth={settings['depth'] or 'all'} trec_eval={version}\n"
    )
    blocks: list[tuple[str, str]] = []
    for path, run in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", metrics.MissingTopicsWarning)
            result = metrics.evaluate(
                qrels, run, specs, **settings, trec_eval=version, skip_unjudged_topics=True
            )
        result = dataclasses.replace(result, run_tag=run.last_tag or result.run_tag)
        complete_10 = version == "10" and options["complete"]  # trec_eval 10 -c: every qrels topic
        if not result.topics or not (complete_10 or set(result.topics) - set(result.missing_topics)):
            why = (
                f" (left out, nobody judged them: {_shown(result.unjudged_topics)})"
                if result.unjudged_topics
                else ""
            )
            raise EvaluateError(f"{path}: no topics with both results and relevance information{why}")
        if version == "10" and result.missing_topics and not options["complete"]:
            raise EvaluateError(
                f"{path}: the run has no results for qrels topic(s) {_shown(result.missing_topics)}; "
                "trec_eval 10 stops here: give -c to score them 0, or --trec-eval 9 to average over the "
                "run's topics"
            )
        for note in result.warnings:
            stderr.write(f"{path}: warning: {note}\n")
        if result.ignored_topics:
            stderr.write(
                f"{path}: warning: run topics without qrels, ignored: {_shown(result.ignored_topics)}\n"
            )
        shown = None
        if version == "9" and options["complete"]:
            shown = [t for t in result.topics if t not in set(result.missing_topics)]
        text = format_result(
            result,
            plan,
            per_topic=options["per_topic"],
            per_topic_topics=shown,
            summary=not options.get("no_summary"),
        )
        blocks.append((path, text))
    if targets is not None:
        try:
            for target, (_, text) in zip(targets, blocks, strict=True):
                target.write_text(text)
        except OSError as exc:
            raise EvaluateError(f"-o {options['output_dir']}: cannot write ({exc.strerror or exc})") from None
    else:
        stdout.write("".join(text for _, text in blocks))
    if options.get("noise_floor"):
        from evaluation import noise_cli

        noise_cli.write_verdicts(options, qrels, runs, settings, specs, stderr)


def _shown(topics: Sequence[str]) -> str:
    return ", ".join(topics[:20]) + (f", ... ({len(topics)} in all)" if len(topics) > 20 else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit 0, or 1 with ``evaluate: message`` on stderr (2 for bad usage, from argparse)."""
    options = vars(build_parser().parse_args(argv))
    try:
        execute(options, sys.stdout, sys.stderr)
    except EvaluateError as exc:
        sys.stderr.write(f"evaluate: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

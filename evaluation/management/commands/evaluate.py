"""``manage.py evaluate QRELS RUN [RUN ...]``: score runs on qrels, printing what trec_eval prints."""

from __future__ import annotations

import warnings
from argparse import ArgumentParser, RawDescriptionHelpFormatter
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from evaluation import metrics
from pooling.trec_io import QrelsTable, TrecFormatError, read_qrels, read_run

HELP = """Score TREC runs on qrels with trec_eval's semantics (see evaluation/metrics.py).

Output, one line per value, as trec_eval -q prints it (without its padding of the measure name):
    measure<TAB>qid<TAB>value
with 4 decimals, num_ret/num_rel/num_rel_ret as integers, 'all' for the aggregate (the mean over topics; the
sum for num_*). Per-topic lines (-q) come first, topic by topic in qid byte order, then the 'all' lines.
The first line is a comment stating the settings, the gain included, e.g.
    # gain=linear unjudged=nonrelevant relevance_level=1 average=common depth=all
With several RUNs, every line gets a first column naming the run file as given (run<TAB>measure<TAB>qid
<TAB>value), and the runs follow one another in the order given. Warnings (qrels topics a run lacks, run
topics without qrels) go to stderr.

QRELS is a qrels file (qid iter docid rel; .gz read transparently) or pool:NAME.
Measures use trec_eval's syntax: -m map -m P.5,10 -m ndcg_cut.10 -m recall.100 -m judged.10, a bare
family for its default cutoffs (-m P), 'official' (the default: num_ret num_rel num_rel_ret map Rprec
bpref recip_rank P) or 'all_trec' (every measure supported: also infAP, recall, ndcg, ndcg_cut, judged).
pytrec_eval's names (P_5, ndcg_cut_10) are accepted too.
"""


def resolve_qrels(spec: str) -> QrelsTable | dict[str, dict[str, int]]:
    """The qrels named on the command line: a file path, or ``pool:NAME`` — that pool's current labels
    under the default (majority) policy, with -1 for every pending or unrateable item, exactly as an
    explicit release would write them."""
    if spec.startswith("pool:"):
        from judgements.errors import JudgingError
        from judgements.releases import current_qrels
        from pooling.models import Pool

        pool = Pool.objects.filter(name=spec.removeprefix("pool:")).first()
        if pool is None:
            raise CommandError(f"no pool named {spec.removeprefix('pool:')!r}")
        try:
            return current_qrels(pool=pool)
        except JudgingError as exc:
            raise CommandError(str(exc)) from None
    return _read(read_qrels, spec)


def _read(reader: Any, path: str) -> Any:
    try:
        return reader(path)
    except TrecFormatError as exc:
        raise CommandError("\n".join(exc.errors)) from None
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}") from None


def _split_spec(spec: str) -> list[str]:
    """``-m map,P.5,10`` is not trec_eval syntax, but ``map,recip_rank`` (no '.') is read as two names."""
    return spec.split(",") if "." not in spec else [spec]


def _format(measure: str, value: float) -> str:
    if measure in ("num_ret", "num_rel", "num_rel_ret"):
        return str(round(value))
    return f"{value:.4f}"


class Command(BaseCommand):
    help = HELP
    requires_system_checks: list[str] = []  # pure file work: no database, no checks

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> ArgumentParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = RawDescriptionHelpFormatter
        return parser

    def add_arguments(self, parser: ArgumentParser) -> None:
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
        parser.add_argument("-l", dest="level", type=int, default=1, help="relevance level (default 1)")
        parser.add_argument("-M", dest="depth", type=int, default=None, help="evaluate the top DEPTH only")
        parser.add_argument("--gain", choices=["linear", "exp"], default="linear", help="nDCG gain")
        parser.add_argument(
            "-m",
            dest="measures",
            action="append",
            default=None,
            metavar="MEASURE",
            help="measure(s) to print",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            specs = [part for spec in options["measures"] or ["official"] for part in _split_spec(spec)]
            measures = metrics.parse_measures(specs)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["depth"] is not None and options["depth"] < 1:
            raise CommandError("-M must be a positive integer")
        if options["level"] < 0:
            raise CommandError("-l must be >= 0")
        qrels = resolve_qrels(options["qrels"])
        if not isinstance(qrels, QrelsTable):
            qrels = QrelsTable.from_dict(qrels)  # once, not once per run
        runs = [(path, _read(read_run, path)) for path in options["runs"]]
        several = len(runs) > 1
        settings = {
            "relevance_level": options["level"],
            "gain": options["gain"],
            "unjudged": "condensed" if options["condensed"] else "nonrelevant",
            "depth": options["depth"],
            "average": "all" if options["complete"] else "common",
        }
        out = [
            f"# gain={settings['gain']} unjudged={settings['unjudged']} "
            f"relevance_level={settings['relevance_level']} average={settings['average']} "
            f"depth={settings['depth'] or 'all'}"
        ]
        for path, run in runs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", metrics.MissingTopicsWarning)
                result = metrics.evaluate(qrels, run, measures, **settings)
            prefix = f"{path}\t" if several else ""
            for note in result.warnings:
                self.stderr.write(f"{path}: warning: {note}")
            if result.ignored_topics:
                shown = ", ".join(result.ignored_topics[:20])
                more = (
                    f", ... ({len(result.ignored_topics)} in all)" if len(result.ignored_topics) > 20 else ""
                )
                self.stderr.write(f"{path}: warning: run topics without qrels, ignored: {shown}{more}")
            if not result.topics:
                raise CommandError(f"{path}: no topics with both results and relevance information")
            if options["per_topic"]:
                columns = [result.values[m].tolist() for m in measures]
                for i, qid in enumerate(result.topics):
                    out.extend(
                        f"{prefix}{m}\t{qid}\t{_format(m, columns[j][i])}" for j, m in enumerate(measures)
                    )
            means = result.means
            out.extend(f"{prefix}{m}\tall\t{_format(m, means[m])}" for m in measures)
        self.stdout.write("\n".join(out))

"""trec_eval's text output, byte for byte (pure: no Django).

trec_eval prints each value as ``printf("%-22s\\t%s\\t%6.4f\\n", name, qid, value)``, counts (num_q, num_ret,
num_rel, num_rel_ret, num_nonrel_judged_ret) with ``%ld`` of the value cast to long, and the run tag as
``runid                 \\tall\\tTAG``. With -q the per-topic lines come first, topic by topic (qrels topics
in byte order) and, within a topic, measure by measure in trec_eval's order; then the ``all`` lines. runid,
num_q, gm_map and gm_bpref have no per-topic line. A NaN prints as glibc prints the result of 0/0, ``-nan``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from evaluation.metrics import Measure, Result


def format_value(measure: Measure, value: float) -> str:
    """One value as trec_eval prints it: ``%ld`` of (long) value for counts, ``%6.4f`` otherwise."""
    if measure.family.kind == "long":
        return str(int(value))
    if math.isnan(value):
        return f"{'-nan':>6}"  # C's 0.0 / 0.0 on x86-64 is a negative NaN, printed "-nan"
    return f"{value:6.4f}"


def _column(result: Result, measure: Measure) -> list[str]:
    """A measure's per-topic texts, each ending its line: relstring quoted (printf "'%s'"), counts %ld,
    values %6.4f."""
    if measure.name in result.texts:
        return [f"'{text}'\n" for text in result.texts[measure.name]]
    values = result.values[measure.name].tolist()
    if measure.family.kind == "long":
        return [f"{int(v)}\n" for v in values]
    return [f"{v:6.4f}\n" if v == v else "  -nan\n" for v in values]  # v != v: NaN


def _line(name: str, qid: str, text: str) -> str:
    return f"{name:<22}\t{qid}\t{text}\n"


def format_result(
    result: Result,
    plan: Sequence[Measure],
    *,
    per_topic: bool = False,
    per_topic_topics: Iterable[str] | None = None,
    summary: bool = True,
) -> str:
    """trec_eval's whole output for one run. ``plan`` is ``metrics.plan_measures(...)`` (runid included);
    ``per_topic_topics`` restricts the -q lines (trec_eval 9 -c prints only the run's topics) and keeps
    ``result.topics`` order; ``summary=False`` is trec_eval's -n (no ``all`` lines)."""
    out: list[str] = []
    if per_topic:
        shown = set(result.topics if per_topic_topics is None else per_topic_topics)
        printed = [
            m for m in plan if m.family.per_topic and (m.name in result.values or m.name in result.texts)
        ]
        # Each column formatted at once, then laid out topic by topic as pieces of lines (name, qid, value)
        # by slice assignment: no Python loop over the lines.
        rows = [i for i, qid in enumerate(result.topics) if qid in shown]
        qids = [f"{result.topics[i]}\t" for i in rows]
        width = 3 * len(printed)
        pieces: list[str] = [""] * (width * len(rows))
        for j, m in enumerate(printed):
            texts = _column(result, m)
            pieces[3 * j :: width] = [f"{m.name:<22}\t"] * len(rows)
            pieces[3 * j + 1 :: width] = qids
            pieces[3 * j + 2 :: width] = texts if len(rows) == len(texts) else [texts[i] for i in rows]
        out.append("".join(pieces))
    if summary:
        means = result.means
        for m in plan:
            if m.family.kind == "meta":
                out.append(_line("runid", "all", result.run_tag))
            elif m.family.kind == "text":
                continue  # relstring has no 'all' line
            else:
                out.append(_line(m.name, "all", format_value(m, means[m.name])))
    return "".join(out)

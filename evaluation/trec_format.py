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

import numpy as np

from evaluation.metrics import Measure, Result


def format_value(measure: Measure, value: float) -> str:
    """One value as trec_eval prints it: ``%ld`` of (long) value for counts, ``%6.4f`` otherwise."""
    if measure.family.kind == "long":
        return str(int(value))
    if math.isnan(value):
        return f"{'-nan':>6}"  # C's 0.0 / 0.0 on x86-64 is a negative NaN, printed "-nan"
    return f"{value:6.4f}"


_VALUE_WIDTH = 11  # the widest fast %6.4f text: 5 digits, '.', 4 digits, '\n'
_FAST_LIMIT = 1e9  # v * 10^4 below this: the product's float error is under 2e-7
_TIE_MARGIN = 1e-6  # ... so a product this far from a half rounds as the exact value does


def _python_fixed4(v: float) -> str:
    return f"{v:6.4f}\n" if v == v else "  -nan\n"  # v != v: NaN


def _text_matrix(texts: Sequence[str]) -> np.ndarray:
    """Strings as rows of UTF-8 bytes, zero-padded on the right (no text holds a NUL: the readers refuse
    them)."""
    encoded = np.array([t.encode("utf-8") for t in texts], dtype=np.bytes_)
    width = max(encoded.dtype.itemsize, 1)
    return encoded.astype(f"S{width}").view(np.uint8).reshape(len(texts), width)


def fixed4_matrix(values: np.ndarray) -> np.ndarray:
    """``printf("%6.4f\\n")`` of every value (``  -nan`` for NaN) as rows of bytes, zero-padded on the
    right: exactly Python's ``f"{v:6.4f}"``, without a Python format call per value.

    A value v >= 0 with v * 10^4 < 10^9 is printed from k = rint(v * 10^4): the product's rounding error
    is below 2e-7, so k is the correctly rounded value unless the product lies within 1e-6 of a half (a
    near tie, which the exact binary value decides); those, negative values (-0.0 included) and
    infinities are formatted by Python one by one."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    x = v * 10000.0
    nan = np.isnan(v)
    with np.errstate(invalid="ignore"):
        fast = ~np.signbit(v) & (x < _FAST_LIMIT) & (np.abs(x - np.floor(x) - 0.5) > _TIE_MARGIN)
    k = np.rint(np.where(fast, x, 0.0)).astype(np.int64)
    whole, fraction = np.divmod(k, 10000)
    digits = np.ones(n, dtype=np.int64)
    for p in range(1, 5):  # whole < 10^5
        digits += whole >= 10**p
    slow = np.flatnonzero(~(fast | nan))
    others = [_python_fixed4(x).encode() for x in v[slow].tolist()]
    text = np.zeros((n, max([_VALUE_WIDTH, *map(len, others)])), dtype=np.uint8)
    for d in np.unique(digits[fast]).tolist():
        rows = np.flatnonzero(fast & (digits == d))
        w, f = whole[rows], fraction[rows]
        for j in range(d):
            text[rows, j] = 48 + (w // 10 ** (d - 1 - j)) % 10
        text[rows, d] = 46  # '.'
        for j in range(4):
            text[rows, d + 1 + j] = 48 + (f // 10 ** (3 - j)) % 10
        text[rows, d + 5] = 10  # '\n'
    text[nan, :7] = np.frombuffer(b"  -nan\n", dtype=np.uint8)
    for i, other in zip(slow.tolist(), others, strict=True):
        text[i, : len(other)] = np.frombuffer(other, dtype=np.uint8)
    return text


def _column(result: Result, measure: Measure) -> np.ndarray:
    """A measure's per-topic texts as rows of bytes (zero-padded), each ending its line: relstring quoted
    (printf "'%s'"), counts %ld, values %6.4f."""
    if measure.name in result.texts:
        return _text_matrix([f"'{text}'\n" for text in result.texts[measure.name]])
    values = result.values[measure.name]
    if measure.family.kind == "long":
        return _text_matrix([f"{int(v)}\n" for v in values.tolist()])
    return fixed4_matrix(values)


def _per_topic_lines(result: Result, printed: Sequence[Measure], rows: np.ndarray) -> str:
    """The -q lines ``name<TAB>qid<TAB>value``, topic by topic, measure by measure, laid out at once: each
    line is a row of bytes, [name padded to 22 and a tab][qid][tab][value text], each field zero-padded
    to its widest; dropping the zero bytes leaves the lines, one after the other."""
    if not len(rows) or not printed:
        return ""
    names = _text_matrix([f"{m.name:<22}\t" for m in printed])
    qids = _text_matrix([result.topics[i] for i in rows.tolist()])
    every = len(rows) == len(result.topics)
    # The %6.4f values of every measure at once (one matrix of topics x measures), the others one by one.
    plain = [j for j, m in enumerate(printed) if m.family.kind != "long" and m.name not in result.texts]
    fixed = np.zeros((len(result.topics), 0, 0), dtype=np.uint8)
    if plain:
        values = np.stack([result.values[printed[j].name] for j in plain], axis=1)
        fixed = fixed4_matrix(values.reshape(-1)).reshape(len(result.topics), len(plain), -1)
    plain_set = set(plain)
    others = {j: _column(result, m) for j, m in enumerate(printed) if j not in plain_set}
    a, b = names.shape[1], qids.shape[1]
    width = a + b + 1 + max([fixed.shape[2]] + [v.shape[1] for v in others.values()])
    lines = np.zeros((len(rows), len(printed), width), dtype=np.uint8)
    lines[:, :, :a] = names
    lines[:, :, a : a + b] = qids[:, None, :]
    lines[:, :, a + b] = 9  # '\t'
    if plain:
        lines[:, plain, a + b + 1 : a + b + 1 + fixed.shape[2]] = fixed if every else fixed[rows]
    for j, v in others.items():
        lines[:, j, a + b + 1 : a + b + 1 + v.shape[1]] = v if every else v[rows]
    return lines[lines != 0].tobytes().decode("utf-8")


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
        rows = np.array([i for i, qid in enumerate(result.topics) if qid in shown], dtype=np.intp)
        out.append(_per_topic_lines(result, printed, rows))
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

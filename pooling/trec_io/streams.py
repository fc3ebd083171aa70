"""The streaming readers, which hold one block of the file at a time: ``iter_run`` (``RunChunk``s) and
``iter_qrels`` (``QrelsChunk``s; a (qid, docid) given twice is recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from pooling.formats import Source
from pooling.trec_io.chunks import _QRELS_LINES, _RUN_LINES, _iter_rows
from pooling.trec_io.errors import DUPLICATE_JUDGEMENT, ErrorLog
from pooling.trec_io.keys import _qid_key


@dataclass
class RunChunk:
    """About a megabyte of a run file's rows, in file order (``iter_run``). ``qids`` are the runs of equal
    consecutive qids with their ``qid_lengths``; ``docid`` (UTF-8 bytes), ``docid_hash`` (``hash_bytes``
    of the docid alone), ``score`` and ``line`` (the file line) have one entry per row."""

    qids: list[str]
    qid_lengths: np.ndarray
    docid: np.ndarray
    docid_hash: np.ndarray
    score: np.ndarray
    line: np.ndarray


def iter_run(
    source: Source, errors: ErrorLog, *, progress: Callable[[float], None] | None = None
) -> Iterator[RunChunk]:
    """Stream a run file as ``RunChunk``s: memory holds one 8 MiB block, whatever the file's size.

    The format is ``read_run``'s. Bad lines are left out of the chunks and recorded in ``errors`` (an
    ``ErrorLog`` for the file, which the caller may add its own errors to and raise with
    ``errors.raise_if_any()``); reading stops at the log's ``max_errors``; an empty file or one without
    rows is recorded at the end. Duplicates are not checked: that needs the whole of each topic, the
    caller's job. ``progress`` gets the fraction of the file read.
    """
    for chunk, lines, _values in _iter_rows(source, errors, _RUN_LINES, progress):
        yield RunChunk(
            qids=[head.decode("utf-8", "replace") for head in chunk.qid_heads.tolist()],
            qid_lengths=chunk.qid_lengths,
            docid=chunk.docid,
            docid_hash=chunk.key - np.repeat(_qid_key(chunk.qid_heads), chunk.qid_lengths),
            score=chunk.value,
            line=lines,
        )
    if not errors.total and not errors.rows_seen:
        errors.add(None, "file is empty" if not errors.bytes_seen else "no run rows found")


@dataclass
class QrelsChunk:
    """About a megabyte of a qrels file's rows, in file order (``iter_qrels``): the qid, docid, grade and
    file line of each row."""

    qid: list[str]
    docid: list[str]
    grade: np.ndarray
    line: np.ndarray


def iter_qrels(
    source: Source, errors: ErrorLog, *, progress: Callable[[float], None] | None = None
) -> Iterator[QrelsChunk]:
    """Stream a qrels file as ``QrelsChunk``s (the format is ``read_qrels``'s), as ``iter_run`` streams a
    run: bad lines left out and recorded in ``errors``; the same (qid, docid) twice is recorded too, on
    the line of the second (only the pairs are kept, not the rows)."""
    seen: dict[tuple[str, str], int] = {}
    for chunk, lines, _values in _iter_rows(source, errors, _QRELS_LINES, progress):
        qids = np.repeat(chunk.qid_heads, chunk.qid_lengths)
        qid = [value.decode("utf-8", "replace") for value in qids.tolist()]
        docid = [value.decode("utf-8", "replace") for value in chunk.docid.tolist()]
        keep = []
        for i, (pair, line) in enumerate(zip(zip(qid, docid, strict=True), lines.tolist(), strict=True)):
            first = seen.setdefault(pair, line)
            if first != line:
                errors.add(
                    line, DUPLICATE_JUDGEMENT.format(qid=repr(pair[0]), docid=repr(pair[1]), first=first)
                )
            else:
                keep.append(i)
        if len(keep) < len(qid):
            qid, docid = [qid[i] for i in keep], [docid[i] for i in keep]
            chunk.value, lines = chunk.value[keep], lines[keep]
        yield QrelsChunk(qid=qid, docid=docid, grade=chunk.value, line=lines)
    if not errors.total and not errors.rows_seen:
        errors.add(None, "file is empty" if not errors.bytes_seen else "no qrels rows found")

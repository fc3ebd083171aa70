"""How a run file becomes stored rows: read in chunks, checked, ranked in trec_eval order, written."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.db import transaction

from pooling import formats, runrows, trec_io
from pooling.errors import ImportFailed, format_errors
from pooling.models import Collection, Run, Topic

if TYPE_CHECKING:
    from pooling.import_summary import RunImportSummary
    from pooling.imports import Progress


def write_rows(
    *,
    run: Run,
    path: str | Path,
    display: str,
    collection: Collection,
    skip_unknown_topics: bool,
    progress: Progress | None,
    summary: RunImportSummary,
    skipped: dict[str, int],
) -> None:
    """Read, check, rank and write the run's rows: sets summary.rows and .topics; raises ImportFailed
    with the errors in line order.

    The file streams through `trec_io.iter_run` in chunks of about a megabyte, parsed by numpy; each
    chunk's complete topic blocks are checked, ranked and written in bulk (the last block waits for the
    next chunk, which may continue it). Memory holds one block of the file, one topic and the collection's
    catalogue. Once an error is found nothing more is written, but the file is read on, so that up to 50
    errors are reported (then reading stops).

    A run whose topics are interleaved (a topic comes back after another one) is noticed at the first
    block that comes back: what was written is rolled back to a savepoint and the file is read again,
    its rows gathered by topic in memory (`trec_io.iter_run_by_topic`) and ranked a few topics at a
    time. The cost is then that of one more read of the file, whatever the order of its lines, and the
    rows stored are the same.
    """
    if not Path(path).exists():
        raise ImportFailed([f"{display}: file not found"])
    topics = dict(Topic.objects.filter(collection=collection).values_list("qid", "id"))
    small = Path(path).stat().st_size <= runrows.TARGETED_BYTES
    catalogue = runrows.DocumentCatalogue(collection, only=runrows.docids_named(path) if small else None)
    on_read = (lambda fraction: progress(fraction, "")) if progress else None

    def rank(chunks: Callable[[trec_io.ErrorLog], Iterable[trec_io.RunChunk]]) -> _Ranker:
        errors = trec_io.ErrorLog(display)
        writer = runrows.RowWriter(run.id)
        ranker = _Ranker(topics, catalogue, errors, skip_unknown_topics, skipped, writer)
        try:
            for chunk in chunks(errors):
                ranker.add(chunk)
            ranker.flush()
            errors.raise_if_any()
        except formats.FormatError as exc:
            writer.abort()
            raise ImportFailed(format_errors(exc)) from None
        except BaseException:
            writer.abort()
            raise
        writer.finish()
        return ranker

    try:
        # Most runs are written topic by topic: they stream, one block at a time. The savepoint lets a
        # run whose topics come back later (interleaved) start again from a clean table.
        with transaction.atomic():
            ranker = rank(lambda errors: trec_io.iter_run(path, errors, progress=on_read))
    except _Interleaved:
        skipped.clear()
        ranker = rank(lambda errors: trec_io.iter_run_by_topic(path, errors, progress=on_read))
    summary.rows = sum(ranker.offsets.values())
    if summary.rows == 0:
        raise ImportFailed([f"{display}: no rows to import"])
    summary.topics = len(ranker.offsets)


class _Interleaved(Exception):
    """A topic came back after another topic's rows: the run is read again, gathered by topic."""


_Held = tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class _Ranker:
    """Turns `trec_io.RunChunk`s into ranked rows: maps qids and docids to ids, finds unknown ones and
    duplicates, sorts each topic block in trec_eval order (score descending, docid descending in byte
    order) and numbers the ranks. The last topic block of a chunk is held back until the next chunk shows
    whether it goes on."""

    def __init__(
        self,
        topics: dict[str, int],
        catalogue: runrows.DocumentCatalogue,
        errors: trec_io.ErrorLog,
        skip_unknown_topics: bool,
        skipped: dict[str, int],
        writer: runrows.RowWriter,
    ) -> None:
        self.topics = topics
        self.writer = writer
        self.catalogue = catalogue
        self.errors = errors
        self.skip_unknown_topics = skip_unknown_topics
        self.skipped = skipped
        self.offsets: dict[int, int] = {}  # topic id -> rows written
        self.seen: set[str] = set()  # the qids of the blocks already ranked
        self.held: _Held | None = None

    def add(self, chunk: trec_io.RunChunk) -> None:
        if not len(chunk.line):
            return
        qids, lengths = list(chunk.qids), chunk.qid_lengths
        docid, docid_hash, score, line = chunk.docid, chunk.docid_hash, chunk.score, chunk.line
        if self.held is not None:
            held_qid, held_docid, held_hash, held_score, held_line = self.held
            self.held = None
            if qids[0] == held_qid:
                lengths = lengths.copy()
                lengths[0] += len(held_line)
            else:
                qids.insert(0, held_qid)
                lengths = np.concatenate([[len(held_line)], lengths])
            docid = np.concatenate([held_docid, docid])
            docid_hash = np.concatenate([held_hash, docid_hash])
            score = np.concatenate([held_score, score])
            line = np.concatenate([held_line, line])
        last = len(line) - int(lengths[-1])
        self.held = (qids[-1], docid[last:].copy(), docid_hash[last:], score[last:], line[last:])
        if len(qids) > 1:
            block = slice(0, last)
            self._blocks(qids[:-1], lengths[:-1], docid[block], docid_hash[block], score[block], line[block])

    def flush(self) -> None:
        if self.held is not None:
            qid, docid, docid_hash, score, line = self.held
            self.held = None
            self._blocks([qid], np.array([len(line)]), docid, docid_hash, score, line)

    def _blocks(
        self,
        qids: list[str],
        lengths: np.ndarray,
        docid: np.ndarray,
        docid_hash: np.ndarray,
        score: np.ndarray,
        line: np.ndarray,
    ) -> None:
        """Check, rank and write complete topic blocks (one entry of `qids` and `lengths` per block).

        Raises `_Interleaved` when a qid had a block already: the caller reads the run again by topic."""
        if len(set(qids)) < len(qids) or not self.seen.isdisjoint(qids):
            raise _Interleaved
        self.seen.update(qids)
        topic_of_block = np.array([self.topics.get(qid, -1) for qid in qids], dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
        for b in np.flatnonzero(topic_of_block < 0).tolist():
            qid, first, n = qids[b], int(starts[b]), int(lengths[b])
            if self.skip_unknown_topics:
                self.skipped[qid] = self.skipped.get(qid, 0) + n
            else:
                message = f"unknown topic {qid!r} (not in the collection; {n} row{'s' * (n != 1)} from here)"
                self.errors.add(int(line[first]), message)
        keep_block = topic_of_block >= 0
        if not keep_block.all():
            keep = np.repeat(keep_block, lengths)
            qids = [qid for qid, kept in zip(qids, keep_block.tolist(), strict=True) if kept]
            topic_of_block, lengths = topic_of_block[keep_block], lengths[keep_block]
            docid, docid_hash, score, line = docid[keep], docid_hash[keep], score[keep], line[keep]
            starts = np.cumsum(lengths) - lengths
        if not len(lengths):
            return
        position = self.catalogue.positions_of(docid, docid_hash)
        unknown = np.flatnonzero(position < 0)
        for i in unknown[:50].tolist():
            text = docid[i].decode("utf-8", "replace")
            self.errors.add(int(line[i]), f"unknown document {text!r} (not in the collection)")
        self.errors.total += max(0, len(unknown) - 50)
        block = np.repeat(np.arange(len(lengths)), lengths)
        self._duplicates(qids, block, position, line)
        if self.errors.total:
            return  # nothing more is written; the file is still read for its other errors
        # trec_eval order within each block; catalogue positions are in docid byte order.
        order = trec_io.trec_order(block, score, position, len(lengths))
        if order is None:
            order = np.arange(len(block))
        ranks = np.arange(1, len(order) + 1, dtype=np.int64) - np.repeat(starts, lengths)
        for b, topic_id in enumerate(topic_of_block.tolist()):
            self.offsets[topic_id] = int(lengths[b])
        topic = np.repeat(topic_of_block, lengths)
        self.writer.write(topic, self.catalogue.ids[position[order]], ranks, score[order])

    def _duplicates(self, qids: list[str], block: np.ndarray, position: np.ndarray, line: np.ndarray) -> None:
        """Report a docid given twice within a block, on the line of the repeat."""
        known = np.flatnonzero(position >= 0)
        key = block[known].astype(np.int64) * (len(self.catalogue) + 1) + position[known]
        if not trec_io.any_equal_keys(key.astype(np.uint64), block[known]):  # linear time
            return
        order = np.argsort(key, kind="stable")
        same = np.flatnonzero(key[order][1:] == key[order][:-1])
        rows = known[order]
        for k in same[:50].tolist():
            first, repeat = int(rows[k]), int(rows[k + 1])
            docid = self.catalogue.docids[position[first]].decode("utf-8", "replace")
            qid = qids[int(block[first])]
            message = f"duplicate docid {docid!r} for qid {qid!r} (first at line {int(line[first])})"
            self.errors.add(int(line[repeat]), message)
        self.errors.total += max(0, len(same) - 50)

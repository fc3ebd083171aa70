"""The one reader of TREC run and qrels files (pure: no Django): imports, judgement imports, evaluation,
the benchmarks and the notebooks all read runs and qrels here.

The readers parse a file into numpy arrays in bulk. The bytes stream through one reusable 8 MiB buffer;
each 1 MiB chunk of whole lines is split with vectorised comparisons (a fast path when every line has
exactly the expected fields separated by single spaces or tabs), each needed field is gathered into a
fixed-width bytes array (``numpy.bytes_``) in one copy, docids are hashed and scores parsed while the
chunk is in cache (fixed-format decimals with exact integer arithmetic, the rest by numpy's strtod), and
chunks go to a few threads when cores are idle. Only the output columns grow with the file
(``read_run``, ``read_qrels``); ``iter_run`` and ``iter_qrels`` stream, holding one block. Python does
per-line work only for lines that are wrong, so a 5,000,000-line run is read in about a second.
Duplicates are ruled out in linear time (``any_equal_keys``); ``iter_run_by_topic`` keeps memory flat
for runs whose topics are interleaved by spilling groups of topics to temporary files.

The reader is split by stage, one module each: ``errors`` (``ErrorLog`` and the duplicate messages),
``keys`` (``hash_bytes``, ``KeyIndex``, ``any_equal_keys``), ``tables`` (``RunTable``, ``QrelsTable``),
``blocks`` (the file streamed through the buffer, cut into chunks), ``fields`` (a chunk split into fields
and gathered), ``values`` (scores and grades parsed), ``chunks`` (a chunk parsed, the worker threads),
``readers`` (``read_run``, ``read_qrels``), ``order`` (``trec_order``), ``streams`` (``iter_run``,
``iter_qrels``) and ``by_topic`` (``iter_run_by_topic``). The public names are imported here. A
module's constants are read in that module: to change one (a test does), patch it there
(``pooling.trec_io.blocks._BLOCK_BYTES``, ``pooling.trec_io.by_topic.TOPIC_PIECE_ROWS``), not here.

Files are opened by ``pooling.formats.open_binary`` (a path, or a binary file object with a ``name``;
gzip by magic bytes or a ``.gz`` name), and problems are ``pooling.formats.FormatError``s listing
``LineError``s (``FILE:LINE: message``), exactly as for topics and documents: ``file not found``,
``truncated gzip file ...`` on the line being read, ``invalid UTF-8 ...``, a NUL byte, a line over the
length limit (``pooling.formats.limits``); reading stops after ``max_errors`` errors (50) with
``stopped reading after N errors``.

Formats, as trec_eval 10 reads them:

- Fields are separated by runs of whitespace as C's ``isspace`` knows it, which is what trec_eval's
  parser uses: space, ``\\t``, ``\\v``, ``\\f``, ``\\r`` (and ``\\n`` ends the line). Other control
  bytes are part of a field; a NUL byte is an error ("File may contain no NULL characters").
- run: ``qid Q0 docid rank score tag``; at least 6 fields, those after the sixth are ignored; the rank
  column is ignored; lines whose first field starts with ``#`` and blank lines are skipped. A score that
  is not a finite number is an error, and so is the same (qid, docid) twice (trec_eval's "duplicate
  docs"). The ranked list is :func:`trec_order`'s.
- qrels: ``qid iter docid rel``; at least 4 fields, later ones ignored; ``rel`` is an integer, negative
  allowed (negative means "in the pool, not judged"); the same (qid, docid) twice is an error.

Text must be UTF-8; a UTF-8 byte-order mark at the start of the file is dropped (as by every reader of
``pooling.formats``), not read as part of the first qid. Document ids are kept as UTF-8 bytes, so that
comparing them is trec_eval's ``strcmp`` (byte order).
"""

from __future__ import annotations

from pooling.trec_io.by_topic import TOPIC_GROUP_BYTES, TOPIC_PIECE_ROWS, iter_run_by_topic
from pooling.trec_io.chunks import QRELS_FIELDS, RUN_FIELDS
from pooling.trec_io.errors import DUPLICATE_DOCID, DUPLICATE_JUDGEMENT, ErrorLog
from pooling.trec_io.fields import MAX_FIELD_BYTES
from pooling.trec_io.keys import KeyIndex, any_equal_keys, hash_bytes
from pooling.trec_io.order import trec_order
from pooling.trec_io.readers import read_qrels, read_run
from pooling.trec_io.streams import QrelsChunk, RunChunk, iter_qrels, iter_run
from pooling.trec_io.tables import QrelsTable, RunTable

__all__ = [
    "DUPLICATE_DOCID",
    "DUPLICATE_JUDGEMENT",
    "MAX_FIELD_BYTES",
    "QRELS_FIELDS",
    "RUN_FIELDS",
    "TOPIC_GROUP_BYTES",
    "TOPIC_PIECE_ROWS",
    "ErrorLog",
    "KeyIndex",
    "QrelsChunk",
    "QrelsTable",
    "RunChunk",
    "RunTable",
    "any_equal_keys",
    "hash_bytes",
    "iter_qrels",
    "iter_run",
    "iter_run_by_topic",
    "read_qrels",
    "read_run",
    "trec_order",
]

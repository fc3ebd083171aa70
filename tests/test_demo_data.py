"""The demo data generator: file formats, run order, rankers, determinism (no database)."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from demo.build_demo_data import (
    DENY_MODULES,
    QUICK_DOCS,
    QUICK_TOPICS,
    RANKERS,
    RUN_DEPTH,
    TOPICS,
    _is_denied,
    api_documents,
    build,
    collect_documents,
    iter_module_names,
    rank_rows,
    score_bm25,
    score_lsa,
    score_tfidf,
)

KINDS = {"module", "class", "function", "method", "topic"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build(tmp_path_factory.mktemp("demo"), quick=True)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_run(path: Path) -> dict[str, list[tuple[str, int, float, str]]]:
    """qid -> [(docid, rank, score, tag)] in file order; asserts the line shape."""
    lists: dict[str, list[tuple[str, int, float, str]]] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            assert len(fields) == 6, line
            qid, q0, docid, rank, score, tag = fields
            assert q0 == "Q0"
            lists.setdefault(qid, []).append((docid, int(rank), float(score), tag))
    return lists


def top_ids(path: Path, k: int = 10) -> dict[str, set[str]]:
    return {qid: {row[0] for row in rows[:k]} for qid, rows in read_run(path).items()}


def test_it_writes_documents_jsonl_with_the_spec_fields(built: dict[str, Any]) -> None:
    rows = read_jsonl(built["documents"])
    assert len(rows) == built["counts"]["documents"] == QUICK_DOCS
    for row in rows:
        assert set(row) == {"docid", "title", "text", "url", "metadata"}
        assert all(isinstance(row[k], str) and row[k] for k in ("docid", "title", "text", "url"))
        assert set(row["metadata"]) == {"module", "kind"}
        assert row["metadata"]["kind"] in KINDS
        assert row["url"].startswith("https://docs.python.org/3/")
        assert " at 0x" not in row["text"]
    assert len({row["docid"] for row in rows}) == len(rows)
    by_id = {row["docid"]: row for row in rows}
    assert by_id["json.loads"]["metadata"] == {"module": "json", "kind": "function"}
    assert by_id["json.loads"]["url"] == "https://docs.python.org/3/library/json.html#json.loads"
    assert by_id["json.loads"]["text"].startswith("json.loads(s, *")
    assert by_id["topic:assert"]["metadata"] == {"module": "pydoc_data.topics", "kind": "topic"}


def test_it_writes_topics_jsonl_with_the_spec_fields(built: dict[str, Any]) -> None:
    rows = read_jsonl(built["topics"])
    assert len(rows) == built["counts"]["topics"] == QUICK_TOPICS
    for row in rows:
        assert set(row) == {"qid", "query", "description", "narrative", "segments"}
        assert isinstance(row["qid"], str)
        assert len(row["description"]) > 40 and len(row["narrative"]) > 80
        assert {"head", "tail"} & set(row["segments"])
        assert {"navigational", "informational"} & set(row["segments"])
    assert [row["qid"] for row in rows] == [t.qid for t in TOPICS[:QUICK_TOPICS]]


def test_it_defines_enough_distinct_topics_with_both_segment_kinds() -> None:
    assert len(TOPICS) >= 24
    assert len({t.qid for t in TOPICS}) == len({t.query for t in TOPICS}) == len(TOPICS)
    segments = Counter(s for t in TOPICS for s in t.segments)
    assert min(segments["head"], segments["tail"], segments["navigational"], segments["informational"]) >= 5
    assert all(3 in t.answers.values() for t in TOPICS)


def test_it_writes_runs_ranked_in_trec_eval_order(built: dict[str, Any]) -> None:
    assert set(built["runs"]) == {"tfidf", "bm25", "lsa"}
    for name, path in built["runs"].items():
        lists = read_run(path)
        assert sum(len(rows) for rows in lists.values()) == built["counts"]["runs"][name]
        for rows in lists.values():
            assert 0 < len(rows) <= RUN_DEPTH
            assert [rank for _, rank, _, _ in rows] == list(range(1, len(rows) + 1))
            assert {tag for _, _, _, tag in rows} == {name}
            assert len({docid for docid, _, _, _ in rows}) == len(rows)
            assert all(math.isfinite(score) for _, _, score, _ in rows)
            # trec_eval rebuilds the list as score descending, ties by docid descending (byte order).
            resorted = sorted(rows, key=lambda r: (r[2], r[0].encode()), reverse=True)
            assert resorted == rows


def test_it_only_ranks_known_documents_for_known_topics(built: dict[str, Any]) -> None:
    docids = {row["docid"] for row in read_jsonl(built["documents"])}
    qids = {row["qid"] for row in read_jsonl(built["topics"])}
    for path in built["runs"].values():
        lists = read_run(path)
        assert set(lists) == qids
        assert {docid for rows in lists.values() for docid, _, _, _ in rows} <= docids


def test_it_produces_three_visibly_different_rankings(built: dict[str, Any]) -> None:
    tops = {name: top_ids(path) for name, path in built["runs"].items()}
    for a, b in itertools.combinations(tops, 2):
        overlaps = [len(tops[a][q] & tops[b][q]) / 10 for q in tops[a]]
        assert sum(o < 1 for o in overlaps) > len(overlaps) / 2, (a, b, overlaps)
        assert np.mean(overlaps) < 0.9, (a, b, overlaps)


def test_it_ranks_the_navigational_answer_near_the_top_with_bm25(built: dict[str, Any]) -> None:
    lists = read_run(built["runs"]["bm25"])
    assert "json.loads" in [docid for docid, _, _, _ in lists["py01"][:10]]
    assert "subprocess.run" in [docid for docid, _, _, _ in lists["py04"][:10]]


def test_it_writes_seed_qrels_only_for_collection_documents(built: dict[str, Any]) -> None:
    docids = {row["docid"] for row in read_jsonl(built["documents"])}
    with built["qrels_seed"].open(encoding="utf-8") as f:
        rows = [line.split() for line in f]
    assert len(rows) == built["counts"]["qrels_seed"] > 0
    assert all(len(r) == 4 and r[1] == "0" and r[2] in docids and r[3] in {"1", "2", "3"} for r in rows)
    assert ["py01", "0", "json.loads", "3"] in rows
    keys = [(r[0].encode(), r[2].encode()) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_it_is_deterministic(built: dict[str, Any], tmp_path: Path) -> None:
    again = build(tmp_path, quick=True)
    for key in ("documents", "topics", "qrels_seed"):
        assert again[key].read_bytes() == built[key].read_bytes(), key
    for name in RANKERS:
        assert again["runs"][name].read_bytes() == built["runs"][name].read_bytes(), name


def test_it_breaks_score_ties_by_docid_descending_and_keeps_depth() -> None:
    scores = np.array([[0.5, 0.9, 0.5, 0.0, 0.5000001]])
    docids = ["b", "x", "c", "a", "a2"]
    assert rank_rows(scores, docids, depth=10) == [
        [("x", "0.900000"), ("c", "0.500000"), ("b", "0.500000"), ("a2", "0.500000")]
    ]
    assert rank_rows(scores, docids, depth=2) == [[("x", "0.900000"), ("c", "0.500000")]]
    assert [d for d, _ in rank_rows(scores, docids, positive_only=False)[0]][-1] == "a"


def naive_bm25(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    scores = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for term in query:
            df = sum(term in other for other in docs)
            if tf[term]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(d) / avgdl))
        scores.append(s)
    return scores


def test_it_scores_bm25_like_the_textbook_formula() -> None:
    docs = [
        "parse json string into python dict",
        "json json json encoder for python objects",
        "read csv file rows with header names",
        "run subprocess capture output output",
        "dict of lists sorted by key key",
    ]
    queries = ["json dict", "output key key", "csv header python"]
    ours = score_bm25(docs, queries)
    # Lengths and terms are counted after the shared analysis (lowercase, English stop words removed).
    analyze = CountVectorizer(stop_words="english").build_analyzer()
    expected = [naive_bm25([analyze(d) for d in docs], analyze(q)) for q in queries]
    np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_it_scores_tfidf_and_lsa_as_cosines() -> None:
    docs = [f"{w} alpha beta" for w in ["json", "csv", "gzip", "json csv", "http", "queue"]] * 3
    queries = ["json csv", "queue http"]
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    d = vectorizer.fit_transform(docs)
    expected = cosine_similarity(vectorizer.transform(queries), d)
    np.testing.assert_allclose(score_tfidf(docs, queries), expected)
    lsa = score_lsa(docs, queries, components=3)
    assert lsa.shape == (2, len(docs)) and np.all(np.abs(lsa) <= 1 + 1e-9)


def test_it_never_imports_denied_or_private_modules() -> None:
    for name in (
        "antigravity",
        "this",
        "idlelib.editor",
        "unittest.test",
        "asyncio.__main__",
        "_thread",
        "json._private",
        "test.support",
        "tkinter",
    ):
        assert _is_denied(name), name
    assert not _is_denied("logging.handlers")
    names = list(iter_module_names(["this", "antigravity", "json", "_json"]))
    assert names[0] == "json" and "json.decoder" in names and "json.tool" in names
    assert all(n.startswith("json") for n in names)


def test_it_attributes_reexported_names_to_their_home_module() -> None:
    pickle_ids = {document.docid for document, _ in api_documents("pickle")}
    assert {"pickle.dumps", "pickle.loads", "pickle.Pickler"} <= pickle_ids  # from the _pickle accelerator
    assert "pickle.pack" not in pickle_ids  # struct.pack, imported by pickle


def test_it_extracts_several_thousand_deduplicated_documents_in_full() -> None:
    documents = collect_documents(quick=False)
    assert 3000 <= len(documents) <= 8000
    assert len({d.docid for d in documents}) == len(documents)
    assert {d.kind for d in documents} == KINDS
    assert not {d.module.split(".")[0] for d in documents if d.kind != "topic"} & DENY_MODULES
    assert all(len(d.text) >= 40 for d in documents)
    for docid in (
        "json.dumps",
        "collections.OrderedDict",
        "builtins.list.sort",
        "topic:with",
        "logging.handlers.RotatingFileHandler",
        "os.walk",
        "hashlib.sha256",
    ):
        assert docid in {d.docid for d in documents}, docid

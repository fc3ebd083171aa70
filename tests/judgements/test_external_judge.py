"""The external-judge protocol against real small programs (no database)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from judgements.external import JudgeRequest, run_external

PROGRAMS = Path(__file__).parent / "judge_programs"
RUBRIC = [{"value": v, "label": f"grade {v}", "description": ""} for v in (0, 1, 2, 3)]


def program(name: str, *args: str) -> list[str]:
    return [sys.executable, str(PROGRAMS / name), *args]


def requests(n: int, query: str = "apple pie") -> list[JudgeRequest]:
    texts = ["apple pie recipe", "apple tart", "car engine", "pie chart", "an apple and a pie"]
    return [
        JudgeRequest(
            id=str(i),
            topic={"qid": "q1", "query": query, "description": "", "narrative": ""},
            document={"docid": f"d{i:03d}", "title": "", "text": texts[i % len(texts)]},
            rubric=RUBRIC,
        )
        for i in range(n)
    ]


def test_it_takes_the_grades_of_a_rule_based_program() -> None:
    done: list[tuple[int, int]] = []
    outcome = run_external(
        program("rule_judge.py"),
        requests(5),
        labels=[0, 1, 2, 3],
        total=5,
        progress=lambda d, t: done.append((d, t)),
    )
    assert outcome.grades == {"0": 2, "1": 1, "2": 0, "3": 1, "4": 2}
    assert outcome.counts["graded"] == 5 and outcome.counts["failed"] == outcome.counts["malformed"] == 0
    assert done[-1] == (5, 5)


def test_it_times_out_kills_and_restarts_a_program_that_stops_answering() -> None:
    started = time.monotonic()
    outcome = run_external(program("slow_judge.py"), requests(5), labels=[0, 1, 2, 3], timeout=0.5, retries=1)
    # d000 answered; d001 and d002 time out once and the restarted program answers them; d003 times out
    # twice (that program never answers it) and fails; d004 goes to a fresh program, which answers
    assert outcome.grades == {"0": 1, "1": 1, "2": 1, "4": 1}
    assert outcome.counts["timeouts"] == 4 and outcome.counts["failed"] == 1
    assert outcome.counts["attempts"] == 1 + 2 + 2 + 2 + 1
    assert any("request 3: no answer within 0.5 s" in error for error in outcome.errors)
    assert time.monotonic() - started < 20


def test_it_counts_and_refuses_garbage_answers() -> None:
    outcome = run_external(program("garbage_judge.py"), requests(3), labels=[0, 1, 2, 3], retries=1)
    assert outcome.grades == {}
    assert outcome.counts["malformed"] == 6 and outcome.counts["failed"] == 3
    assert [error.split(": ", 1)[1][:12] for error in outcome.errors] == [
        "not JSON: 'I", "answers id '", "grade 7 is n", "grade True i", "not a JSON o", "grade '2' is"
    ]  # fmt: skip


def test_it_restarts_a_program_that_exits_and_refuses_one_that_cannot_start() -> None:
    outcome = run_external([sys.executable, "-c", "print('{}')"], requests(2), labels=[0, 1], retries=1)
    assert outcome.grades == {} and outcome.counts["exited"] >= 2 and outcome.counts["failed"] == 2
    with pytest.raises(OSError):
        run_external(["/nonexistent/judge-program"], requests(1), labels=[0, 1])

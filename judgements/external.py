"""An external judge: any program that speaks JSON lines on stdin and stdout (no Django here).

The platform starts the program once and writes one request per line, waiting for one answer line before
the next request:

    {"id": "17", "topic": {"qid": "301", "query": "...", "description": "...", "narrative": "..."},
     "document": {"docid": "FT911-3032", "title": "...", "text": "..."},
     "rubric": [{"value": 0, "label": "not relevant", "description": "..."}, ...]}

and reads back ``{"id": "17", "grade": 2}`` (the ``id`` echoed; ``grade`` one of the rubric's values).
That is the whole contract: an LLM prompt such as UMBRELA's plugs in as a small script, and the platform
depends on no vendor.

What can go wrong is counted and refused cleanly, never stored as a grade:

- **timeout**: no answer line within ``timeout`` seconds. The program is killed (it may be stuck in the
  middle of a request) and started again for the next attempt;
- **malformed**: an answer that is not one JSON object of at most 64 KiB, echoes another ``id``, or has
  no ``grade`` among the rubric's values (``true`` is not a grade);
- **exited**: the program closed its output or died; it is started again.

Each request is tried ``1 + retries`` times; a request that never got a good answer is ``failed`` and its
item simply has no label from this judge. The first problems are kept as messages (``errors``), each
naming the request.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["ExternalOutcome", "JudgeRequest", "run_external"]

MAX_ANSWER_BYTES = 64 * 1024
MAX_ERRORS = 20


@dataclass(frozen=True)
class JudgeRequest:
    """One (topic, document) to grade, with the texts and the rubric the program is given."""

    id: str
    topic: dict[str, str]
    document: dict[str, str]
    rubric: list[dict[str, Any]]

    def line(self) -> str:
        payload = {"id": self.id, "topic": self.topic, "document": self.document, "rubric": self.rubric}
        return json.dumps(payload, ensure_ascii=False) + "\n"


@dataclass
class ExternalOutcome:
    """Grades by request id, the counts of what happened, and the first problems in words."""

    grades: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("asked", "graded", "failed", "attempts", "timeouts", "malformed", "exited"), 0
        )
    )
    errors: list[str] = field(default_factory=list)

    def problem(self, kind: str, message: str) -> None:
        self.counts[kind] += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)


class _Program:
    """The running program: a reader thread turns its output into lines on a queue, so a read can time
    out without blocking on a pipe."""

    def __init__(self, command: Sequence[str]) -> None:
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        try:
            while True:
                line = stream.readline(MAX_ANSWER_BYTES + 1)
                if not line:
                    break
                if len(line) > MAX_ANSWER_BYTES:  # drop the rest of an over-long line
                    while line and not line.endswith("\n"):
                        line = stream.readline(MAX_ANSWER_BYTES + 1)
                    self.lines.put("\x00too long")
                    continue
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def ask(self, line: str, timeout: float) -> str | None:
        """Send one request; the answer line, None when the program ended; raises queue.Empty on time out."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return None
        return self.lines.get(timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def _grade_of(answer: str, request: JudgeRequest, values: set[int]) -> int | str:
    """The grade in an answer line, or why the answer is malformed."""
    if answer.startswith("\x00"):
        return f"answer longer than {MAX_ANSWER_BYTES} bytes"
    try:
        parsed = json.loads(answer)
    except ValueError:
        return f"not JSON: {answer.strip()[:80]!r}"
    if not isinstance(parsed, dict):
        return "not a JSON object"
    if str(parsed.get("id")) != request.id:
        return f"answers id {parsed.get('id')!r}, not {request.id!r}"
    grade = parsed.get("grade")
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in values:
        return f"grade {grade!r} is not one of the rubric's {sorted(values)}"
    return grade


def run_external(
    command: Sequence[str],
    requests: Iterable[JudgeRequest],
    *,
    labels: Sequence[int],
    timeout: float = 30.0,
    retries: int = 1,
    total: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExternalOutcome:
    """Ask the program at ``command`` (an argv, run without a shell) for a grade of every request (see
    the module docstring); ``progress(done, total)`` after each request. A program that cannot be started
    at all raises ``OSError`` (nothing was asked)."""
    values = set(labels)
    outcome = ExternalOutcome()
    program: _Program | None = _Program(command)
    try:
        for done, request in enumerate(requests, start=1):
            outcome.counts["asked"] += 1
            for _attempt in range(1 + retries):
                if program is None:
                    program = _Program(command)
                outcome.counts["attempts"] += 1
                try:
                    answer = program.ask(request.line(), timeout)
                except queue.Empty:
                    outcome.problem("timeouts", f"request {request.id}: no answer within {timeout:g} s")
                    program.stop()
                    program = None
                    continue
                if answer is None:
                    outcome.problem("exited", f"request {request.id}: the program exited")
                    program.stop()
                    program = None
                    continue
                grade = _grade_of(answer, request, values)
                if isinstance(grade, str):
                    outcome.problem("malformed", f"request {request.id}: {grade}")
                    continue
                outcome.grades[request.id] = grade
                outcome.counts["graded"] += 1
                break
            else:
                outcome.counts["failed"] += 1
            if progress is not None:
                progress(done, total or done)
    finally:
        if program is not None:
            program.stop()
    return outcome

"""Celery tasks of the evaluation app."""

from __future__ import annotations

from pooling import jobs
from pooling.job_summary import RecordCounts
from pooling.models import Job


@jobs.job_task
def run_judge(job: Job) -> RecordCounts:
    """Let the model judge of the job label its pool, then measure its gate (progress on the job row).

    In the evaluation app because the gate scores the pool's runs (`evaluation.judge_gate`)."""
    from evaluation.judge_gate import measure_gate
    from judgements.judges import run_judge as label_pool
    from judgements.models import Judge

    judge = Judge.objects.select_related("pool").get(pk=job.params["judge"])
    counts = label_pool(judge=judge, progress=jobs.job_progress(job, scale=0.9))
    job.report(progress=0.95, message="measuring the gate")
    gate = measure_gate(judge=judge)
    job.report(result={"judge": judge.pk, "admitted": gate["admitted"], "reason": gate["reason"]})
    return RecordCounts(counts={key: value for key, value in counts.items() if isinstance(value, int)})

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from pooling.models import Job


def judge_links(job: Job, user: Any) -> list[dict[str, str]]:
    """The page of the judge a judge's job ran (`pooling.jobs.LINKS`), for a viewer who may open it: a
    manager of its pool (the page's rule, `managed_pool`); none once the judge is gone."""
    from django.urls import reverse

    from judgements.models import Judge
    from pooling.models import Pool

    judge = (
        Judge.objects.filter(pk=job.params.get("judge"), pool__in=Pool.objects.managed_by(user))
        .select_related("pool")
        .first()
    )
    if judge is None:
        return []
    return [
        {
            "label": f"judge {judge.name}",
            "url": reverse("evaluation:judge", args=[judge.pool.name, judge.name]),
        }
    ]


class EvaluationConfig(AppConfig):
    name = "evaluation"

    def ready(self) -> None:
        from pooling import jobs
        from pooling.models import Job

        jobs.add_links(Job.Kind.JUDGE, judge_links)  # pooling imports nothing of ours

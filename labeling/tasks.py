"""Project-wide tasks: mail, sent by the worker so that no web answer waits on (or reveals) the mail
server."""

from __future__ import annotations

import logging

from django.core.mail import EmailMultiAlternatives

from labeling.celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def send_email(*, subject: str, body: str, from_email: str | None, to: list[str]) -> int:
    """Send one plain-text message to `to` through EMAIL_BACKEND; returns the number sent. An empty `to`
    sends nothing: the password reset enqueues one for an unknown address too, so that its answer costs
    the same. A failing mail server is logged, as Django's own reset form does, not retried."""
    if not to:
        return 0
    try:
        return EmailMultiAlternatives(subject, body, from_email, to).send()
    except Exception:
        logger.exception("could not send mail %r", subject)
        return 0

"""The judging page in a real browser: its own keys (u revise, s skip, n note) come before a rubric's, in
either case. No rubric may use them now (`rubrics.RESERVED_KEYS`), but one stored before that rule must
not hide them: u on a rubric whose grade key is "U" opens revise, and saves no grade."""

from __future__ import annotations

import pytest

from judgements import membership, rubrics
from judgements.models import Grade, Judgement
from tests.browser import PASSWORD, log_in
from tests.factories import make_user
from tests.judgements.test_browser import make_browser_pool, press_and_wait_for_next

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]


def test_u_revises_even_when_a_stored_grade_has_the_key_in_upper_case(page, live_server):
    rater = make_user("uma", password=PASSWORD)
    pool = make_browser_pool(name="old-keys", topics=1, per_topic=6, raters=[rater])
    rubric = rubrics.create_rubric(name="old-keys")
    Grade.objects.filter(rubric=rubric, value=1).update(key="U")  # as stored before the rule
    membership.setup_judging(pool=pool, rubric=rubric)
    log_in(page, live_server, "uma")
    page.goto(f"{live_server.url}/judge/old-keys/")
    page.wait_for_selector("#judge[data-mode=item]")
    first = page.inner_text("#doc-title")
    press_and_wait_for_next(page, "2")

    page.keyboard.press("u")
    page.wait_for_selector("#judge[data-mode=revise]")
    assert page.inner_text("#doc-title") == first
    assert list(Judgement.objects.values_list("grade", flat=True)) == [2]
    assert page.problems == []

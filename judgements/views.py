"""Rater pages: the rater's pools, and the judging page with its keyboard endpoints.

Every view is scoped to the pools the user is a rater of (anyone else gets a 404, anonymous users the
login page). The judging endpoints answer a `fetch` (Accept: application/json) with the NEXT item already
rendered, so the page swaps it in without a reload; a plain form post (no JavaScript) gets a redirect.

Blindness: the templates receive a topic, a document and the rater's own counts only. No run,
rank, score, provenance, pool item id, other rater's grade or consensus is ever put in a context; the item
on screen is named by the rater's own assignment id (or, when revising, their own judgement id), and each
POST checks that it belongs to the user and to the pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgements import labels, lease_ends, leasing, submission
from judgements.documents import render_body, safe_link
from judgements.errors import JudgingError
from judgements.forms import JudgeForm, LabelForm, ReviseForm, RubricView, first_error
from judgements.models import Assignment, Judgement, Judging
from judgements.progress import live_progress, progress
from pooling.models import Document, Topic
from pooling.permissions import is_manager

# ------------------------------------------------------------------------------------------- helpers


def rater_of(request: HttpRequest) -> User:
    """The logged-in user (every view here is behind `login_required`)."""
    return cast(User, request.user)


def wants_json(request: HttpRequest) -> bool:
    """The page script asks with Accept: application/json; a plain form post does not."""
    return "application/json" in request.headers.get("Accept", "")


def judging_for(request: HttpRequest, pool_name: str) -> Judging:
    """The pool's judging setup if the user is one of its raters, else 404 (managers included)."""
    return get_object_or_404(
        Judging.objects.for_rater(rater_of(request)).select_related("pool", "rubric"), pool__name=pool_name
    )


def whole_number(raw: str, *, most: int) -> int | None:
    """`raw` as an integer if it is ASCII digits (`'²'.isdigit()` is true too) no larger than `most`."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(most)) or int(raw) > most:
        return None
    return int(raw)


def posted_id(request: HttpRequest, name: str) -> int:
    """An id from the POST body; anything but a positive integer (within a database id) is a 404 like a
    foreign id."""
    number = whole_number(request.POST.get(name, ""), most=2**63 - 1)
    if number is None or number < 1:
        raise Http404(f"no such {name}")
    return number


def item_context(
    *, judging: Judging, user: Any, topic: Topic | None, document: Document | None
) -> dict[str, Any]:
    """What the three swappable parts of the judging page show: topic, document, progress."""
    return {
        "pool": judging.pool,
        "topic": topic,
        "document": document,
        "body": render_body(document.text) if document is not None else "",
        "link": safe_link(document.url) if document is not None else None,
        "progress": progress(judging=judging, user=user, topic_id=topic.pk if topic else None),
    }


PARTS = {"topic": "judgements/_topic.html", "document": "judgements/_document.html",
         "progress": "judgements/_progress.html"}  # fmt: skip


def state(
    request: HttpRequest,
    *,
    judging: Judging,
    assignment: Assignment | None = None,
    judgement: Judgement | None = None,
    back: int = 0,
    flash: str = "",
    error: str = "",
    start: bool = False,
) -> dict[str, Any]:
    """The page's state: `mode` ('item', 'revise', 'start' or 'done'), the id the next POST names, the
    rendered parts, and in revise mode the judgement's current label (to highlight its grade). With
    `start` and no item, the mode is 'start' while something is left for the rater or the pool's strategy
    has items to select (nothing was leased: the page asks for an item by POST)."""
    item = judgement.item if judgement is not None else assignment.item if assignment is not None else None
    context = item_context(
        judging=judging,
        user=rater_of(request),
        topic=item.topic if item else None,
        document=item.document if item else None,
    )
    mode = "revise" if judgement is not None else "item" if assignment is not None else "done"
    # an adaptive pool's next items are selected when a rater asks for one (`leasing.lease_next`): while
    # its strategy has items to select, the page asks for one too, even with nothing selected left
    if mode == "done" and start and (context["progress"]["left"] or context["progress"]["to_select"]):
        mode = "start"
    context["mode"] = mode
    label = None
    if judgement is not None:
        label = {
            "grade": judgement.grade,
            "unrateable": judgement.unrateable,
            "facets": {k: str(v) for k, v in judgement.facets.items()},
            "note": judgement.note,
        }
    return {
        "mode": mode,
        "assignment": assignment.pk if assignment is not None else None,
        "judgement": judgement.pk if judgement is not None else None,
        "back": back,
        "label": label,
        "topic": item.topic.qid if item else "",
        # Rendered without the request: the parts need no context processor (saves their queries).
        "parts": {name: render_to_string(path, context) for name, path in PARTS.items()},
        "flash": flash,
        "error": error,
        "_context": context,
    }


def respond(
    request: HttpRequest, *, judging: Judging, rubric: RubricView, status: int = 200, **kwargs: Any
) -> HttpResponse:
    """JSON for the page script, the whole page otherwise."""
    data = state(request, judging=judging, **kwargs)
    context = data.pop("_context")
    if wants_json(request):
        return JsonResponse(data, status=status)
    context.update(
        {
            "judging": judging,
            "rubric": rubric,
            "note_max_length": labels.NOTE_MAX_LENGTH,
            "state": data,
            "config": {
                **rubric.config(),
                "urls": {
                    # the key press's one request: judge the item, answer with the next (the API's)
                    "loop": reverse("assignment-judgement-and-next", kwargs={"id": "0"}),
                    "progress": reverse("judgements:progress", args=[judging.pool.name]),
                    "judge": reverse("judgements:judge", args=[judging.pool.name]),
                    "submit": reverse("judgements:submit", args=[judging.pool.name]),
                    "skip": reverse("judgements:skip", args=[judging.pool.name]),
                    "revise": reverse("judgements:revise", args=[judging.pool.name]),
                },
                "state": {k: v for k, v in data.items() if k != "parts"},
                "progress_every_ms": round(settings.JUDGE_PROGRESS_REFRESH_SECONDS * 1000),
            },
        }
    )
    return render(request, "judgements/judge.html", context, status=status)


def current_state(request: HttpRequest, judging: Judging, rubric: RubricView, **kwargs: Any) -> HttpResponse:
    """The rater's live item (or a newly leased one, or 'all done'), with a flash or an error."""
    assignment = leased(leasing.lease_next(pool=judging.pool, rater=rater_of(request)))
    return respond(request, judging=judging, rubric=rubric, assignment=assignment, **kwargs)


def leased(lease: leasing.Lease | None) -> Assignment | None:
    """The assignment of a lease, with the item's topic and document the page renders."""
    if lease is None:
        return None
    return Assignment.objects.select_related("item__topic", "item__document").get(pk=lease.assignment)


def act_and_lease(request: HttpRequest, judging: Judging, action: Callable[[], Any]) -> tuple[str, Any]:
    """Run `action` (one service call) and lease the next item in the same
    transaction: one commit per key press instead of two (SQLite syncs the disk at every commit). A
    refused action (JudgingError) changes nothing; its message is returned and the next item is still
    leased, so the rater can go on. Returns (error message or "", next assignment or None)."""
    error = ""
    with transaction.atomic():
        try:
            action()
        except JudgingError as exc:
            error = str(exc)
        # (a plain form too: it is redirected to a GET of the page, which leases nothing)
        assignment = leased(leasing.lease_next(pool=judging.pool, rater=rater_of(request)))
    return error, assignment


def after_post(
    request: HttpRequest,
    judging: Judging,
    rubric: RubricView,
    *,
    assignment: Assignment | None,
    flash: str = "",
    error: str = "",
) -> HttpResponse:
    """After a POST: the next item for the script (409 with the message if the action was refused); for
    a plain form, a message and a redirect to the judging page."""
    if wants_json(request):
        return respond(
            request,
            judging=judging,
            rubric=rubric,
            assignment=assignment,
            flash="" if error else flash,
            error=error,
            status=409 if error else 200,
        )
    if error:
        messages.error(request, error)
    elif flash:
        messages.success(request, flash)
    return redirect("judgements:judge", judging.pool.name)


def invalid(request: HttpRequest, judging: Judging, rubric: RubricView, form: LabelForm) -> HttpResponse:
    """400: what was wrong, nothing stored; the rater stays on the same item."""
    message = first_error(form)
    if wants_json(request):
        return JsonResponse({"error": message}, status=400)
    return current_state(request, judging, rubric, error=message, status=400)


def label_text(rubric: RubricView, data: dict[str, Any]) -> str:
    return rubric.label_of(grade=data["grade"], unrateable=data["unrateable"])


# --------------------------------------------------------------------------------------------- pages


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The pools the user rates, with the pool's progress, their own count and what is left for them. A
    manager who rates no pool lands on their dashboard instead of an empty list (still told why)."""
    rows = []
    for judging in Judging.objects.for_rater(rater_of(request)).select_related("pool").order_by("pool__name"):
        counts = progress(judging=judging, user=rater_of(request), topic_id=None)
        rows.append({"judging": judging, "pool": judging.pool, "progress": counts})
    manager = is_manager(request.user)
    if manager and not rows:
        from judgements.manager_views import render_dashboard

        return render_dashboard(request, rater_of_nothing=True)
    return render(request, "judgements/home.html", {"rows": rows, "manager": manager})


@login_required
@require_http_methods(["GET", "POST"])
@never_cache
def judge(request: HttpRequest, pool: str) -> HttpResponse:
    """GET: the judging page with the rater's live item (resumed), else 'start' (the page's script asks
    for an item at once; without a script, a Start button does) or 'all done'. A bare GET never leases:
    a link or image on another site cannot make a logged-in rater hold an item. POST (CSRF-checked):
    lease the next item, or resume the live one."""
    judging = judging_for(request, pool)
    rubric = RubricView(judging.rubric)
    if request.method == "POST":
        if wants_json(request):
            return current_state(request, judging, rubric)
        leasing.lease_next(pool=judging.pool, rater=rater_of(request))
        return redirect("judgements:judge", judging.pool.name)
    live = leasing.current_assignment(pool=judging.pool, rater=rater_of(request))
    return respond(request, judging=judging, rubric=rubric, assignment=live, start=live is None)


def _posted_lease(request: HttpRequest, pool: str) -> tuple[Judging, Assignment, RubricView]:
    """The pool's judging, the rater's assignment the form names (`assignment`; 404 if it is not theirs
    in this pool) and the rubric, for a POST acting on a leased item."""
    judging = judging_for(request, pool)
    assignment = get_object_or_404(
        Assignment, pk=posted_id(request, "assignment"), rater=rater_of(request), item__pool=judging.pool
    )
    return judging, assignment, RubricView(judging.rubric)


@login_required
@require_POST
@never_cache
def submit(request: HttpRequest, pool: str) -> HttpResponse:
    """Record a grade (or 'unrateable') for the rater's leased item; answer with the next item."""
    judging, assignment, rubric = _posted_lease(request, pool)
    form = JudgeForm(request.POST, rubric=rubric)
    if not form.is_valid():
        return invalid(request, judging, rubric, form)
    data = form.cleaned_data
    seconds = data["seconds"]
    if seconds is None:  # no script: the time since the lease began, at most the lease
        elapsed = (timezone.now() - assignment.leased_at).total_seconds()
        seconds = max(0.0, min(elapsed, judging.lease_minutes * 60.0))
    error, following = act_and_lease(
        request,
        judging,
        lambda: submission.submit_label(
            assignment=assignment.pk, rater=rater_of(request), grade=data["grade"],
            unrateable=data["unrateable"], facets=data["facets"], note=data["note"], seconds=seconds,
        ),
    )  # fmt: skip
    flash = f"Saved: {label_text(rubric, data)}"
    return after_post(request, judging, rubric, assignment=following, flash=flash, error=error)


@login_required
@require_GET
@never_cache
def progress_part(request: HttpRequest, pool: str) -> HttpResponse:
    """The progress bars of the judging page, rendered (`{"progress": html}`): the page's script asks for
    them after a key press has shown the next item, which the judging API answered without them."""
    counts = live_progress(pool_name=pool, user=rater_of(request))
    if counts is None:  # as `judging_for`: not a rater of the pool (or no such pool)
        raise Http404("No Judging matches the given query.")
    context = {"topic": counts["topic_id"] is not None, "progress": counts}
    return JsonResponse({"progress": render_to_string(PARTS["progress"], context)})


@login_required
@require_POST
@never_cache
def skip(request: HttpRequest, pool: str) -> HttpResponse:
    """Give the leased item back (not offered to this rater again); answer with the next item."""
    judging, assignment, rubric = _posted_lease(request, pool)
    error, following = act_and_lease(request, judging, lambda: lease_ends.skip_item(assignment=assignment))
    return after_post(request, judging, rubric, assignment=following, flash="Skipped", error=error)


@login_required
@never_cache
def revise(request: HttpRequest, pool: str) -> HttpResponse:
    """GET: the rater's `back`-th most recent judgement in this pool (0 = the last one), to change.
    POST: change one of the rater's own judgements (a revision is kept); answer with the current item."""
    judging = judging_for(request, pool)
    if request.method == "POST":
        return revise_post(request, judging)
    if request.method != "GET":
        return HttpResponse(status=405)
    back = whole_number(request.GET.get("back", "0"), most=2**31 - 1)
    if back is None:
        error = "back must be a whole number of judgements, 0 for the last one"
        if wants_json(request):
            return JsonResponse({"error": error}, status=400)
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    rubric = RubricView(judging.rubric)
    mine = Judgement.objects.filter(item__pool=judging.pool, rater=rater_of(request))
    found = list(
        mine.select_related("item__topic", "item__document").order_by("-created_at", "-id")[back : back + 1]
    )
    if not found:
        error = (
            "No earlier judgement to revise." if back else "You have not judged anything in this pool yet."
        )
        if wants_json(request):
            return JsonResponse({"error": error}, status=409)
        messages.info(request, error)
        return redirect("judgements:judge", judging.pool.name)
    return respond(request, judging=judging, rubric=rubric, judgement=found[0], back=back)


def revise_post(request: HttpRequest, judging: Judging) -> HttpResponse:
    judgement = get_object_or_404(
        Judgement.objects.select_related("rubric"),
        pk=posted_id(request, "judgement"),
        rater=rater_of(request),
        item__pool=judging.pool,
    )
    rubric = RubricView(judging.rubric)
    label_rubric = rubric if judgement.rubric_id == judging.rubric_id else RubricView(judgement.rubric)
    form = ReviseForm(request.POST, rubric=label_rubric)
    if not form.is_valid():
        return invalid(request, judging, rubric, form)
    data = form.cleaned_data
    error, following = act_and_lease(
        request,
        judging,
        lambda: labels.revise_judgement(
            judgement=judgement, by=rater_of(request), grade=data["grade"], unrateable=data["unrateable"],
            facets=data["facets"], note=data["note"],
        ),
    )  # fmt: skip
    flash = f"Revised: {label_text(label_rubric, data)}"
    return after_post(request, judging, rubric, assignment=following, flash=flash, error=error)

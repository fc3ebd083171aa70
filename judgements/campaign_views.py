"""The manager's judging page of a pool: set up judging (rubric, judgements per item, the agreement
sample, lease length, adjudication gap) and add raters — existing users or new accounts — on one page.

And the page that stands in for the raters, gold, adjudication and agreement pages of a pool whose judging
is not set up yet: it says what to do next (`JudgingNotSetUp`, answered by `JudgingNotSetUpMiddleware`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from judgements import membership
from judgements.models import Judging, Rubric
from judgements.rubrics import default_rubric
from pooling import errors as pooling_errors
from pooling import pool_build as pooling_pool_build
from pooling.forms import PoolForm
from pooling.models import Pool
from pooling.permissions import is_manager, managed_pool, manager_required


class JudgingNotSetUp(Http404):
    """A manager page of a pool that needs its judging set up first (a 404 for anyone who does not
    manage the pool; for its managers, a page linking to the set-up)."""

    def __init__(self, pool_name: str) -> None:
        super().__init__(f"pool {pool_name!r} has no judging set up yet")
        self.pool_name = pool_name


class JudgingNotSetUpMiddleware:
    """Turns `JudgingNotSetUp` into the page that says what to do next, for the pool's managers."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, JudgingNotSetUp) or not is_manager(request.user):
            return None
        pool = Pool.objects.managed_by(request.user).filter(name=exception.pool_name).first()
        if pool is None:
            return None
        return render(request, "setup/judging_not_set_up.html", {"pool": pool})


class SetupForm(forms.Form):
    rubric = forms.ModelChoiceField(queryset=Rubric.objects.all(), empty_label=None)
    # the judgement plan, as the pool form asks for it (one definition of its bounds and wording)
    judgements_per_item = PoolForm.base_fields["judgements_per_item"]
    double_judge_fraction = PoolForm.base_fields["double_judge_fraction"]
    # Bounds: the columns' (`Judging.MAX_*`), which `membership.setup_judging` checks beside the field.
    lease_minutes = forms.IntegerField(help_text="How long a rater holds a document.")
    # At most the rubric's highest grade minus its lowest: `membership.check_adjudication_gap`, beside it.
    adjudication_gap = forms.IntegerField(
        help_text="Grades this far apart on one item go to adjudication; at most the rubric's highest grade "
        "minus its lowest."
    )

    def __init__(self, *args: Any, pool: Pool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if pool.status in (Pool.Status.BUILT, Pool.Status.BUILDING):
            # a built pool's items carry their required judgements: shown, not changed
            for name in ("judgements_per_item", "double_judge_fraction"):
                self.fields[name].disabled = True  # (what an empty value means stays said)
                self.fields[
                    name
                ].help_text = f"{self.fields[name].help_text} Fixed once the pool is built.".strip()


class AddRatersForm(forms.Form):
    """Existing users to add as raters: the raters of the other pools the manager manages (never anyone
    else's people: a manager sees no list of every account), or anyone by their exact username."""

    users = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple, required=False,
        label="Raters of your other pools",
    )  # fmt: skip
    username = forms.CharField(
        max_length=150, required=False, label="Or a username", help_text="Their exact username."
    )

    def __init__(self, *args: Any, judging: Judging | None, manager: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_add_%s")  # the page's new-account form has a `username` too
        super().__init__(*args, **kwargs)
        self.judging = judging
        self.fields["users"].queryset = self.offered(judging=judging, manager=manager)  # type: ignore[attr-defined]  # a ModelMultipleChoiceField

    @staticmethod
    def offered(*, judging: Judging | None, manager: Any) -> Any:
        """Active, non-admin raters of the pools `manager` manages, not yet raters of this pool."""
        managed = Judging.objects.filter(pool__in=Pool.objects.managed_by(manager).values("pk"))
        raters = Judging.raters.through.objects.filter(judging__in=managed.values("pk")).values("user_id")
        users = membership.managers_may_add().filter(pk__in=raters)
        if judging is not None:
            users = users.exclude(pk__in=judging.raters.values("pk"))
        return users.order_by("username")

    def clean_username(self) -> Any:
        name = self.cleaned_data["username"].strip()
        if not name:
            return None
        user = membership.managers_may_add().filter(username=name).first()
        if user is None:  # the same words whether no such account exists or it may not rate
            raise forms.ValidationError(
                f"No user named {name!r} can be added as a rater. Check the spelling, or create their "
                "account below."
            )
        return user

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        users = list(data.get("users") or [])
        if data.get("username") is not None and data["username"] not in users:
            users.append(data["username"])
        if not users and not self.errors:
            raise forms.ValidationError("Choose raters, or give a username.")
        data["raters"] = users
        return data


class NewRaterForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _ only.")
    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False), help_text="Tell the rater; it is not shown again."
    )


@require_http_methods(["GET", "POST"])
@manager_required
def judging_setup(request: HttpRequest, name: str) -> HttpResponse:
    """Set up judging and add raters (`action`: setup, add or create); each is one call to a service."""
    pool = managed_pool(request, name)
    judging = Judging.objects.filter(pool=pool).select_related("rubric").first()
    action = request.POST.get("action") if request.method == "POST" else None
    chosen = request.GET.get("rubric", "")  # back from the new-rubric page: that rubric offered chosen
    new_rubric = Rubric.objects.filter(pk=chosen).first() if chosen.isdigit() else None
    rubric = new_rubric or (judging.rubric if judging else default_rubric())
    gap = judging.adjudication_gap if judging else membership.default_adjudication_gap(rubric)
    initial = {
        "rubric": rubric,
        "judgements_per_item": pool.judgements_per_item,
        "double_judge_fraction": pool.double_judge_fraction,
        "lease_minutes": judging.lease_minutes if judging else settings.LEASE_MINUTES,
        "adjudication_gap": gap,
    }
    setup = SetupForm(request.POST if action == "setup" else None, pool=pool, initial=initial)
    add = AddRatersForm(request.POST if action == "add" else None, judging=judging, manager=request.user)
    new = NewRaterForm(request.POST if action == "create" else None)
    if action == "setup" and setup.is_valid():
        data = setup.cleaned_data
        try:
            with transaction.atomic():  # the plan and the set-up, or neither
                if not setup.fields["judgements_per_item"].disabled:
                    pooling_pool_build.set_judgement_plan(
                        pool=pool,
                        judgements_per_item=data["judgements_per_item"],
                        double_judge_fraction=data["double_judge_fraction"],
                    )
                membership.setup_judging(
                    pool=pool,
                    rubric=data["rubric"],
                    lease_minutes=data["lease_minutes"],
                    adjudication_gap=data["adjudication_gap"],
                )
        except pooling_errors.Refused as exc:
            exc.add_to(setup)
        else:
            messages.success(request, f"Judging of {pool.name} set up with rubric {data['rubric']}.")
            return redirect("judging-setup:judging", name=pool.name)
    if action == "add" and add.is_valid():
        done = membership.add_raters(pool=pool, raters=add.cleaned_data["raters"])
        if done.added:
            messages.success(request, f"Raters added: {_names(done.added)}.")
        if done.already:
            verb = "is already a rater" if len(done.already) == 1 else "are already raters"
            messages.info(request, f"{_names(done.already)} {verb} of {pool.name}: not added again.")
        return redirect("judging-setup:judging", name=pool.name)
    if action == "create" and new.is_valid():
        try:
            user = membership.create_rater_account(
                username=new.cleaned_data["username"], password=new.cleaned_data["password"]
            )
        except membership.AccountRefused as exc:
            exc.add_to(new)
        else:
            membership.setup_judging(pool=pool, raters=[user])
            login = request.build_absolute_uri(reverse("login"))
            messages.success(
                request,
                f"Account {user.get_username()} created and added to {pool.name}. They log in at {login} "
                f"with the username {user.get_username()} and the password you chose, and find {pool.name} "
                "on their first page.",
            )
            return redirect("judging-setup:judging", name=pool.name)
    context = {
        "pool": pool,
        "judging": judging,
        "raters": judging.raters.order_by("username") if judging else [],
        "setup": setup,
        "add": add,
        "new": new,
        "login_url": request.build_absolute_uri(reverse("login")),
        "new_rubric_url": f"{reverse('rubrics:create')}?{urlencode({'next': request.path})}",
    }
    return render(request, "setup/judging.html", context)


def _names(users: list[Any]) -> str:
    return ", ".join(user.get_username() for user in users)

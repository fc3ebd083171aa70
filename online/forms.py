"""The forms of the online app: a click log's upload, from the manager's page (`views.log_upload`) and the
admin's upload (`admin.ClickLogAdmin.upload_view`) alike. The fields are the API upload's
(`api.ClickLogUploadSerializer`); what the import refuses is refused by the import's own checks
(`clicklogs.check_click_log`, run by `jobs.start_click_import`), shown beside the field it names. And the
interleaving page's power planner (`PowerPlanForm`), whose refusals are the planner's own `PlanError`,
shown the same way (`Refused.add_to`)."""

from __future__ import annotations

from typing import Any

from django import forms

from online import jobs, preference
from online.models import ClickLog
from pooling.errors import ImportFailed, Refused
from pooling.models import Collection, Job, Pool


class ClickLogUploadForm(forms.Form):
    """The API upload's fields, the collection and the pool among those the user manages (another's is
    not offered, and posting its id is "not one of the available choices")."""

    collection = forms.ModelChoiceField(queryset=Collection.objects.none())
    name = forms.SlugField(
        max_length=100, help_text="The log's name in the collection: letters, digits, - and _."
    )
    format = forms.ChoiceField(choices=[c for c in ClickLog.Format.choices if c[0] in jobs.UPLOAD_FORMATS])
    file = forms.FileField(help_text="The impressions JSONL, the counts file, or UBI ubi_queries.")
    events = forms.FileField(required=False, help_text="UBI only: the ubi_events export.")
    pool = forms.ModelChoiceField(
        queryset=Pool.objects.none(),
        required=False,
        help_text="The pool of the collection whose human judgements click labels are compared with.",
    )
    object_field = forms.CharField(
        required=False, max_length=100, help_text="Map object ids by this document metadata key."
    )
    ordinal_base = forms.TypedChoiceField(
        choices=[(1, "1"), (0, "0")],
        coerce=int,
        initial=1,
        help_text="UBI position.ordinal of the first result.",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        collection: Any = self.fields["collection"]
        collection.queryset = Collection.objects.managed_by(user).order_by("name")
        pool: Any = self.fields["pool"]
        pool.queryset = Pool.objects.managed_by(user).select_related("collection").order_by("name")
        pool.label_from_instance = lambda p: f"{p.name} (collection {p.collection.name})"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("format") and data.get("file"):
            try:
                data["uploads"] = jobs.click_uploads(
                    format=data["format"], file=data["file"], events=data.get("events")
                )
            except Refused as exc:
                self.add_error("events", exc.errors)
        return data

    def start(self, *, user: Any) -> Job | None:
        """Start the import job of a valid form (`jobs.start_click_import`, the API's): the job, or None
        with the refusal beside the field it names (a bad file's errors by line beside the file)."""
        fields = ("collection", "name", "format", "uploads", "pool", "object_field", "ordinal_base")
        try:
            return jobs.start_click_import(**{f: self.cleaned_data[f] for f in fields}, user=user)
        except ImportFailed as exc:
            for error in exc.errors:
                self.add_error("file", error)
        except Refused as exc:
            exc.add_to(self)
        return None


class PowerPlanForm(forms.Form):
    """The numbers the interleaving page's planner plans with (the API's `GET /api/interleaving/power/` and
    `manage.py plan_interleaving` take them too). Numbers only: what can be planned is
    `preference.plan_power`'s to say, and its `PlanError` is shown beside the field it names, as every
    service's refusal is (`Refused.add_to`)."""

    delta = forms.FloatField(label="Δ_AB to detect")
    tie_share = forms.FloatField(label="share of clicked impressions that tie")
    click_rate = forms.FloatField(label="share of impressions with a click")
    alpha = forms.FloatField(label="α, the test's level")
    power = forms.FloatField(label="power to reach")

    def plan(self) -> preference.PowerPlan | None:
        """The plan for a valid form; None with the errors on the form else."""
        if not self.is_valid():
            return None
        try:
            return preference.plan_power(
                self.cleaned_data["delta"],
                tie_share=self.cleaned_data["tie_share"],
                click_rate=self.cleaned_data["click_rate"],
                alpha=self.cleaned_data["alpha"],
                power=self.cleaned_data["power"],
            )
        except preference.PlanError as exc:
            exc.add_to(self)
            return None

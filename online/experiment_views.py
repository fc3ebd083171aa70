"""Manager pages of interleaving experiments and of the offline–online tracker: what they show is scoped
to what the manager may read (`visible_to`), what they change to what the manager manages (`managed_by`);
anyone else's experiment is a 404, and so is a change to one the manager only reads."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.exceptions import ValidationError as DRFValidationError

from online import experiment_input, experiments, preference, serving, tracker, tracking
from online.experiment_models import InterleavingExperiment, TrackedExperiment
from online.forms import PowerPlanForm
from pooling import charts
from pooling.models import Collection, Run
from pooling.permissions import manager_required

PER_QUERY_CHART = 20


def _experiment(request: HttpRequest, name: str, *, change: bool = False) -> InterleavingExperiment:
    """The experiment named `name` that the user may read, or (`change`) may change: a 404 else."""
    queryset, user = InterleavingExperiment.objects.all(), request.user
    scoped = queryset.managed_by(user) if change else queryset.visible_to(user)
    return get_object_or_404(scoped.select_related("collection", "run_a", "run_b"), name=name)


@manager_required
def interleaving_list(request: HttpRequest) -> HttpResponse:
    rows = [
        {"experiment": e, "result": e.results.first(), "impressions": e.impressions.count()}
        for e in InterleavingExperiment.objects.visible_to(request.user).select_related(
            "collection", "run_a", "run_b"
        )
    ]
    return render(request, "online/interleaving_list.html", {"rows": rows})


@manager_required
def interleaving_detail(request: HttpRequest, name: str) -> HttpResponse:
    return _detail_page(request, _experiment(request, name))


def _detail_page(
    request: HttpRequest,
    experiment: InterleavingExperiment,
    *,
    values: Any = None,
    errors: dict[str, list[str]] | None = None,
) -> HttpResponse:
    """The experiment's page: its latest result, the planner, and for whoever may change it the compute
    form (`values` as posted, its refusals beside their fields: a 400)."""
    result = experiment.results.first()
    data = experiments.result_dict(result) if result else None
    figure = ""
    queries: list[dict[str, Any]] = []
    if data:
        queries = sorted(
            ({"qid": qid, **counts} for qid, counts in data["per_query"].items()),
            key=lambda q: -(q["A"] + q["B"] + q["ties"]),
        )
        # a query whose impressions had no click says nothing: it gets no bar (not a row of zeros)
        shown = [q for q in queries if q["A"] + q["B"] + q["ties"]][:PER_QUERY_CHART]
        if shown:
            figure = charts.grouped_bars(
                [q["qid"] for q in shown],
                {f"A ({data['a']}) wins": [q["A"] for q in shown],
                 f"B ({data['b']}) wins": [q["B"] for q in shown],
                 "ties": [q["ties"] for q in shown]},
                title=f"Outcomes per query (the {len(shown)} with the most clicked impressions)",
                y_label="impressions",
                decimals=0,
            )  # fmt: skip
    # The planner's defaults: what this experiment's own traffic shows so far; with none yet, every
    # impression clicked and none tied (the page says they are placeholders, not figures of its traffic).
    clicked = (data["wins_a"] + data["wins_b"] + data["ties"]) if data else 0
    tie_default = round(data["ties"] / clicked, 3) if data and clicked else 0.0
    click_default = round(clicked / data["impressions"], 3) if data and data["impressions"] else 1.0
    defaults = {"delta": 0.02, "tie_share": min(tie_default, 0.95), "click_rate": max(click_default, 0.001),
                "alpha": preference.ALPHA, "power": preference.POWER}  # fmt: skip
    plan_form = PowerPlanForm({**defaults, **request.GET.dict()})  # a field not given takes its default
    plan = plan_form.plan()
    # a reader of the collection (a manager of a pool built on it) sees the result, and no form
    may_change = InterleavingExperiment.objects.managed_by(request.user).filter(pk=experiment.pk).exists()
    context = {"experiment": experiment, "data": data, "figure": figure, "queries": queries,
               "plan": plan, "plan_form": plan_form, "plan_defaults": defaults,
               "plan_from_traffic": bool(data and data["impressions"]),
               "unmapped": serving.unmapped_queries(experiment), "may_change": may_change,
               "values": values if values is not None else experiment_input.result_defaults(),
               "errors": errors or {},
               "click_logs": experiment_input.creditable_logs(user=request.user, experiment=experiment)
               if may_change else []}  # fmt: skip
    return render(request, "online/interleaving_detail.html", context, status=400 if errors else 200)


@require_POST
@manager_required
def interleaving_compute(request: HttpRequest, name: str) -> HttpResponse:
    """Compute a new result of an experiment the user may change (a 404 else), from the impressions logged
    back or from a click log's interleaved pages: the API's `POST /api/interleaving/<name>/result/`
    (`experiment_input.compute_result`); refusals beside their fields, the page with the result once done."""
    experiment = _experiment(request, name, change=True)
    try:
        experiment_input.compute_result(user=request.user, experiment=experiment, data=_fields(request.POST))
    except (DRFValidationError, DjangoValidationError) as exc:
        return _detail_page(
            request, experiment, values=request.POST, errors=experiment_input.field_errors(exc)
        )
    return redirect("online:interleaving", name=name)


def _chart(group: dict[str, Any]) -> str:
    points = [(e["offline_delta"], e["online_delta"]) for e in group["experiments"]]
    return str(
        charts.scatter(
            points,
            labels=[e["name"] for e in group["experiments"]],
            title=f"Offline Δ {group['metric']} against online Δ {group['online_metric']}, one point each",
            x_label=f"offline delta ({group['metric']}, treatment − baseline)",
            y_label=f"online delta ({group['online_metric']})",
            decimals=4,
            annotate=True,
            zero_lines=True,
        )
    )


@manager_required
def tracker_page(request: HttpRequest) -> HttpResponse:
    collections = list(Collection.objects.visible_to(request.user).order_by("name"))
    chosen = request.GET.get("collection", "")
    visible = TrackedExperiment.objects.visible_to(request.user).for_answers()
    if chosen:
        visible = visible.filter(collection__name=chosen)
    groups = tracking.correlation_groups(visible)
    for group in groups:
        group["figure"] = _chart(group) if group["n"] else ""
    changeable = set(TrackedExperiment.objects.managed_by(request.user).values_list("pk", flat=True))
    context = {
        "collections": collections,
        "chosen": chosen,
        "experiments": [{**tracking.experiment_dict(e), "may_change": e.pk in changeable} for e in visible],
        "groups": groups,
        "gate_lower_r": tracker.GATE_LOWER_R,
        "weak_r": tracker.WEAK_R,
        "min_experiments": tracker.MIN_EXPERIMENTS,
    }
    return render(request, "online/tracker.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def tracker_online(request: HttpRequest, pk: int) -> HttpResponse:
    """Enter (or replace) a tracked experiment's online delta, one the user may change (a 404 else): the
    API's `PATCH /api/tracker/<id>/` (`experiment_input.enter_online_delta`); refusals beside their fields,
    back to the tracker once entered."""
    managed = TrackedExperiment.objects.managed_by(request.user).select_related("collection")
    experiment = get_object_or_404(managed, pk=pk)
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        try:
            experiment_input.enter_online_delta(
                user=request.user, experiment=experiment, data=_fields(request.POST)
            )
        except (DRFValidationError, DjangoValidationError) as exc:
            errors = experiment_input.field_errors(exc)
        else:
            return redirect(reverse("online:tracker") + "?collection=" + experiment.collection.name)
    context = {
        "experiment": experiment,
        "values": request.POST if request.method == "POST" else _online_values(experiment),
        "errors": errors,
        "results": InterleavingExperiment.objects.visible_to(request.user)
        .filter(collection=experiment.collection, results__isnull=False)
        .distinct(),
    }
    return render(request, "online/tracker_online.html", context, status=400 if errors else 200)


def _online_values(experiment: TrackedExperiment) -> dict[str, str]:
    """The form's fields as the experiment has them now (blank before its online delta is entered)."""
    if experiment.interleaving is not None:
        return {"interleaving": experiment.interleaving.experiment.name}
    if experiment.online_delta is None:
        return {}
    return {"online_metric": experiment.online_metric, "online_delta": repr(experiment.online_delta)}


def _chosen_collection(request: HttpRequest, data: Any) -> Collection | None:
    """The collection the form is for: one the user manages (another's is never offered, its runs never
    listed), the only one when there is one."""
    managed = Collection.objects.managed_by(request.user).order_by("name")
    name = data.get("collection", "")
    if not name and managed.count() == 1:
        return managed.first()
    return managed.filter(name=name).first() if name else None


def _form_page(request: HttpRequest, template: str, create: Any, done: Any) -> HttpResponse:
    """GET: the form (its collection chosen by `?collection=`); POST: `create(user=, data=)`, the same
    function the API's create calls, then `done(created)`; refusals shown beside their fields."""
    data = request.POST if request.method == "POST" else request.GET
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        try:
            return redirect(done(create(user=request.user, data=_fields(request.POST))))
        except (DRFValidationError, DjangoValidationError) as exc:
            errors = experiment_input.field_errors(exc)
    collection = _chosen_collection(request, data)
    context: dict[str, Any] = {
        "collections": Collection.objects.managed_by(request.user).order_by("name"),
        "collection": collection,
        "runs": Run.objects.filter(collection=collection).order_by("name") if collection else [],
        "values": data,
        "errors": errors,
    }
    if collection is not None:
        releases = experiment_input.releases_for(user=request.user, collection=collection)
        context["releases"] = releases.select_related("pool")
        context["results"] = InterleavingExperiment.objects.filter(
            collection=collection, results__isnull=False
        ).distinct()
    status = 400 if errors else 200
    return render(request, template, context, status=status)


def _fields(post: Any) -> dict[str, Any]:
    """The posted form as the API's fields: clients a list of user names (commas or spaces between), an
    unticked box false, blanks of optional fields left out so the serializer's defaults apply."""
    fields: dict[str, Any] = {k: v for k, v in post.items() if k != "csrfmiddlewaretoken" and v != ""}
    if "clients" in post:
        fields["clients"] = post.get("clients", "").replace(",", " ").split()
    if "length" in post:  # the interleaving form: its checkbox is absent when unticked
        fields["identical_prefix"] = "identical_prefix" in post
    return fields


def _form_view(template: str, create: Any, done: Any) -> Any:
    """A manager's page of the form `template` that creates with `create` (`_form_page`)."""

    @manager_required
    def view(request: HttpRequest) -> HttpResponse:
        return _form_page(request, template, create, done)

    return view


interleaving_new = _form_view(
    "online/interleaving_new.html",
    experiment_input.create_interleaving,
    lambda e: reverse("online:interleaving", args=[e.name]),
)
tracker_new = _form_view(
    "online/tracker_new.html",
    experiment_input.create_tracked,
    lambda e: reverse("online:tracker") + "?collection=" + e.collection.name,
)

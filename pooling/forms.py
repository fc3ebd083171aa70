"""Forms of the manager's pages: a collection, an upload, a pool, its texts and the runs added to one.

They parse what a person types; the rules a pool's options obey are the service's
(`pool_build.pool_problems`), which the pool form calls to name the field at fault."""

from __future__ import annotations

from typing import Any

from django import forms

from pooling import formats, imports, pool_build
from pooling.errors import PoolError
from pooling.models import Collection, Job, Pool, Run, Topic
from pooling.pool_build import PoolOptions

UPLOAD_KINDS = [
    (Job.Kind.DOCUMENTS, "Documents"),
    (Job.Kind.TOPICS, "Topics"),
    (Job.Kind.RUN, "A run"),
]
#: The readers' formats (`formats.FILE_FORMATS`, as the API and the commands offer them, by the names their
#: errors give them), or none: guessed.
FORMATS = [
    ("", "detect from the name"),
    *((name, formats.FORMAT_NAMES.get(name, name)) for name in formats.FILE_FORMATS),
]


class CollectionForm(forms.Form):
    name = forms.CharField(required=False, help_text="Letters, digits, - and _; it appears in URLs.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_name(self) -> str:
        """The service's rule (`imports.collection_name_problems`), beside the field."""
        name = self.cleaned_data["name"]
        if problems := imports.collection_name_problems(name):
            raise forms.ValidationError(problems)
        return name


class NamedFileField(forms.FileField):
    """A file field whose refusal of an empty file names the file and the field (Django's own says only
    "The submitted file is empty.", which leaves a person who sent several files guessing)."""

    def to_python(self, data: Any) -> Any:
        name, size = getattr(data, "name", None), getattr(data, "size", None)
        if data not in self.empty_values and name and size == 0:
            message = imports.empty_upload(file_name=name, field=str(self.label or "File"))
            raise forms.ValidationError(message, code="empty")
        return super().to_python(data)


class UploadForm(forms.Form):
    """One file of documents, topics or a run (`.gz` is read transparently), into `collection`."""

    kind = forms.ChoiceField(choices=UPLOAD_KINDS)
    file = NamedFileField(label="File", help_text="Plain or gzipped (.gz).")
    format = forms.ChoiceField(
        choices=FORMATS,
        required=False,
        help_text="Documents and topics only. Detected from the name's extension: one it does not know (or "
        "none) is read as TREC SGML, and the errors then say so.",
    )
    name = forms.CharField(  # no limit of its own: `imports.check_run_name`'s, in `clean`
        required=False,
        help_text="A run's name (default: its file's name without the extension); no spaces, ',' or '/'.",
    )
    replace = forms.BooleanField(
        required=False,
        help_text=imports.REPLACE_HELP,
    )
    skip_unknown_topics = forms.BooleanField(
        required=False,
        help_text="A run only: leave out, and count, the rows of topics the collection does not have "
        "(otherwise they refuse the file).",
    )
    description = forms.CharField(required=False, help_text="A run only: what it is (for managers).")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection

    def clean(self) -> dict[str, Any]:
        """A run's name (given, or its file's) by the import's rules (`imports.check_run_name_free`: the
        rule of a name, and not taken in the collection unless Replace), beside the Name field, before any
        job starts."""
        data = super().clean() or {}
        if data.get("kind") == Job.Kind.RUN and data.get("file") is not None:
            try:
                imports.check_run_name_free(
                    collection=self.collection,
                    name=data.get("name"),
                    file_name=data["file"].name,
                    replace=bool(data.get("replace")),
                )
            except PoolError as exc:
                exc.add_to(self)
        return data

    def params(self) -> dict[str, Any]:
        """The job's parameters, as the API's import takes them."""
        data = self.cleaned_data
        if data["kind"] == Job.Kind.RUN:  # the options given, as the API's import would record them
            given = ("name", "description", "replace", "skip_unknown_topics")
            return {option: data[option] for option in given if data.get(option)}
        return {"format": data["format"]} if data["format"] else {}


class PoolForm(forms.Form):
    """What `pool_build.create_pool` takes, for one collection's runs."""

    name = forms.SlugField(max_length=100)
    runs = forms.ModelMultipleChoiceField(queryset=Run.objects.none(), widget=forms.CheckboxSelectMultiple)
    strategy = forms.ChoiceField(choices=Pool.Strategy.choices, initial=Pool.Strategy.DEPTH)
    # No limits of the form's own: the service's rules (`pool_build.pool_problems`, with the columns' ranges)
    # name the field at fault, as they do for the API and the command.
    depth = forms.IntegerField(initial=10)
    budget = forms.IntegerField(required=False, help_text="Items to judge (adaptive strategies).")
    judgements_per_item = forms.IntegerField(initial=1)
    segment = forms.ChoiceField(
        required=False,
        initial="",
        label="Topics",
        help_text="Pool only the topics of one segment (from the topics file).",
    )
    relevance_level = forms.IntegerField(
        required=False,
        initial=1,
        help_text="The lowest grade that counts as relevant (what the adaptive strategies look for).",
    )
    seed = forms.IntegerField(
        required=False, initial=0, help_text="Seeds the adaptive strategies: the same seed, the same pool."
    )
    double_judge_fraction = forms.FloatField(
        required=False,
        label="Agreement sample",
        help_text="The fraction of items judged that many times (the others once); empty: every item.",
    )
    price_per_judgement = forms.DecimalField(max_digits=8, decimal_places=2, initial=1)
    instructions = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="What raters read."
    )
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="For managers only."
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        self.fields["runs"].queryset = Run.objects.filter(collection=collection).order_by("name")  # type: ignore[attr-defined]  # a ModelMultipleChoiceField
        segments = Topic.objects.filter(collection=collection).segment_names()
        self.fields["segment"].choices = [("", "all topics"), *((name, name) for name in segments)]  # type: ignore[attr-defined]  # a ChoiceField

    def clean(self) -> dict[str, Any]:
        """The service's rules (`pool_build.pool_problems`), each shown beside its field."""
        data = super().clean() or {}
        problems = pool_build.pool_problems(
            collection=self.collection,
            name=data.get("name"),
            runs=list(data["runs"]) if "runs" in data else None,
            **PoolOptions.given(data),
        )
        if problems:
            PoolError(fields=problems).add_to(self)
        return data

    def pool_options(self) -> dict[str, Any]:
        """The keyword arguments of `pool_build.create_pool` (without the creator); an option left empty
        takes its default."""
        data = self.cleaned_data
        fields = {name: data[name] for name in ("name", "description", "instructions")}
        return {
            "collection": self.collection,
            "runs": list(data["runs"]),
            **fields,
            **PoolOptions.given(data),
        }

    def unsaved_pool(self) -> tuple[Pool, list[Run]]:
        """The pool these fields describe, not saved, and its runs: what `estimate_pool` previews. Fields
        that do not validate yet take their defaults, so the preview follows the form as it is typed."""
        values: dict[str, Any] = {}
        for field in (name for name in PoolOptions.names() if name in self.fields):
            value = self.cleaned_data.get(field) if field not in self.errors else None
            values[field] = value if value is not None else self.fields[field].initial
        if values["strategy"] is None:
            values["strategy"] = Pool.Strategy.DEPTH
        pool = Pool(collection=self.collection, **values)
        runs = list(self.cleaned_data.get("runs") or []) if "runs" not in self.errors else []
        return pool, runs


class PoolTextForm(forms.Form):
    """A pool's description and instructions, edited once it is made (`pool_text.edit_pool_text`): the
    pool form's own two fields, so that an edit parses them as creating the pool did."""

    description = PoolForm.base_fields["description"]
    instructions = PoolForm.base_fields["instructions"]


class ManagerForm(forms.Form):
    """A user made a manager of a collection or a pool, or taken off its managers (`remove`), by username;
    who may be one, and that the last one stays, are `ownership`'s rules."""

    username = forms.CharField(max_length=150)
    remove = forms.BooleanField(required=False)

    def clean_username(self) -> Any:
        from django.contrib.auth import get_user_model

        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(f"no user named {username!r}")
        return user


class AddRunsForm(forms.Form):
    """Runs of the pool's collection that are not in the pool yet."""

    runs = forms.ModelMultipleChoiceField(queryset=Run.objects.none(), widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args: Any, pool: Pool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["runs"].queryset = (  # type: ignore[attr-defined]  # a ModelMultipleChoiceField
            Run.objects.filter(collection=pool.collection_id)
            .exclude(pk__in=pool.pool_runs.values("run_id"))
            .order_by("name")
        )

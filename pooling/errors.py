"""The refusals of the pooling app: an import or a pool operation refused, having changed nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the readers' module is not imported with every refusal
    from django.forms import BaseForm

    from pooling import formats


class Refused(Exception):
    """An action was refused and changed nothing; `errors` say why (what a job row records). `field`, when
    the refusal is about one input, names it (the API answers a 400 on it, a form shows `message` beside
    it); None otherwise."""

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    @property
    def errors(self) -> list[str]:
        return [str(self)]

    def as_data(self) -> dict[str, Any]:
        """The body of the API's 400 for it: the message on the field it names, else as `detail`."""
        return {self.field: [self.message]} if self.field else {"detail": str(self)}

    def add_to(self, form: BaseForm) -> None:
        """Show it on a page's form, as `as_data` does in the API: `message` beside the field it names when
        the form has that field, else the whole refusal above the form."""
        if self.field in form.fields:
            form.add_error(self.field, self.message)
        else:
            form.add_error(None, str(self))


class ImportFailed(Refused):
    """An import stored nothing. `errors` are `FILE:LINE: message` strings, or about the one input `field`
    names (a new collection's name)."""

    def __init__(self, errors: list[str], *, field: str | None = None) -> None:
        self._errors = errors
        shown = errors[:20]
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__("\n".join(shown) + more, field=field)

    @property
    def errors(self) -> list[str]:
        return self._errors


class PoolError(Refused):
    """A pool operation was refused; nothing changed. `fields` maps the option at fault to its messages
    (what a form or the API shows beside the field); the message is all of them."""

    def __init__(self, message: str = "", *, fields: dict[str, list[str]] | None = None) -> None:
        self.fields = fields or {}
        super().__init__(message or "; ".join(m for messages in self.fields.values() for m in messages))

    def as_data(self, otherwise: str | None = None) -> dict[str, Any]:
        """The body of the API's 400 for it. Given `otherwise` (the request's field it is about, or
        `non_field_errors`): each message on the field it names, and a refusal that names none on
        `otherwise`. Without it, as any refusal (`Refused.as_data`)."""
        if otherwise is None:
            return super().as_data()
        return dict(self.fields) if self.fields else {otherwise: [str(self)]}

    def add_to(self, form: BaseForm) -> None:
        """Each message beside the field it names (above the form when the form has no such field)."""
        if not self.fields:
            return super().add_to(form)
        for field, messages in self.fields.items():
            for message in messages:
                Refused(message, field=field).add_to(form)


class UnknownRuns(PoolError, ValueError):
    """Run names that no run of the collection has (`RunQuerySet.named`); a ValueError too, as a parameter
    that names nothing is to the reports."""

    def __init__(self, collection: str, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(
            fields={"runs": [f"no run named {name!r} in collection {collection!r}" for name in missing]}
        )


def format_errors(exc: formats.FormatError) -> list[str]:
    """A reader's errors as the `FILE:LINE: message` strings an `ImportFailed` carries."""
    return [str(error) for error in exc.errors]

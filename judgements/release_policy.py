"""The label policy a request asks for: the one reader of a policy from a request value (`read_policy`),
which every page, API endpoint and command calls, and the one declaration of the API's `policy` field
(`PolicyField`), in requests and in answers. Whether a policy parses, and whether its `rater:NAME` has
judged in the pool, is `releases.check_policy`'s (it needs the pool), which every service calls."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from judgements import aggregation
from judgements.errors import JudgingError
from judgements.models import Release

DEFAULT_POLICY = aggregation.DEFAULT_POLICY  # the policy of a request that names none (absent or blank)
#: The longest policy a release can record (`Release.policy`).
MAX_POLICY_LENGTH: int = Release._meta.get_field("policy").max_length  # type: ignore[assignment]  # set on the model

POLICY_HELP = (
    "How each item's label is decided from its raters' judgements (an adjudication always wins): a rule "
    f"({', '.join(aggregation.RULES)}), a model fitted on the whole pool "
    f"({', '.join(aggregation.MODEL_POLICIES)}), or rater:USERNAME for one rater's labels. "
    f"Absent or blank: {DEFAULT_POLICY}."
)


def read_policy(value: object) -> str:
    """The policy a request value asks for (a query parameter, a form field, a JSON value, a command's
    option), stripped. Absent (None) or blank is not given: `DEFAULT_POLICY`, on pages and API alike.
    JudgingError on `policy` for a value that is not text or is longer than a release records."""
    if value is None:
        return DEFAULT_POLICY
    if not isinstance(value, str):
        raise JudgingError("a policy is text, such as majority or rater:USERNAME", field="policy")
    policy = value.strip()
    if not policy:
        return DEFAULT_POLICY
    if len(policy) > MAX_POLICY_LENGTH:
        raise JudgingError(f"a policy has at most {MAX_POLICY_LENGTH} characters", field="policy")
    return policy


class PolicyField(serializers.CharField):
    """The API's `policy`, in every request and answer. In a request it is optional and read by
    `read_policy` (absent or blank: the default); in an answer (`read_only=True`) it is the policy the
    labels were read under."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", POLICY_HELP)
        kwargs.setdefault("max_length", MAX_POLICY_LENGTH)
        if not kwargs.get("read_only"):
            kwargs.setdefault("required", False)
            kwargs.setdefault("default", DEFAULT_POLICY)
            kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def run_validation(self, data: Any = empty) -> Any:
        if isinstance(data, str) and not data.strip():
            return read_policy(data)  # blank is not given (CharField would keep "")
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        try:
            return read_policy(super().to_internal_value(data))
        except JudgingError as exc:
            raise serializers.ValidationError(exc.message) from None

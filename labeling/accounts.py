"""Password reset: off by a setting, rate-limited, mail sent by the worker, and the same work whether or
not the address belongs to anyone (its answer must not tell which addresses have accounts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.template import loader

from labeling.tasks import send_email
from labeling.throttling import PasswordResetThrottle


class PasswordResetForm(auth_forms.PasswordResetForm):
    """Django's form, with the same work for a known and an unknown address: the same user query, one
    token made, one message rendered and one mail task enqueued — for an unknown address, for a stand-in
    user that is never saved, and the task is given no recipient."""

    def get_users(self, email: str) -> Iterable[User]:
        users = list(super().get_users(email))
        if users:
            return users
        stand_in = User(username="", email=email)
        stand_in.set_unusable_password()
        return [stand_in]

    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:
        subject = "".join(loader.render_to_string(subject_template_name, context).splitlines())
        body = loader.render_to_string(email_template_name, context)
        to = [to_email] if context["user"].pk is not None else []
        transaction.on_commit(
            lambda: send_email.delay(subject=subject, body=body, from_email=from_email, to=to)
        )


def reset_enabled(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """404 for every page of the reset when PASSWORD_RESET_ENABLED is off."""

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not settings.PASSWORD_RESET_ENABLED:
            raise Http404("password reset is switched off")
        return view(request, *args, **kwargs)

    return wrapped


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset page with our form; past PASSWORD_RESET_RATE requests from one address, or for one
    email address, the form answers 429 and sends nothing."""

    form_class = PasswordResetForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        email = request.POST.get("email", "").strip().lower()
        if not all(
            PasswordResetThrottle(key).allow_request(request, self) for key in ("address", f"email:{email}")
        ):
            form = self.get_form()
            form.is_valid()
            form.add_error(None, "Too many password reset requests: try again later.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

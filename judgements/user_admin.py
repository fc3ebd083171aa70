"""The admin's user accounts: Django's `UserAdmin`, with deletion kept true to the judging counters.

- A user who has judged (or revised a judgement) is never deleted: a judgement is evidence behind
  releases and is counted in its item's `num_judgements` and the progress tallies (`Judgement.rater` and
  `JudgementRevision.changed_by` are PROTECT). The delete page (one user or the bulk action) lists the
  judgements in the way and tells the admin to deactivate the account instead.
- A user without judgements may be deleted; their live leases are ended first by the one home of a
  lease's end (`lease_ends.end_lease`, as removing a rater from a pool does), so each leased item's
  `active_leases` (and, on PostgreSQL, the tallies its triggers keep) is right and the item leasable again.
  Their other assignments (done, skipped, expired) hold no count and go with the account.

This is the only path that deletes users: no service, command or view of the platform deletes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, ProtectedError, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from judgements.lease_ends import end_lease
from judgements.membership import count_gold_need
from judgements.models import Assignment, Judgement, JudgementRevision, Judging

DEACTIVATE = (
    "An account that has judged cannot be deleted: {names} {verb} judged ({what}), and judgements are "
    "evidence behind releases. Deactivate it instead: untick “Active” on its page."
)


#: (username, judgements, revisions) of each user in the way of a deletion (`held`).
Held = list[tuple[str, int, int]]


def held(users: Iterable[User]) -> Held:
    """(username, judgements, revisions) of those of `users` who have judged or revised a judgement (which
    PROTECT keeps): two grouped counts, whatever the number of judgements."""
    ids = [user.pk for user in users]
    judged = dict(
        Judgement.all_kinds.filter(rater_id__in=ids)
        .order_by()
        .values_list("rater_id")
        .annotate(n=Count("id"))
    )
    revised = dict(
        JudgementRevision.objects.filter(changed_by_id__in=ids)
        .order_by()
        .values_list("changed_by_id")
        .annotate(n=Count("id"))
    )
    names = dict(User.objects.filter(pk__in=[*judged, *revised]).values_list("pk", "username"))
    return sorted((names[pk], judged.get(pk, 0), revised.get(pk, 0)) for pk in names)


def _counted(judgements: int, revisions: int) -> str:
    return ", ".join(
        f"{count} {noun}{'' if count == 1 else 's'}"
        for count, noun in ((judgements, "judgement"), (revisions, "revision"))
        if count
    )


def refusal(in_the_way: Held) -> str:
    """Why the users `in_the_way` (`held`: a judgement or a revision of one, which PROTECT keeps) cannot
    be deleted."""
    what = _counted(sum(row[1] for row in in_the_way), sum(row[2] for row in in_the_way))
    names = ", ".join(name for name, _, _ in in_the_way)
    return DEACTIVATE.format(names=names, verb="has" if len(in_the_way) == 1 else "have", what=what)


def evidence(in_the_way: Held) -> list[str]:
    """The protected objects as the delete page lists them: one line per user who has judged, with their
    counts and a link to their judgements in the admin (not one line per judgement, which for a rater of
    a real campaign would be a page of tens of thousands of links)."""
    url = reverse("admin:judgements_judgement_changelist")
    return [
        format_html('{}: <a href="{}?{}">{}</a>', name, url, urlencode({"q": name}), _counted(n, revised))
        for name, n, revised in in_the_way
    ]


def end_live_leases(users: Iterable[User]) -> None:
    """End the users' live leases (`end_lease`: each gives its item's lease back), inside the caller's
    transaction, before their accounts are deleted."""
    for assignment in Assignment.objects.select_for_update().filter(
        rater_id__in=[user.pk for user in users], state=Assignment.State.ACTIVE
    ):
        end_lease(assignment, Assignment.State.EXPIRED)


class AccountAdmin(UserAdmin):
    """Django's user admin; see the module docstring for deletion."""

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        in_the_way = held(objs)
        if in_the_way:
            # refused before Django collects every related row (a rater's judgements may be tens of
            # thousands): the page lists, as protected, each user's counts with a link to their judgements
            messages.error(request, refusal(in_the_way))
            return [], {}, set(), evidence(in_the_way)
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # assignments are read-only in the admin, but a deleted account's go with it (its live leases
        # given back first, `delete_model`): no permission is lacking for them
        perms_needed.discard(Assignment._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: User) -> None:
        self._delete([obj], lambda: super(AccountAdmin, self).delete_model(request, obj))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._delete(list(queryset), lambda: super(AccountAdmin, self).delete_queryset(request, queryset))

    def _delete(self, users: list[User], delete: Callable[[], None]) -> None:
        """End the users' live leases and delete them, in one transaction; a user who judged between the
        confirmation's check and the delete is refused with a 403 (nothing deleted), not a 500."""
        try:
            with transaction.atomic():
                end_live_leases(users)
                pools = list(
                    Judging.objects.filter(raters__in=users).values_list("pool_id", flat=True).distinct()
                )
                delete()
                for pool_id in pools:  # their pools' gold items need one rater fewer
                    count_gold_need(pool_id=pool_id)
        except ProtectedError:
            raise PermissionDenied(refusal(held(users))) from None


admin.site.unregister(User)
admin.site.register(User, AccountAdmin)

"""Rater pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from judgements.models import Judging


@login_required
def home(request: HttpRequest) -> HttpResponse:
    judgings = Judging.objects.for_rater(request.user).select_related("pool")
    return render(request, "judgements/home.html", {"judgings": judgings})

"""Campaign pages for managers: agreement and qrels releases of a pool."""

from __future__ import annotations

from django.urls import path

from judgements import release_views as views

app_name = "campaigns"
urlpatterns = [
    path("<slug:name>/agreement/", views.agreement, name="agreement"),
    path("<slug:name>/releases/", views.releases, name="releases"),
    path("<slug:name>/releases/new/", views.create_release, name="release-create"),
    path("<slug:name>/releases/<int:release_id>/", views.release_detail, name="release"),
    path("<slug:name>/releases/<int:release_id>/<str:filename>", views.release_file, name="release-file"),
]

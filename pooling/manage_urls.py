"""The manager's campaign pages: collections and uploads, creating a pool, adding runs to one."""

from __future__ import annotations

from django.urls import path

from pooling import manage_views as views

app_name = "setup"
urlpatterns = [
    path("collections/", views.collection_list, name="collections"),
    path("collections/<slug:name>/", views.collection_detail, name="collection"),
    path("collections/<slug:name>/pools/new/", views.pool_create, name="pool-create"),
    path("collections/<slug:name>/pools/preview/", views.pool_preview, name="pool-preview"),
    path("pools/<slug:name>/runs/add/", views.pool_add_runs, name="add-runs"),
    path("pools/<slug:name>/runs/preview/", views.pool_add_runs_preview, name="add-runs-preview"),
]

"""The manager's campaign pages: collections (their uploads, runs and managers; deleting one nothing uses),
creating a pool, editing its texts, adding runs to one and taking one out, deleting one nobody has
judged."""

from __future__ import annotations

from django.urls import path

from pooling import manage_views as views

app_name = "setup"
urlpatterns = [
    path("collections/", views.collection_list, name="collections"),
    path("collections/<slug:name>/", views.collection_detail, name="collection"),
    path("collections/<slug:name>/pools/new/", views.pool_create, name="pool-create"),
    path("collections/<slug:name>/pools/preview/", views.pool_preview, name="pool-preview"),
    path("collections/<slug:name>/managers/", views.collection_managers, name="collection-managers"),
    path("collections/<slug:name>/delete/", views.collection_delete, name="collection-delete"),
    path("collections/<slug:name>/runs/<path:run>/delete/", views.collection_delete_run, name="delete-run"),
    path("pools/<slug:name>/runs/add/", views.pool_add_runs, name="add-runs"),
    path("pools/<slug:name>/runs/preview/", views.pool_add_runs_preview, name="add-runs-preview"),
    path("pools/<slug:name>/runs/<path:run>/remove/", views.pool_remove_run, name="remove-run"),
    path("pools/<slug:name>/edit/", views.pool_edit, name="pool-edit"),
    path("pools/<slug:name>/delete/", views.pool_delete, name="pool-delete"),
]

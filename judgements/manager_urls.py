"""Manager pages of the judging app: rater statistics, gold items, crowd imports, the adjudication queue, item
history."""

from __future__ import annotations

from django.urls import path

from judgements import crowd_views, quality_views
from judgements import manager_views as views

app_name = "judging-manage"
urlpatterns = [
    path("", views.index, name="index"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("pools/<slug:pool>/", views.pool_stats, name="stats"),
    path("pools/<slug:pool>/gold/", views.gold, name="gold"),
    path("pools/<slug:pool>/crowd/", crowd_views.crowd_upload, name="crowd-import"),
    # the page's buttons: the rater's id posted, which reaches every name ('..' in a path does not)
    path("pools/<slug:pool>/raters/exclude/", quality_views.exclude, name="exclude"),
    path("pools/<slug:pool>/raters/restore/", quality_views.restore, name="restore"),
    # by username, for the names a path holds; <path:>: one made before names were checked (or by an
    # admin) may hold a '/' (the anchored suffix keeps the routes apart)
    path("pools/<slug:pool>/raters/<path:username>/exclude/", quality_views.exclude, name="exclude-rater"),
    path("pools/<slug:pool>/raters/<path:username>/restore/", quality_views.restore, name="restore-rater"),
    path("pools/<slug:pool>/gold/<int:item_id>/remove/", views.remove_gold, name="remove-gold"),
    path("pools/<slug:pool>/adjudication/", views.adjudication, name="adjudication"),
    path("pools/<slug:pool>/adjudication/<int:item_id>/", views.adjudicate, name="adjudicate"),
    path("pools/<slug:pool>/items/<int:item_id>/history/", views.item_history, name="history"),
]

"""Manager pages of the online app."""

from django.urls import path

from online import experiment_views, views

app_name = "online"
urlpatterns = [
    path("logs/", views.log_list, name="logs"),
    path("logs/upload/", views.log_upload, name="log-upload"),
    path("logs/<int:log_id>/", views.log_detail, name="log"),
    path("logs/<int:log_id>/propensities/", views.estimate, name="estimate"),
    path("logs/<int:log_id>/labels/", views.derive, name="derive"),
    path("propensities/<int:estimate_id>/", views.propensity_detail, name="propensity"),
    path("labels/<int:set_id>/", views.labels_detail, name="labels"),
    path("labels/<int:set_id>/release/", views.release, name="release"),
    path(
        "labels/<int:set_id>/releases/<int:release_id>/<str:filename>",
        views.release_file,
        name="release-file",
    ),
    path("interleaving/", experiment_views.interleaving_list, name="interleaving-list"),
    # not under interleaving/ where it would hide an experiment named "new"
    path("new-interleaving/", experiment_views.interleaving_new, name="interleaving-new"),
    path("interleaving/<slug:name>/", experiment_views.interleaving_detail, name="interleaving"),
    path(
        "interleaving/<slug:name>/compute/",
        experiment_views.interleaving_compute,
        name="interleaving-compute",
    ),
    path("tracker/", experiment_views.tracker_page, name="tracker"),
    path("tracker/new/", experiment_views.tracker_new, name="tracker-new"),
    path("tracker/<int:pk>/online/", experiment_views.tracker_online, name="tracker-online"),
]

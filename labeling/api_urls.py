"""The API router: every app registers its viewsets here (each app's `api.register(router)`)."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from evaluation import api as evaluation_api
from evaluation import judge_api
from judgements import api as judgements_api
from judgements import quality_api, rater_api, release_api
from labeling.api import ping, token
from online import api as online_api
from online import experiment_api as online_experiment_api
from online import search_api as online_search_api
from pooling import api as pooling_api
from pooling import pool_api

router = DefaultRouter()
router.register("collections", pooling_api.CollectionViewSet, basename="collection")
router.register("topics", pooling_api.TopicViewSet, basename="topic")
router.register("documents", pooling_api.DocumentViewSet, basename="document")
router.register("runs", pooling_api.RunViewSet, basename="run")
router.register("jobs", pooling_api.JobViewSet, basename="job")
pool_api.register(router)
judgements_api.register(router)
release_api.register(router)
quality_api.register(router)
evaluation_api.register(router)
judge_api.register(router)
online_api.register(router)
online_experiment_api.register(router)

urlpatterns = [
    path("ping/", ping, name="ping"),
    path("auth/token/", token, name="auth-token"),
    # The rater's loop: plain function views (judgements/rater_api.py), before the router's routes.
    path("pools/<str:name>/next/", rater_api.next_item, name="judging-pool-next"),
    path("assignments/<str:id>/judgement/", rater_api.judgement, name="assignment-judgement"),
    path(
        "assignments/<str:id>/judgement-and-next/",
        rater_api.judgement_and_next,
        name="assignment-judgement-and-next",
    ),
    # The interleaving search path: a plain function view (online/search_api.py), before the router's.
    path("interleaving/<str:name>/ranking/", online_search_api.ranking, name="interleaving-ranking"),
    *router.urls,
]

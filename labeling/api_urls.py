"""The API router: every app registers its viewsets here."""

from rest_framework.routers import DefaultRouter

from pooling import api as pooling_api

router = DefaultRouter()
router.register("collections", pooling_api.CollectionViewSet, basename="collection")
router.register("topics", pooling_api.TopicViewSet, basename="topic")
router.register("documents", pooling_api.DocumentViewSet, basename="document")
router.register("runs", pooling_api.RunViewSet, basename="run")
router.register("jobs", pooling_api.JobViewSet, basename="job")

urlpatterns = router.urls

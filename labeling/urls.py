"""URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("labeling.account_urls")),
    path("api/", include("labeling.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file (`?script`): the CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("pools/", include("pooling.urls")),
    path("", include("judgements.campaign_urls")),
    path("rubrics/", include("judgements.rubric_urls")),
    path("", include("pooling.manage_urls")),
    path("jobs/", include("pooling.job_urls")),
    path("manage/", include("judgements.manager_urls")),
    path("campaigns/", include("judgements.release_urls")),
    path("evaluation/", include("evaluation.urls")),
    path("online/", include("online.urls")),
    path("", include("judgements.urls")),
]

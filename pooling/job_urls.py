"""Job pages (managers): one page per job, whatever its kind, and its retry."""

from __future__ import annotations

from django.urls import path

from pooling import views

app_name = "jobs"
urlpatterns = [
    path("<int:job_id>/", views.job_detail, name="job-detail"),
    path("<int:job_id>/retry/", views.job_retry, name="job-retry"),
]

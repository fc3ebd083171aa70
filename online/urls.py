"""Manager pages of the online app."""

from django.urls import path  # noqa: F401

app_name = "online"
urlpatterns: list = []

"""`/accounts/`: Django's login, logout and password pages, the reset ones behind PASSWORD_RESET_ENABLED."""

from django.contrib.auth import views
from django.urls import path

from labeling.accounts import PasswordResetView, reset_enabled

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("password_change/", views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password_reset/", reset_enabled(PasswordResetView.as_view()), name="password_reset"),
    path(
        "password_reset/done/",
        reset_enabled(views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        reset_enabled(views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        reset_enabled(views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]

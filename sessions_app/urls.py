"""Web routes: sign in and out, the session list, renaming and deleting a session."""

from django.contrib.auth import views as auth_views
from django.urls import path

from nexus.login_limit import limited_login
from nexus.web import with_csp
from sessions_app import views

urlpatterns = [
    path(
        "accounts/login/",
        with_csp(limited_login(auth_views.LoginView.as_view(redirect_authenticated_user=True))),
        name="login",
    ),
    path("accounts/logout/", with_csp(auth_views.LogoutView.as_view()), name="logout"),
    path("", views.session_list, name="session-list"),
    path("sessions/<uuid:session_uuid>/rename/", views.session_rename, name="session-rename"),
    path("sessions/<uuid:session_uuid>/delete/", views.session_delete, name="session-delete"),
    path("sessions/<uuid:session_uuid>/memory/", views.session_memory, name="session-memory"),
]

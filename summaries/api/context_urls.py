from django.urls import path

from summaries.api import context_views

urlpatterns = [
    path(
        "sessions/<str:uuid>/context/",
        context_views.SessionContextView.as_view(),
        name="api-session-context",
    ),
    path("sessions/<str:uuid>/chat/", context_views.SessionChatView.as_view(), name="api-session-chat"),
]

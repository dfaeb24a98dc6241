"""Web route of the chat window."""

from django.urls import path

from summaries import pages

urlpatterns = [
    path("sessions/<uuid:session_uuid>/", pages.session_chat, name="session-chat"),
]

"""Web routes of the Memory page."""

from django.urls import path

from notes import pages

urlpatterns = [
    path("memory/", pages.memory_page, name="memory"),
    path("memory/<int:note_id>/", pages.note_edit, name="memory-note-edit"),
    path("memory/<int:note_id>/delete/", pages.note_remove, name="memory-note-delete"),
]

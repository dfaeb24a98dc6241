from django.urls import path

from notes.api import views

urlpatterns = [
    path("notes/", views.NoteListView.as_view(), name="api-note-list"),
    path("notes/<str:id>/", views.NoteDetailView.as_view(), name="api-note-detail"),
]

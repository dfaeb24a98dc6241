"""API routes of the keys (under ``/api/``) and the page of one's keys."""

from django.urls import path

from nexus.api.keys import api, pages

api_urlpatterns = [
    path("keys/", api.KeyListView.as_view(), name="api-key-list"),
    path("keys/<str:id>/", api.KeyDetailView.as_view(), name="api-key-detail"),
]

page_urlpatterns = [
    path("keys/", pages.key_page, name="key-page"),
    path("keys/<int:key_id>/revoke/", pages.key_revoke_page, name="key-revoke"),
]

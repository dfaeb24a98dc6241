from django.urls import path

from sessions_app.api import episode_views, search_views, views

urlpatterns = [
    path("auth/token/", views.AuthTokenView.as_view(), name="api-auth-token"),
    path("sessions/", views.SessionListView.as_view(), name="api-session-list"),
    path("sessions/<str:uuid>/", views.SessionDetailView.as_view(), name="api-session-detail"),
    path("sessions/<str:uuid>/episodes/", views.EpisodeListView.as_view(), name="api-episode-list"),
    path(
        "sessions/<str:uuid>/episodes/<str:episode_id>/",
        episode_views.EpisodeDetailView.as_view(),
        name="api-episode-detail",
    ),
    path(
        "sessions/<str:uuid>/episodes/since/<str:after_id>/",
        views.EpisodeSinceView.as_view(),
        name="api-episode-since",
    ),
    path("sessions/<str:uuid>/items/newest/", episode_views.NewestItemView.as_view(), name="api-newest-item"),
    path("sessions/<str:uuid>/episode-stats/", views.EpisodeStatsView.as_view(), name="api-episode-stats"),
    path("sessions/<str:uuid>/search/", search_views.SessionSearchView.as_view(), name="api-session-search"),
    path("search/", search_views.SearchView.as_view(), name="api-search"),
]

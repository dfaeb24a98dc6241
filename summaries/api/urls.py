from django.urls import path

from summaries.api import me_views, views

urlpatterns = [
    path("me/erase/", me_views.MeEraseView.as_view(), name="api-me-erase"),
    path("me/export/", me_views.MeExportView.as_view(), name="api-me-export"),
    path("summaries/", views.SummaryCreateView.as_view(), name="api-summary-create"),
    path("summaries/<str:id>/", views.SummaryDetailView.as_view(), name="api-summary-detail"),
    path("summaries/<str:id>/regenerate/", views.SummaryRegenerateView.as_view(), name="api-summary-regenerate"),
    path("sessions/<str:uuid>/summaries/", views.SessionSummaryListView.as_view(), name="api-session-summaries"),
    path("sessions/<str:uuid>/summarize/", views.SessionSummarizeView.as_view(), name="api-session-summarize"),
    path("sessions/<str:uuid>/summary-status/", views.SummaryStatusView.as_view(), name="api-summary-status"),
]

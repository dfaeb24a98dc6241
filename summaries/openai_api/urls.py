from django.urls import path

from summaries.openai_api import responses_view, views

urlpatterns = [
    path("chat/completions", views.ChatCompletionsView.as_view(), name="openai-chat-completions"),
    path("responses", responses_view.ResponsesView.as_view(), name="openai-responses"),
    path("models", views.ModelListView.as_view(), name="openai-models"),
    path("models/<str:model>", views.ModelDetailView.as_view(), name="openai-model"),
]

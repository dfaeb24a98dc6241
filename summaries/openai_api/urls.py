from django.urls import path

from summaries.openai_api import views

urlpatterns = [
    path("chat/completions", views.ChatCompletionsView.as_view(), name="openai-chat-completions"),
    path("models", views.ModelListView.as_view(), name="openai-models"),
    path("models/<str:model>", views.ModelDetailView.as_view(), name="openai-model"),
]

"""Staff see, create and revoke API keys in the admin. A new key is shown
on the answer to the add form, once (never through a message, which a
cookie would carry)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from nexus.api.keys.models import ApiKey
from nexus.api.keys.services import give_secret


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "shown", "end_user", "created_at", "last_used_at", "expires_at")
    list_select_related = ("user",)
    search_fields = ("name", "user__username", "end_user", "shown")
    list_filter = ("created_at", "last_used_at")
    raw_id_fields = ("user",)
    readonly_fields = ("shown", "created_at", "last_used_at")

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return ["user", "name", "end_user", "expires_at", *([] if obj is None else self.readonly_fields)]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        # A key stays its user's: moving it to another account would hand that account its secret.
        return self.readonly_fields if obj is None else ("user", *self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if not change:
            obj.secret = give_secret(obj)
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "key": obj,
            "secret": obj.secret,
            "title": f"API key “{obj.name}” created",
        }
        response = TemplateResponse(request, "admin/api_keys/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

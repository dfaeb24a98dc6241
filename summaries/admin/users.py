"""The user admin, with the action that erases the selected users' memory
(the same service as ``POST /api/me/erase/`` and ``manage.py erase_user``)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from summaries.erasure import Erased, user_memory_erase

User = get_user_model()


class MemoryUserAdmin(UserAdmin):
    actions = ["erase_memory"]

    @admin.action(description="Erase the selected users' memory", permissions=["delete"])
    def erase_memory(self, request: HttpRequest, queryset: QuerySet) -> None:
        total = Erased()
        for user in queryset:
            total.add(user_memory_erase(user=user))
        self.message_user(
            request,
            f"Erased the memory of {queryset.count()} users: {total.sessions} sessions, "
            f"{total.episodes} episodes, {total.summaries} summaries, {total.revisions} revisions. "
            "The accounts stay.",
            messages.SUCCESS,
        )


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, MemoryUserAdmin)

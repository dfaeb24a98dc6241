"""The page of one's API keys: create (the key shown on the answer to the
form, once), list, revoke. The key itself goes to no cookie, message or log:
it is rendered into this one answer, which no cache keeps."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from nexus.api.keys.models import END_USER_MAX_LENGTH
from nexus.api.keys.services import NAME_MAX_LENGTH, key_create, key_revoke, keys_of
from nexus.web import with_csp

#: The page lists at most this many keys, newest first.
KEY_LIST_LIMIT = 200


class KeyForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH)
    end_user = forms.CharField(max_length=END_USER_MAX_LENGTH, required=False)
    expires_in_days = forms.IntegerField(min_value=1, max_value=3650, required=False)


@with_csp
@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def key_page(request: HttpRequest) -> HttpResponse:
    form = KeyForm(request.POST) if request.method == "POST" else KeyForm()
    created = secret = None
    if form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            created, secret = key_create(
                user=request.user,
                name=form.cleaned_data["name"],
                end_user=form.cleaned_data["end_user"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except ValidationError as err:
            for field, problems in err.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            form = KeyForm()
    return render(
        request,
        "keys/list.html",
        {
            "keys": keys_of(request.user)[:KEY_LIST_LIMIT],
            "form": form,
            "created": created,
            "secret": secret,
            "now": timezone.now(),
        },
        status=400 if form.errors else 200,
    )


@with_csp
@login_required
@require_POST
def key_revoke_page(request: HttpRequest, key_id: int) -> HttpResponse:
    key = keys_of(request.user).filter(pk=key_id).first()
    if key is None:
        raise Http404("No such key.")
    key_revoke(key=key)
    messages.success(request, f"Key “{key.name}” revoked: it no longer works anywhere.")
    return redirect("key-page")

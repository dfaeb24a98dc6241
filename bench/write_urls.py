"""The production URLs plus a bare view for the write benchmark (never in production).

``bench/bare-episode/<session_pk>/`` does only what the API's single write
ends in: parse the JSON body, count tokens and INSERT the row. No DRF, no
authentication, no visibility check, no counters, no signal. The row's
position (unique in its session) comes from a sequence of the bench's own,
drawn in the INSERT, where the API draws it from the session's counter.
"""

from __future__ import annotations

import json
import os

from django.db.models import Func, Subquery, Value
from django.db.models.signals import post_save
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from nexus.urls import urlpatterns as production_urlpatterns
from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_episode_tokens


# Created by bench/api_write.py (``create_position_sequence``); above the
# positions the migration gave rows of earlier runs.
POSITIONS = "bench_bare_episode_position"


def create_position_sequence(cursor) -> None:
    cursor.execute(f"CREATE SEQUENCE IF NOT EXISTS {POSITIONS} START 1000000000")


@csrf_exempt
def bare_episode_create(request: HttpRequest, session_pk: int) -> JsonResponse:
    data = json.loads(request.body)
    user_input, response = data["user_input"], data["response"]
    # bulk_create: the same INSERT ... RETURNING as save(), without post_save.
    (episode,) = Episode.objects.bulk_create(
        [
            Episode(
                session_id=session_pk,
                # The session's owner in the same INSERT, as the API's one statement takes it.
                owner_id=Subquery(ChatSession.objects.filter(pk=session_pk).values("owner_id")),
                position=Func(Value(POSITIONS), function="nextval"),
                user_input=user_input,
                response=response,
                token_count=count_episode_tokens(user_input, response),
                metadata=data.get("metadata") or {},
            )
        ]
    )
    return JsonResponse(
        {
            "id": episode.pk,
            "user_input": episode.user_input,
            "response": episode.response,
            "token_count": episode.token_count,
            "metadata": episode.metadata,
            "created_at": episode.created_at.isoformat(),
        },
        status=201,
    )


if os.environ.get("BENCH_WITHOUT_GATE") == "1":
    # Diagnostic only: how much of the API's cost is the after-commit
    # summarization trigger (its gate query)?
    post_save.disconnect(sender=Episode, dispatch_uid="summaries.episode_saved")

urlpatterns = [
    path("bench/bare-episode/<int:session_pk>/", bare_episode_create),
    *production_urlpatterns,
]

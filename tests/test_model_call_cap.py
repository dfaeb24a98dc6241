"""The optional cap on model calls per user and hour (UTILITY_CALLS_PER_USER_HOUR):
what it counts, the 429 on requests that ask for model work, and episode
writes that are never refused while their summarization waits for the cap.

Time passing is the stored times moving into the past (``an_hour_passes``),
which is all the cap reads."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import Episode
from summaries import model_cap
from summaries.models import ChatCall, SummarizationState, Summary, UtilityCall
from summaries.runner import RunOutcome, regenerate_row, run_session
from summaries.tasks import summarize_session, sweep_pending
from tests.factories import (
    ChatSessionFactory,
    EpisodeFactory,
    SummaryFactory,
    UserFactory,
    UtilityCallFactory,
)
from tests.test_summarization_gate import LONG, sent, write  # noqa: F401 - sent is a fixture
from tests.test_summarization_policy import FakeClient

pytestmark = pytest.mark.django_db

CAP = 3


@pytest.fixture
def cap(settings) -> int:
    settings.UTILITY_CALLS_PER_USER_HOUR = CAP
    return CAP


@pytest.fixture
def fake(use_client) -> FakeClient:
    """A model client in process that stands for a real model server."""
    return use_client(FakeClient())


def spend(user, n: int, *, minutes_ago: float = 1, chat: bool = False) -> None:
    """``n`` model calls charged to ``user``, made ``minutes_ago`` (utility calls unless ``chat``)."""
    for _ in range(n):
        if chat:
            call = ChatCall.objects.create(user=user, model="fake-chat")
        else:
            call = UtilityCallFactory(charged_to=user, session=ChatSessionFactory(owner=user))
        type(call).objects.filter(pk=call.pk).update(
            created_at=timezone.now() - timedelta(minutes=minutes_ago)
        )


def an_hour_passes() -> None:
    """Every time the cap reads moves an hour (and a second) into the past,
    as the clock moving on would have it."""
    shift = model_cap.WINDOW + timedelta(seconds=1)
    UtilityCall.objects.update(created_at=F("created_at") - shift)
    ChatCall.objects.update(created_at=F("created_at") - shift)
    SummarizationState.objects.filter(deferred_until__isnull=False).update(
        deferred_until=F("deferred_until") - shift
    )


def due(session, n: int = 5) -> list[Episode]:
    """Episodes enough to pass the gate (their trigger is not run: no commit in these tests)."""
    return [EpisodeFactory(session=session, response=LONG) for _ in range(n)]


def assert_refused(response, *, wait_seconds: int) -> None:
    assert response.status_code == 429
    assert abs(int(response["Retry-After"]) - wait_seconds) <= 2
    assert f"{CAP} model calls per user per hour" in response.json()["detail"]


# --- what counts ------------------------------------------------------------------


def test_without_the_setting_there_is_no_cap(owner, settings):
    assert settings.UTILITY_CALLS_PER_USER_HOUR is None
    spend(owner, 50)
    assert model_cap.model_call_wait(owner.pk) is None
    model_cap.check_model_call_allowed(user=owner)  # raises nothing


def test_the_wait_is_until_the_cap_th_newest_call_is_an_hour_old(owner, other_user, staff_user, cap):
    spend(owner, 1, minutes_ago=70)  # out of the window
    spend(owner, 1, minutes_ago=50)
    spend(owner, 1, minutes_ago=40, chat=True)
    assert model_cap.model_call_wait(owner.pk) is None  # two in the hour
    spend(owner, 1, minutes_ago=10, chat=True)
    wait = model_cap.model_call_wait(owner.pk)
    assert timedelta(minutes=9, seconds=58) < wait <= timedelta(minutes=10)
    # Other users' calls, and calls charged to nobody (the offline digest), are not the owner's.
    spend(other_user, CAP)
    UtilityCallFactory(charged_to=None, session=ChatSessionFactory(owner=staff_user))
    assert model_cap.model_call_wait(staff_user.pk) is None
    assert model_cap.model_call_wait(other_user.pk) is not None


def test_offline_digests_and_replies_count_nothing(api_client, owner, session, settings, cap):
    settings.INFERENCE_BACKEND = "offline"
    settings.SUMMARY_THRESHOLD_TOKENS = 10
    for _ in range(CAP + 1):
        due(session)
        assert run_session(session_pk=session.pk, owner="task-1").outcome is RunOutcome.DONE
    for n in range(CAP + 1):
        turn = api_client.post(f"/api/sessions/{session.uuid}/chat/", {"message": f"Hi {n}"}, format="json")
        assert turn.status_code == 201
    assert UtilityCall.objects.filter(session=session).count() == CAP + 1
    assert not UtilityCall.objects.filter(charged_to__isnull=False).exists()
    assert not ChatCall.objects.exists()
    # Calls made through a real model earlier in the hour hold nothing back the offline backend serves.
    spend(owner, CAP)
    summary = Summary.objects.filter(session=session).first()
    assert api_client.post(f"/api/summaries/{summary.pk}/regenerate/").status_code == 202


def test_background_calls_are_the_owners_and_a_requested_regeneration_the_requesters(
    owner, staff_user, session, fake, cap
):
    due(session)
    run_session(session_pk=session.pk, owner="task-1")
    summary = Summary.objects.get(session=session)
    regenerate_row(summary_pk=summary.pk, owner="task-2", actor_pk=staff_user.pk)
    charged = list(UtilityCall.objects.order_by("pk").values_list("kind", "charged_to"))
    assert charged == [("fresh", owner.pk), ("regenerate", staff_user.pk)]


def test_erasing_what_one_stored_does_not_reset_the_count(api_client, owner, session, model, cap):
    for n in range(CAP):
        api_client.post(f"/api/sessions/{session.uuid}/chat/", {"message": f"Question {n}?"}, format="json")
    assert api_client.post("/api/me/erase/", {"confirm": "owner"}, format="json").status_code == 200
    assert ChatCall.objects.filter(user=owner, session__isnull=True).count() == CAP
    assert model_cap.model_call_wait(owner.pk) is not None


def test_on_postgresql_the_count_reads_one_users_hour_from_the_indexes(owner, cap):
    if connection.vendor != "postgresql":
        pytest.skip("about PostgreSQL's planner")
    users = [UserFactory() for _ in range(40)] + [owner]
    with connection.cursor() as cursor:
        # A month of calls by many users, a call a minute each, then the planner's statistics.
        for user in users:
            cursor.execute(
                """
                INSERT INTO summaries_utilitycall (kind, model, prompt_tokens, completion_tokens, duration_ms,
                       outcome, first_episode_id, last_episode_id, charged_to_id, created_at)
                SELECT 'fresh', 'm', 1, 1, 1, 'ok', 1, 1, %s, now() - g * interval '1 minute'
                  FROM generate_series(1, 1500) AS g
                """,
                [user.pk],
            )
            cursor.execute(
                """
                INSERT INTO summaries_chatcall (model, user_id, created_at)
                SELECT 'm', %s, now() - g * interval '1 minute' FROM generate_series(1, 1500) AS g
                """,
                [user.pk],
            )
        cursor.execute("ANALYZE summaries_utilitycall")
        cursor.execute("ANALYZE summaries_chatcall")
    with CaptureQueriesContext(connection) as captured:
        assert model_cap.model_call_wait(owner.pk) is not None
    (query,) = captured.captured_queries
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + query["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "utilitycall_charged_time_idx" in plan and "chatcall_user_time_idx" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_an_episode_write_with_a_cap_set_costs_no_query_more(
    owner, session, settings, django_capture_on_commit_callbacks
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            write(session, django_capture_on_commit_callbacks)
        return len(captured)

    without = queries()
    settings.UTILITY_CALLS_PER_USER_HOUR = CAP
    spend(owner, CAP)
    assert queries() == without


# --- requests that ask for model work ---------------------------------------------------


@pytest.fixture
def summary(session):
    episodes = due(session)
    return SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[-1].pk)


def test_regenerate_and_summarize_answer_429_at_the_cap_and_queue_nothing(
    api_client,
    owner,
    session,
    summary,
    fake,
    cap,
    sent,  # noqa: F811
):
    spend(owner, CAP, minutes_ago=30)
    for url in (f"/api/summaries/{summary.pk}/regenerate/", f"/api/sessions/{session.uuid}/summarize/"):
        assert_refused(api_client.post(url), wait_seconds=30 * 60)
    assert sent == [] and fake.prompts == []
    an_hour_passes()
    assert api_client.post(f"/api/summaries/{summary.pk}/regenerate/").status_code == 202


def test_staff_asking_for_work_on_a_capped_owners_session_uses_their_own_cap(
    staff_client, staff_user, owner, session, summary, fake, cap, django_capture_on_commit_callbacks
):
    spend(owner, CAP)
    with django_capture_on_commit_callbacks(execute=True):
        assert staff_client.post(f"/api/summaries/{summary.pk}/regenerate/").status_code == 202
    assert list(UtilityCall.objects.filter(session=session).values_list("charged_to", flat=True)) == [
        staff_user.pk
    ]
    spend(staff_user, CAP)
    assert_refused(staff_client.post(f"/api/sessions/{session.uuid}/summarize/"), wait_seconds=59 * 60)


def test_a_summary_now_asked_for_under_the_cap_is_charged_to_whoever_asked(
    staff_client, staff_user, session, fake, cap, django_capture_on_commit_callbacks
):
    due(session, 2)  # below the gate: only a forced run folds these
    with django_capture_on_commit_callbacks(execute=True):
        assert staff_client.post(f"/api/sessions/{session.uuid}/summarize/").status_code == 202
    assert list(UtilityCall.objects.values_list("kind", "charged_to")) == [("fresh", staff_user.pk)]


def test_admin_actions_at_the_cap_queue_nothing_and_say_why(
    staff_user, summary, fake, cap, django_capture_on_commit_callbacks
):
    browser = Client()
    browser.force_login(staff_user)
    spend(staff_user, CAP)
    for url, action in (
        (reverse("admin:summaries_summary_changelist"), "regenerate_selected"),
        (reverse("admin:summaries_summary_changelist"), "rebuild_session_chains"),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            response = browser.post(
                url, {"action": action, "_selected_action": [str(summary.pk)]}, follow=True
            )
        assert response.status_code == 200
        (message,) = [str(m) for m in response.context["messages"]]
        assert f"{CAP} model calls per user per hour" in message
    assert fake.prompts == [] and not summary.revisions.exists()


def test_chat_turns_count_and_answer_429_at_the_cap(api_client, owner, session, model, cap):
    url = f"/api/sessions/{session.uuid}/chat/"
    for n in range(CAP):
        assert api_client.post(url, {"message": f"Question {n}?"}, format="json").status_code == 201
    assert ChatCall.objects.filter(user=owner, session=session).count() == CAP

    before = len(model.requests)
    refused = api_client.post(url, {"message": "One more?"}, format="json")
    assert_refused(refused, wait_seconds=60 * 60)
    streamed = api_client.post(url, {"message": "One more?"}, format="json", HTTP_ACCEPT="text/event-stream")
    assert streamed.status_code == 429 and int(streamed["Retry-After"]) > 0
    event = json.loads(streamed.content.decode().removeprefix("data: "))
    assert f"{CAP} model calls per user per hour" in event["error"]
    # The model was not asked and nothing was stored.
    assert len(model.requests) == before
    assert not Episode.objects.filter(session=session, user_input="One more?").exists()

    an_hour_passes()
    assert api_client.post(url, {"message": "One more?"}, format="json").status_code == 201
    assert ChatCall.objects.filter(user=owner).count() == CAP + 1


# --- episode writes and the background -----------------------------------------------------


def test_an_episode_write_at_the_cap_is_stored_and_its_summary_waits_for_the_window(
    api_client, owner, session, fake, cap, django_capture_on_commit_callbacks
):
    spend(owner, CAP, minutes_ago=20)
    url = f"/api/sessions/{session.uuid}/episodes/"
    items = [{"user_input": f"Question {n}?", "response": LONG} for n in range(5)]
    with django_capture_on_commit_callbacks(execute=True):
        assert api_client.post(url, items, format="json").status_code == 201
        assert (
            api_client.post(url, {"user_input": "And then?", "response": LONG}, format="json").status_code
            == 201
        )

    assert fake.prompts == [] and not Summary.objects.filter(session=session).exists()
    state = SummarizationState.objects.get(session=session)
    assert (state.state, state.last_error) == ("idle", "")
    assert timedelta(minutes=39) < state.deferred_until - timezone.now() <= timedelta(minutes=40)
    status = api_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()
    assert (status["state"], status["pending_episodes"]) == ("idle", 6)

    # Once the window has passed, the sweep picks the session up (no write needed).
    an_hour_passes()
    assert sweep_pending() == [session.pk]
    (row,) = Summary.objects.filter(session=session)
    assert row.last_episode_id == Episode.objects.filter(session=session).latest("pk").pk
    assert list(UtilityCall.objects.filter(session=session).values_list("charged_to", flat=True)) == [
        owner.pk
    ]
    assert api_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()["pending_episodes"] == 0


def test_a_deferred_session_is_not_sent_again_until_the_cap_allows(
    owner,
    session,
    fake,
    cap,
    sent,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    spend(owner, CAP, minutes_ago=45)
    for _ in range(5):
        write(session, django_capture_on_commit_callbacks, response=LONG)
    (task,) = sent
    assert summarize_session.apply(kwargs=task[1]).get() == RunOutcome.DEFERRED.value
    assert fake.prompts == []
    state = SummarizationState.objects.get(session=session)
    assert state.state == "idle" and state.deferred_until > timezone.now()

    # Neither later writes nor the sweep send it round while the owner is capped.
    sent.clear()
    for _ in range(3):
        write(session, django_capture_on_commit_callbacks, response=LONG)
    assert sweep_pending() == []
    assert sent == []

    an_hour_passes()
    write(session, django_capture_on_commit_callbacks, response=LONG)
    assert sent == [("summaries.tasks.summarize_session", {"session_pk": session.pk, "force": False})]


def test_a_run_stops_at_the_cap_between_passes_and_leaves_the_rest_pending(
    owner, session, fake, settings, cap
):
    settings.SUMMARY_MAX_CHARS = 600  # one or two long episodes per call
    due(session, 15)
    spend(owner, CAP - 1)
    result = run_session(session_pk=session.pk, owner="task-1")
    assert (result.outcome, result.calls, len(fake.prompts)) == (RunOutcome.DEFERRED, 1, 1)
    state = SummarizationState.objects.get(session=session)
    assert state.state == "idle" and state.covered_episodes < 15

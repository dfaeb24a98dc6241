"""``/v1/chat/completions`` at the model-call cap, through the official
``openai`` package against a live server: OpenAI's 429, so the SDK raises
``RateLimitError``; nothing is written and the model is not asked."""

from __future__ import annotations

import openai
import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import ChatSession
from summaries.models import ChatCall
from tests.openai_api.conftest import chat_requests
from tests.test_model_call_cap import spend

pytestmark = pytest.mark.django_db(transaction=True)

CAP = 2


@pytest.fixture
def cap(settings) -> int:
    settings.UTILITY_CALLS_PER_USER_HOUR = CAP
    return CAP


def ask(client: openai.OpenAI, question: str, **kwargs):
    return client.chat.completions.create(
        model="fake-chat", messages=[{"role": "user", "content": question}], **kwargs
    )


def test_chat_completions_count_and_the_next_one_is_a_rate_limit_error(client, owner, model, cap):
    for n in range(CAP):
        assert ask(client, f"Question {n}?", user="ann").choices[0].message.content
    assert ChatCall.objects.filter(user=owner).count() == CAP

    with pytest.raises(openai.RateLimitError) as caught:
        ask(client, "One more?", user="ann")
    error = caught.value
    assert error.status_code == 429
    body = error.response.json()["error"]
    assert set(body) == {"message", "type", "param", "code"}
    assert (body["type"], body["param"], body["code"]) == ("requests", None, "model_call_limit_reached")
    assert f"{CAP} model calls per user per hour" in body["message"]
    assert 3590 <= int(error.response.headers["Retry-After"]) <= 3600
    assert chat_requests(model, "One more?") == []


@pytest.mark.parametrize("stream", [False, True])
def test_at_the_cap_nothing_is_written_and_the_sdk_does_not_retry_for_minutes(
    live_server, owner, model, cap, stream
):
    spend(owner, CAP, minutes_ago=50)  # the cap allows again in ten minutes
    sent = []
    client = openai.OpenAI(
        base_url=f"{live_server.url}/v1",
        api_key=Token.objects.create(user=owner).key,
        max_retries=2,  # the SDK's default: it retries a 429 unless told to wait longer than it would
        timeout=20,
        http_client=openai.DefaultHttpxClient(event_hooks={"request": [sent.append]}),
    )
    with pytest.raises(openai.RateLimitError) as caught:
        # A new session with imported history would be written for this request, were it admitted.
        client.chat.completions.create(
            model="fake-chat",
            stream=stream,
            messages=[
                {"role": "user", "content": "Earlier question?"},
                {"role": "assistant", "content": "Earlier answer."},
                {"role": "user", "content": "Now?"},
            ],
        )
    assert 590 <= int(caught.value.response.headers["Retry-After"]) <= 600
    assert len(sent) == 1
    assert not ChatSession.objects.filter(owner=owner, title="OpenAI client conversation").exists()
    assert chat_requests(model, "Now?") == []

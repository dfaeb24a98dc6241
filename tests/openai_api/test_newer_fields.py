"""The newer request fields and model aliases on /v1/chat/completions."""

from __future__ import annotations

import openai
import pytest

from sessions_app.models import Episode
from summaries.openai_api.errors import OpenAIError
from summaries.openai_api.request import parse_request
from tests.fake_model_server import reply_text
from tests.openai_api.conftest import chat_requests

NEWER = {
    "safety_identifier": "hashed-user-7",
    "prompt_cache_key": "support-bot-v2",
    "reasoning_effort": "none",
    "service_tier": "auto",
    "verbosity": "low",
    "prompt_cache_retention": "24h",
}


@pytest.fixture(autouse=True)
def chat_model(settings):
    settings.CHAT_MODEL = "fake-chat"
    settings.OPENAI_MODEL_ALIASES = {}


def body(**extra):
    return {"model": "fake-chat", "messages": [{"role": "user", "content": "Hi"}], **extra}


def test_newer_fields_are_accepted_and_safety_identifier_kept():
    request = parse_request(body(**NEWER), header_session=None)
    assert request.safety_identifier == "hashed-user-7"
    assert request.sampling == {}  # none of them reaches the model
    for effort in ("minimal", "medium", "high", "xhigh"):
        parse_request(
            body(reasoning_effort=effort, service_tier="priority", verbosity="high"), header_session=None
        )


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"service_tier": "gold"}, "service_tier"),
        ({"verbosity": 3}, "verbosity"),
        ({"safety_identifier": 12}, "safety_identifier"),
        ({"safety_identifier": "x" * 257}, "safety_identifier"),
        ({"prompt_cache_key": "a\x00b"}, "prompt_cache_key"),
        ({"prompt_cache_retention": "forever"}, "prompt_cache_retention"),
        ({"store": "no"}, "store"),
        ({"reasoning": {"effort": "low"}}, "reasoning"),  # the Responses spelling is unknown here
    ],
)
def test_malformed_or_unknown_values_name_the_field(extra, param):
    with pytest.raises(OpenAIError) as caught:
        parse_request(body(**extra), header_session=None)
    assert caught.value.status == 400 and caught.value.param == param


def test_model_aliases(settings):
    settings.OPENAI_MODEL_ALIASES = {"gpt-4o-mini": "fake-chat"}
    assert parse_request(body(model="gpt-4o-mini"), header_session=None).model == "fake-chat"
    with pytest.raises(OpenAIError) as caught:
        parse_request(body(model="gpt-5"), header_session=None)
    assert caught.value.status == 404 and caught.value.code == "model_not_found"
    settings.OPENAI_MODEL_ALIASES = {"*": "fake-chat"}
    assert parse_request(body(model="gpt-5"), header_session=None).model == "fake-chat"
    settings.OPENAI_MODEL_ALIASES = {"*": "a-model-not-served"}
    with pytest.raises(OpenAIError):
        parse_request(body(model="gpt-5"), header_session=None)


@pytest.mark.django_db(transaction=True)
def test_openai_client_sends_newer_fields_and_an_aliased_model(client, model, settings):
    settings.OPENAI_MODEL_ALIASES = {"gpt-4o-mini": "fake-chat"}
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Newer fields?"}], **NEWER
    )
    completion = raw.parse()
    assert completion.model == "fake-chat"
    assert completion.choices[0].message.content == reply_text("Newer fields?")
    sent = chat_requests(model, "Newer fields?")[-1]
    assert (
        sent["model"] == "fake-chat" and not set(NEWER) & set(sent) and not set(NEWER) & set(sent["options"])
    )
    assert Episode.objects.filter(session__uuid=raw.headers["X-Nexus-Session"]).count() == 1
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"brand_new_field": 1},
        )
    assert (
        caught.value.body["code"] == "unknown_parameter" and caught.value.body["param"] == "brand_new_field"
    )

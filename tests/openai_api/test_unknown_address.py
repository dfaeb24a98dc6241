"""The official ``openai`` client meets an address Nexus does not serve: a
404 in OpenAI's shape, so the SDK raises ``NotFoundError`` with the message
(not a bare "Error code: 404" over Django's HTML debug page), in debug too."""

from __future__ import annotations

import openai
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_an_endpoint_nexus_does_not_serve_raises_not_found(client, settings, debug):
    settings.DEBUG = debug
    with pytest.raises(openai.NotFoundError) as caught:
        client.embeddings.create(model="fake-chat", input="hello")
    error = caught.value
    assert error.status_code == 404
    assert error.message == "Error code: 404 - Invalid URL (POST /v1/embeddings)."
    assert (error.code, error.type, error.param) == ("unknown_url", "invalid_request_error", None)
    assert error.response.headers["content-type"] == "application/json"

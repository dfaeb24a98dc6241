"""An API key as the ``openai`` package sends its key: a turn stored in its
end user's session, and refused at once once revoked."""

from __future__ import annotations

import openai
import pytest

from nexus.api.keys.services import key_create, key_revoke
from sessions_app.models import Episode
from tests.openai_api.conftest import client_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_key_is_the_openai_clients_api_key(live_server, model, owner):
    key, secret = key_create(user=owner, name="openai sdk", end_user="alice")
    client = client_for(live_server, secret)
    raw = client.chat.completions.with_raw_response.create(
        model="fake-chat", messages=[{"role": "user", "content": "My kayak is red."}]
    )
    assert raw.status_code == 200
    stored = Episode.objects.select_related("session").get(session__uuid=raw.headers["X-Nexus-Session"])
    assert (stored.session.owner_id, stored.session.end_user) == (owner.pk, "alice")
    key_revoke(key=key)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()

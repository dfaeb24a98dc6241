"""When a long exchange is cut, a passage that continues one that matters
(a list after its lead-in, a sentence leaning on the last) is lifted with it."""

from __future__ import annotations

import pytest

from sessions_app.continuation import NEIGHBOUR_SHARE, continues, lift


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Run these commands on the server:", "sudo systemctl restart nginx"),
        ("- install the package", "- restart the worker"),
        ("1. Open the settings page.", "2. Turn the flag off."),
        ("The port is 8443.", "It only answers on the VPN."),
        ("We moved the database to the new host.", "but the backups still go to the old one"),
        ("```python\nimport os", "print(os.getcwd())\n```"),
    ],
)
def test_what_continues_the_passage_before(before, after):
    assert continues(before, after)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("The port is 8443.", "My sister moved to Porto last spring."),
        ("- install the package", "Next time, ask me first."),
        ("", "It works."),
    ],
)
def test_what_does_not(before, after):
    assert not continues(before, after)


def test_a_continuing_passage_gets_a_share_of_the_one_before_and_nothing_is_lowered():
    scores = [4.0, 0.0, 1.0, 0.0]
    lifted = lift(scores, [False, True, False, True])
    assert lifted == [4.0, NEIGHBOUR_SHARE * 4.0, 1.0, NEIGHBOUR_SHARE * 1.0]
    assert lift(scores, [False] * 4) == scores

"""A context never costs more than the session's whole history.

The seeds exist to save tokens: when every exchange of the session, in the
seed's "Previous conversation" layout, costs no more than the context that
would be built, the whole history is what is sent (it is complete).
"""

from __future__ import annotations

from dataclasses import dataclass

from sessions_app.models import ChatSession
from sessions_app.tokens import count_tokens
from summaries.context import sources
from summaries.context.layout import Exchange, render_prompt
from summaries.context.window import PAIR_LABEL_TOKENS

#: Tokens the estimate may err by (labels that form differently, Q100 and on).
ESTIMATE_SLACK = 8


@dataclass(frozen=True, slots=True)
class WholeHistory:
    prompt: str
    token_count: int
    exchanges: list[Exchange]


def full_history_tokens(*, session: ChatSession, question: str) -> int:
    """What the prompt would cost with every episode in full: the session's
    token counter, the labels and separator of each pair, and the question
    and the layout around them. Constant cost."""
    skeleton = render_prompt(question=question, recent=[], earlier=[], has_earlier_episodes=False)
    return (
        session.cached_total_tokens
        + session.cached_episode_count * PAIR_LABEL_TOKENS
        + count_tokens(skeleton)
    )


def whole_history_instead(
    *, session: ChatSession, question: str, than: int, estimate: int
) -> WholeHistory | None:
    """The whole history's prompt when it costs at most ``than`` tokens, else
    None. The counters' ``estimate`` (``full_history_tokens``) decides first,
    so a history that cannot fit is never read; one that may is read (no
    more than ``than`` tokens of it) and counted exactly."""
    if session.cached_episode_count == 0 or estimate > than + ESTIMATE_SLACK * session.cached_episode_count:
        return None
    exchanges = sources.whole_history(session.pk, limit=session.cached_episode_count)
    prompt = render_prompt(question=question, recent=exchanges, earlier=[], has_earlier_episodes=False)
    token_count = count_tokens(prompt)
    return WholeHistory(prompt, token_count, exchanges) if token_count <= than else None

"""The summarization prompt texts (fresh and cumulative update), fixed word for word, and how episodes are written into them.

The prompts are plain instructions sent as the user message; the model
server applies the model's own chat template.
"""

from __future__ import annotations

import re

FRESH_SUMMARY_PROMPT = (
    "Summarize the conversation below in 3-5 sentences.\n"
    "Write in third person. Do not quote directly \u2014 paraphrase only.\n"
    "Do not include greetings, sign-offs, or filler. Output only the summary text.\n"
    "\n"
    "Conversation:\n"
    "{context}"
)

UPDATE_SUMMARY_PROMPT = (
    "Update the summary below to incorporate the new exchanges.\n"
    "Write 3-5 sentences in third person. Do not quote directly \u2014 paraphrase only.\n"
    "Do not include greetings, sign-offs, or filler. Output only the updated summary text.\n"
    "\n"
    "Previous summary:\n"
    "{existing_summary}\n"
    "\n"
    "New exchanges:\n"
    "{context}"
)

USER_PREFIX = "User: "
ASSISTANT_PREFIX = "Assistant: "
EXCHANGE_SEPARATOR = "\n\n"


def format_exchange(user_input: str, response: str) -> str:
    return f"{USER_PREFIX}{user_input}\n{ASSISTANT_PREFIX}{response}"


def fresh_prompt(context: str) -> str:
    return FRESH_SUMMARY_PROMPT.format(context=context)


def update_prompt(existing_summary: str, context: str) -> str:
    return UPDATE_SUMMARY_PROMPT.format(existing_summary=existing_summary, context=context)


_EXCHANGE_RE = re.compile(
    rf"^{re.escape(USER_PREFIX)}(?P<user>.*?)\n{re.escape(ASSISTANT_PREFIX)}(?P<assistant>.*?)(?=\n\n{re.escape(USER_PREFIX)}|\Z)",
    re.S | re.M,
)


def parse_exchanges(prompt: str) -> list[tuple[str, str]]:
    """The exchanges written into a summary prompt (``format_exchange``,
    joined by ``EXCHANGE_SEPARATOR``).

    The ``offline`` backend reads them back to build its extractive digest
    from the same prompt a real model would receive.
    """
    for marker in ("\nNew exchanges:\n", "\nConversation:\n"):
        if marker in prompt:
            prompt = prompt.split(marker, 1)[1]
            break
    return [(m.group("user"), m.group("assistant")) for m in _EXCHANGE_RE.finditer(prompt)]

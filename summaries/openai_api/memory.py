"""What the model receives: the request's system/developer messages, one
system message holding Nexus's memory, then the last user message.

The memory is the context builder's prompt (``summaries.context``) without
the question it starts with and the instructions it ends with: the question
follows as its own user message, and the caller's system messages give the
instructions.
"""

from __future__ import annotations

from summaries.context import INSTRUCTIONS, QUESTION_LABEL, ContextResult
from summaries.context.layout import SECTION_SEPARATOR
from summaries.openai_api.request import ChatRequest

MEMORY_HEADER = (
    "Memory of this conversation, kept by Nexus: background for the user's next message. "
    "Stay consistent with it; do not repeat it back."
)


def memory_text(context: ContextResult, question: str) -> str:
    """The context's sections between the question and the instructions ("" when there are none)."""
    text = context.prompt
    head = f"{QUESTION_LABEL}{question}"
    text = text.removeprefix(head)
    text = text.removesuffix(INSTRUCTIONS)
    return text.strip(SECTION_SEPARATOR + " ")


def model_messages(request: ChatRequest, context: ContextResult) -> list[dict[str, str]]:
    # "developer" is OpenAI's newer name for system; local servers know only the older one.
    messages = [{"role": "system", "content": m.content} for m in request.instructions]
    memory = memory_text(context, request.question)
    if memory:
        messages.append({"role": "system", "content": f"{MEMORY_HEADER}\n\n{memory}"})
    messages.append({"role": "user", "content": request.question})
    return messages

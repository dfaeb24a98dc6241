"""An OpenAI-compatible chat-completions API that remembers.

``POST /v1/chat/completions`` takes OpenAI's request and answers in its wire
format; Nexus picks the session (``sessions``), puts its memory of the
conversation in front of the last user message (``memory``), asks the chat
model and stores the exchange as an episode (``turn``). ``GET /v1/models``
lists the one model it serves, ``CHAT_MODEL``.
"""

"""An OpenAI-compatible chat-completions and Responses API that remembers.

``POST /v1/chat/completions`` and ``POST /v1/responses`` take OpenAI's
requests and answer in its wire formats; Nexus picks the session
(``sessions``, through ``begin``), puts its memory of the conversation in
front of the last user message (``memory``), asks the chat model and stores
the exchange as an episode (``turn``). ``GET /v1/models`` lists the one model
it serves, ``CHAT_MODEL``, which other names reach through
``OPENAI_MODEL_ALIASES`` (``model_names``).
"""

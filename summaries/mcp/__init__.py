"""The MCP server: Nexus's memory as tools for agents, on the official ``mcp`` SDK.

Two transports, one set of tools: stdio (``manage.py mcp``, a desktop
agent's subprocess, acting as the API key in ``NEXUS_API_KEY``) and
streamable HTTP (``manage.py mcp --http``, the Procfile's ``mcp`` process on
``MCP_PORT``; the SDK's server is ASGI, so it runs beside the WSGI web
workers, not in them), where every request sends an API key as
``Authorization: Bearer``.

Each call acts as the key's user through the API's own authentication
(``nexus.api.authentication``: remembered per process, revoked at once), so
the tools see what the REST API shows that key: no staff permission, and
for a key bound to an end user, that end user's sessions and notes only.
Tools call the same services and validate with the same serializers as the
REST endpoints (``summaries.mcp.memory_tools``, ``summaries.mcp.note_tools``);
a new group of tools is a module of ``@tool`` functions named in
``summaries.mcp.server.TOOL_MODULES``.
"""

"""``manage.py mcp``: the MCP server over stdio, acting as the API key in
``NEXUS_API_KEY`` (a desktop agent starts it as a subprocess);
``manage.py mcp --http``: over streamable HTTP on ``MCP_HOST``:``MCP_PORT``,
each request sending an API key as ``Authorization: Bearer``."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework import exceptions


class Command(BaseCommand):
    help = "Serve Nexus's memory to agents over MCP: stdio (NEXUS_API_KEY), or --http on MCP_PORT."
    requires_system_checks: list[str] = []  # stdout is the protocol channel over stdio

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--http", action="store_true", help="Streamable HTTP on MCP_HOST:MCP_PORT.")

    def handle(self, *args: Any, http: bool, **options: Any) -> None:
        from summaries.mcp.server import build_server, check_key, http_app

        if http:
            import uvicorn

            uvicorn.run(http_app(), host=settings.MCP_HOST, port=settings.MCP_PORT, log_level="warning")
            return
        key = os.environ.get("NEXUS_API_KEY", "").strip()
        try:
            user = check_key(key)
        except exceptions.APIException as err:
            raise CommandError(f"NEXUS_API_KEY: {err.detail}") from None
        self.stderr.write(f"MCP over stdio as {user.get_username()}'s key.")
        build_server(fixed_key=key).run("stdio")

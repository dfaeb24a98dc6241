from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Chat sessions"

    def ready(self) -> None:
        # Connects the receivers that drop remembered API tokens when a token
        # or its user changes, and those that count failed logins.
        from nexus import login_limit
        from nexus.api.authentication import connect_signals

        connect_signals()
        login_limit.connect_signals()

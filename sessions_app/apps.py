from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Chat sessions"

    def ready(self) -> None:
        # Connects the receivers that drop remembered API tokens when a token
        # or its user changes, those that count failed logins, and those that
        # bound a request's statements.
        from nexus import login_limit, statement_timeout
        from nexus.api.authentication import connect_signals
        from sessions_app.semantic.threads import one_blas_thread

        connect_signals()
        login_limit.connect_signals()
        statement_timeout.connect_signals()
        one_blas_thread()

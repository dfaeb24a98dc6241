from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "nexus.api.keys"
    label = "api_keys"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "API keys"

    def ready(self) -> None:
        from nexus.api.keys import revocation

        revocation.connect_signals()

from django.apps import AppConfig


class SharedStoreConfig(AppConfig):
    name = "nexus.shared_store"
    label = "shared_store"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Shared store"

from django.apps import AppConfig


class SummariesConfig(AppConfig):
    name = "summaries"
    verbose_name = "Summaries"

    def ready(self) -> None:
        # Imported here: models (and receivers that import them) load only
        # once the app registry is ready.
        from django.db.models.signals import post_save

        from sessions_app.models import ChatSession, Episode
        from sessions_app.signals import episodes_bulk_created, episodes_deleted
        from summaries.models import Summary
        from summaries.signals import (
            episode_saved,
            episodes_bulk_created_received,
            episodes_deleted_received,
            summary_saved,
        )

        post_save.connect(episode_saved, sender=Episode, dispatch_uid="summaries.episode_saved")
        post_save.connect(summary_saved, sender=Summary, dispatch_uid="summaries.summary_saved")
        episodes_bulk_created.connect(
            episodes_bulk_created_received,
            sender=ChatSession,
            dispatch_uid="summaries.episodes_bulk_created_received",
        )
        # An offline reply's quotes are kept as references and rendered when read.
        from sessions_app.shown_metadata import register_renderer
        from summaries.offline_memory import METADATA_KEY
        from summaries.offline_memory_shown import show_offline_memory

        register_renderer(METADATA_KEY, show_offline_memory)
        episodes_deleted.connect(
            episodes_deleted_received, sender=ChatSession, dispatch_uid="summaries.episodes_deleted_received"
        )

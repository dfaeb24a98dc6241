from django.apps import AppConfig


class SummariesConfig(AppConfig):
    name = "summaries"
    verbose_name = "Summaries"

    def ready(self) -> None:
        # Imported here: models (and receivers that import them) load only
        # once the app registry is ready.
        from django.db.models.signals import post_save

        from sessions_app.models import Episode
        from summaries.signals import episode_saved

        post_save.connect(episode_saved, sender=Episode, dispatch_uid="summaries.episode_saved")

"""The runtimes app: the store, the faces on it, and the controller."""

from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    name = "runtimes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runtimes.storage import compaction, events
        from runtimes.watch import nudge

        # Every process that writes tells the others, hub or no hub (see runtimes.watch.nudge).
        events.subscribe(nudge.published)
        # And keeps the event log bounded, even where no hub runs (a lone controller, a script).
        events.subscribe(compaction.after_commit)

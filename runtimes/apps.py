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
        # And keeps the event log bounded: this hook is compaction's one owner (the hub never
        # compacts), so it runs wherever writes happen, hub or no hub.
        events.subscribe(compaction.after_commit)

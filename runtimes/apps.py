"""The runtimes app: the store, the faces on it, and the controller."""

from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    name = "runtimes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from runtimes.accounts import revocation
        from runtimes.controller import foresight
        from runtimes.registry.trainingruntime import images
        from runtimes.storage import compaction, events
        from runtimes.watch import nudge

        # Every process that writes tells the others, hub or no hub (see runtimes.watch.nudge).
        events.subscribe(nudge.published)
        # And keeps the event log bounded: this hook is compaction's one owner (the hub never
        # compacts), so it runs wherever writes happen, hub or no hub.
        events.subscribe(compaction.after_commit)
        # Revoked tokens, removed role bindings and deactivated users reach open streams, in
        # this process and, through the nudges, in every other (runtimes.watch.guard).
        revocation.connect()
        revocation.listen(nudge.access_changed)
        # Admission refuses a managed runtime the controller would certainly find unsigned.
        images.register_unsigned_check(foresight.unsigned_in_layout)

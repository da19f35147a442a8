"""Django finds an app's models here; they live in `runtimes.storage.models`."""

from runtimes.storage.models import (
    ApiToken,
    Event,
    Membership,
    Project,
    RevisionCounter,
    Role,
    StoredObject,
)

__all__ = ["ApiToken", "Event", "Membership", "Project", "RevisionCounter", "Role", "StoredObject"]

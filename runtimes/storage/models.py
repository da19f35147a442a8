"""SQL tables behind the store, projects and access.

The store keeps every object of every kind in one table (`StoredObject`) and appends one
`Event` per write, in the same transaction; the event's revision is the global resourceVersion.
`RevisionCounter` is a single row that every writer locks and bumps inside its transaction, so
revisions commit in the order they are handed out (on PostgreSQL as on SQLite).
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection, models
from django.db.models import Q


class RevisionCounter(models.Model):
    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    value = models.BigIntegerField(default=0)
    # The oldest revision the event log still holds; older ones answer 410 Expired.
    compacted = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"revision {self.value}"


def read_counter() -> tuple[int, int]:
    """The counter row's (value, compacted), (0, 0) before the first write. A plain statement:
    every consistent list and watch set-up reads it, and building the ORM's query cost several
    times the read."""
    table = RevisionCounter._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT value, compacted FROM {table} WHERE id = 1")  # noqa: S608
        row = cursor.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


class StoredObject(models.Model):
    resource = models.CharField(max_length=100)  # "trainingruntimes.nodus.dev"
    namespace = models.CharField(max_length=63, blank=True)  # "" for cluster-scoped kinds
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=36)
    revision = models.BigIntegerField(db_index=True)
    body = models.TextField()  # the whole object as JSON, resourceVersion included

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["resource", "namespace", "name"], name="object_key")
        ]

    def __str__(self) -> str:
        return f"{self.resource} {self.namespace}/{self.name}@{self.revision}"


class Event(models.Model):
    revision = models.BigIntegerField(primary_key=True)
    resource = models.CharField(max_length=100)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=253)
    type = models.CharField(max_length=8)  # ADDED | MODIFIED | DELETED
    body = models.TextField()  # the object after the write (the last state for DELETED)
    prev_body = models.TextField(
        blank=True
    )  # before the write ("" for ADDED); selector transitions
    created_at = models.DateTimeField(auto_now_add=True)
    # Who made the write (storage.actor): a username, "" when no caller was known.
    actor = models.CharField(max_length=150, blank=True, default="", db_default="")

    class Meta:
        indexes = [
            models.Index(fields=["resource", "revision"], name="event_resource_rev"),
            # One object's history (the console's History tab), newest first.
            models.Index(
                fields=["resource", "namespace", "name", "revision"], name="event_object_rev"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.revision} {self.type} {self.resource} {self.namespace}/{self.name}"


class Project(models.Model):
    name = models.CharField(max_length=63, primary_key=True)
    display_name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"


class Membership(models.Model):
    """A role binding: a user's, or a group's (an OIDC provider's group, prefix included)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        null=True,
        blank=True,
    )
    group = models.CharField(max_length=150, blank=True, default="")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_role"),
            models.UniqueConstraint(
                fields=["project", "group"], condition=~Q(group=""), name="one_group_role"
            ),
            # Exactly one subject: a user or a group.
            models.CheckConstraint(
                condition=(Q(user__isnull=False) & Q(group=""))
                | (Q(user__isnull=True) & ~Q(group="")),
                name="one_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} is {self.role} of {self.project_id}"

    @property
    def subject(self) -> str:
        return f"group:{self.group}" if self.group else str(self.user)


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)  # sha256 of the token; never the token
    prefix = models.CharField(max_length=16)  # shown in lists so people can tell tokens apart
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class AccessEpoch(models.Model):
    """A single row whose value moves, in the transaction of the change, whenever access may
    have been taken away (`runtimes.accounts.revocation`): every process reads it once a second,
    so a change made by any process (a CLI, another worker) reaches every open stream."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"access epoch {self.value}"

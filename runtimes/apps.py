"""The runtimes app: the store, the faces on it, and the controller."""

from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    name = "runtimes"
    default_auto_field = "django.db.models.BigAutoField"

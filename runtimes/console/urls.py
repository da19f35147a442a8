"""Console URLs (pages and htmx partials)."""

from __future__ import annotations

from django.urls import path

from runtimes.console import views

urlpatterns = [
    path("", views.catalog, name="catalog"),
]

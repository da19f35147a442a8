"""Root URLs: the Kubernetes-compatible API, the console, the docs and Django admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("runtimes.api.urls")),
    path("admin/", admin.site.urls),
    path("", include("runtimes.console.urls")),
]

handler404 = "runtimes.console.errors.not_found"
handler500 = "runtimes.console.errors.server_error"

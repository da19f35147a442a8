"""core/v1 Namespaces: the projects, read-only through the API."""

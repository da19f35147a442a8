"""The Accelerator kind: the catalog's variants, read-only through the API."""

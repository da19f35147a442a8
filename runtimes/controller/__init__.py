"""The verification controller: image references, registries, layouts and cosign.

Pure library code (no Django): ``reference`` parses pinned references; ``oci`` (with
``oci_auth``) talks to OCI distribution registries and ``layout`` to image-layout directories,
both ``images.ImageSource``; ``cosign`` signs and verifies; ``inspection.inspect`` is what the
reconcile loop calls; ``errors`` holds the typed failures whose names are condition reasons.
"""

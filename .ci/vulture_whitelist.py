"""Names vulture reports as unused (80% confidence) that a framework's signature requires.

Each is a parameter the caller passes positionally or by keyword, so it stays even though our
code ignores it. `make lint` runs vulture with this file; a new entry needs its reason here.
"""

# ruff: noqa

# DRF's BaseRenderer.render(data, accepted_media_type=None, renderer_context=None).
accepted_media_type
renderer_context
# DRF's BaseContentNegotiation.select_renderer(request, renderers, format_suffix=None).
format_suffix
# Channels' WebsocketConsumer.receive(text_data=None, bytes_data=None), called by keyword.
bytes_data
# The context-manager protocol: __exit__(exc_type, exc, tb).
tb
# Django's RunPython calls a migration function as fn(apps, schema_editor).
schema_editor
# django-axes calls AXES_LOCKOUT_CALLABLE(request, original_response, credentials).
original_response

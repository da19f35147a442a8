"""Settings for the watch tests' own daphne: a small event log, fast bookmarks, short watches.

Everything else is the project's settings, read from the same environment.
"""

from nodus_console.settings import *  # noqa: F403

NODUS_EVENT_WINDOW = 60
NODUS_WATCH_BOOKMARK_SECONDS = 1.0
# Watches without timeoutSeconds end after 2-3 s, so clients must resume (and may not miss).
NODUS_WATCH_TIMEOUT_RANGE = (2.0, 3.0)
# A real host list, so the websocket origin check has something to refuse.
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

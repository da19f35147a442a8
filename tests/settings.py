"""Test settings: the project's settings over a throwaway data dir, without the controller thread.

Set before the project settings are imported, so no test ever touches a developer's `.data`.
"""

import os
import tempfile

os.environ.setdefault("NODUS_DATA_DIR", tempfile.mkdtemp(prefix="nodus-test-"))
os.environ.setdefault("NODUS_EMBEDDED_CONTROLLER", "0")

from nodus_console.settings import *  # noqa: F403

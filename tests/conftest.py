"""Test-wide settings: Ray must bind 127.0.0.1 only, which it decides when first imported."""

import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

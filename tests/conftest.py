"""Test-wide settings. Nothing here keeps Ray on loopback: rafka does that itself, as for users."""

import os

os.environ.setdefault("RAY_DEDUP_LOGS", "0")

"""Set-up shared by every actor process: one log format for all of rafka's actors."""

from __future__ import annotations

import logging

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def configure_actor_logging() -> None:
    """Log INFO and above in the actor's process, in the one format the cluster's logs use."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)

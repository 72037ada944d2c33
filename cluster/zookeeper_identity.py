"""A cluster's ZooKeeper identity, kept in the data directory of ``rafka up`` or ``LocalCluster``.

With ``zookeeper_set_acl`` and no ``zookeeper_digest_credentials`` given, the first start makes a
random identity and writes it to ``<data_dir>/zookeeper-credentials`` with mode 0600; every later
start on that directory reads it back, so the brokers of a restarted cluster can still write the
znodes their ACLs give to that identity. A directory holding an identity keeps ``zookeeper_set_acl``
on unless the broker config turns it off. The identity never goes into ``rafka-cluster.json``,
which anyone on the machine may read.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rafka.actors.broker.config import BrokerConfig
from rafka.cluster.secret_file import create_secret, read_secret

IDENTITY_FILE = "zookeeper-credentials"
USERNAME = "rafka"


def _given(overrides: Mapping[str, Any], name: str) -> bool:
    """Whether the broker config names the setting, in Kafka's spelling or snake_case."""
    return any(key.replace(".", "_") == name for key in overrides)


def read_identity(data_dir: Path) -> str | None:
    """The identity stored in ``data_dir`` (``user:password``), or None if there is none; a file
    that others than its owner may read, or an empty one, is refused (``SecretFileError``)."""
    return read_secret(data_dir / IDENTITY_FILE)


def create_identity(data_dir: Path) -> str:
    """Store a new random identity in ``data_dir`` (mode 0600); the one already there if another
    start made it first."""
    create_secret(data_dir / IDENTITY_FILE, f"{USERNAME}:{secrets.token_urlsafe(32)}")
    stored = read_identity(data_dir)
    assert stored is not None, "the identity file was just created"
    return stored


def identity_config(data_dir: Path, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The ZooKeeper security settings to add to ``overrides`` (a cluster's broker config) for a
    cluster started from ``data_dir``: its stored or new identity, and ``zookeeper_set_acl`` on
    when the directory holds one; {} when the broker config settles both itself."""
    config = BrokerConfig.from_dict(overrides)
    if config.zookeeper_digest_credentials:
        return {}
    stored = read_identity(data_dir)
    if stored is None and not config.zookeeper_set_acl:
        return {}
    added: dict[str, Any] = {"zookeeper_digest_credentials": stored or create_identity(data_dir)}
    if not _given(overrides, "zookeeper_set_acl"):
        added["zookeeper_set_acl"] = True
    return added

"""Config overrides in ZooKeeper and the notifications that announce their changes, as Kafka's
AdminZkClient and ZkNodeChangeNotificationListener keep them.

An entity is named by its path below ``/config``: ``topics/<t>``, ``brokers/<id>``,
``brokers/<default>``, ``users/<sanitized name>``, ``clients/<sanitized client id>`` or
``users/<sanitized name>/clients/<sanitized client id>`` (``<default>`` for either name: the
default). Every write replaces the entity's override set and creates a sequential
``/config/changes/config_change_<seq>`` naming it, in one transaction, so no broker can miss a
change; brokers remember the last sequence number they processed and re-read the entities named
after it. Notifications older than 15 minutes are purged, as Kafka does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import quote, unquote_plus

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.actors.zk import data as zd
from rafka.actors.zk.client import ZkClient
from rafka.protocol.configs import ConfigResource, ConfigResourceType
from rafka.protocol.errors import KafkaTimeoutError, UnknownTopicOrPartitionError

NOTIFICATION_MAX_AGE_MS = 15 * 60 * 1000
WRITE_ATTEMPTS = 10


def entity_path(resource: ConfigResource) -> str:
    """The ``/config`` path of a resource's overrides (the empty broker name is the default)."""
    if resource.resource_type is ConfigResourceType.TOPIC:
        return f"topics/{resource.name}"
    return f"brokers/{resource.name or zd.DEFAULT_BROKER_ENTITY}"


def sanitize(name: str) -> str:
    """A user name or client id as one znode name, as Kafka's Sanitizer writes it (URL-encoded, a
    space as ``%20``), so that any name, one with a ``/`` included, is one znode and Kafka's
    tools find it where Kafka puts it."""
    # Java's URLEncoder also encodes "~", which Python's quote leaves alone.
    return quote(name, safe="").replace("~", "%7E")


def user_entity(user: str) -> str:
    """The entity of a user's SCRAM credentials and quotas: ``users/<sanitized name>``."""
    return f"users/{sanitize(user)}"


def entity_user(name: str) -> str:
    """The user name or client id whose sanitized form is ``name`` (a child of
    ``/config/users`` or ``/config/clients``)."""
    return unquote_plus(name)


def _sequence(child: str) -> int:
    return int(child[len(zd.CONFIG_CHANGE_PREFIX) :])


class ConfigStore:
    """Reads and writes config overrides and change notifications over one ZooKeeper session."""

    def __init__(self, client: ZkClient) -> None:
        self.zk = client.zk
        self.acl = client.acl

    def read(self, entity: str) -> dict[str, str]:
        """An entity's overrides ({} if it has none)."""
        try:
            data = self.zk.get(zd.entity_config_path(entity))[0]
        except NoNodeError:
            return {}
        # A user's znode created only as the parent of its clients' quotas holds no data.
        return zd.decode_topic_config(data) if data else {}

    def children(self, entity: str) -> list[str]:
        """The names below an entity path (``users``, ``users/<name>/clients``); [] if none."""
        try:
            return list(self.zk.get_children(zd.entity_config_path(entity)))
        except NoNodeError:
            return []

    def write(self, entity: str, config: dict[str, str]) -> None:
        """Replace an entity's overrides and announce the change, in one transaction; a topic must
        exist (UNKNOWN_TOPIC_OR_PARTITION otherwise)."""
        path = zd.entity_config_path(entity)
        kind, _, name = entity.partition("/")
        parent = path.rsplit("/", 1)[0]
        if kind != "topics" and self.zk.exists(parent) is None:
            # /config/clients and a user's clients/ znode exist once a quota needs them, as
            # Kafka creates them (empty, a user's own config aside).
            self.zk.ensure_path(parent, acl=self.acl(parent))
        for _ in range(WRITE_ATTEMPTS):
            stat = self.zk.exists(path)
            transaction = self.zk.transaction()
            if kind == "topics":
                transaction.check(zd.topic_path(name), -1)
            if stat is None:
                # Broker overrides lie under a sensitive path: never world-readable.
                transaction.create(path, zd.encode_topic_config(config), acl=self.acl(path))
            else:
                transaction.set_data(path, zd.encode_topic_config(config), version=stat.version)
            transaction.create(
                f"{zd.CONFIG_CHANGES}/{zd.CONFIG_CHANGE_PREFIX}",
                zd.encode_config_change(entity),
                sequence=True,
            )
            results = transaction.commit()
            if not any(isinstance(r, Exception) for r in results):
                return
            if kind == "topics" and isinstance(results[0], NoNodeError):
                raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            if not any(isinstance(r, (BadVersionError, NodeExistsError)) for r in results):
                raise next(r for r in results if isinstance(r, Exception))
            # Another writer changed the znode between our read and commit: try again.
        raise KafkaTimeoutError(f"config of {entity} kept changing under {WRITE_ATTEMPTS} writes")

    def latest_change(self) -> int:
        """The sequence number of the newest notification (-1 if none)."""
        children = self.zk.get_children(zd.CONFIG_CHANGES)
        return max((_sequence(c) for c in children), default=-1)

    def changes_after(
        self, sequence: int, watch: Callable[[object], None] | None = None
    ) -> list[tuple[int, str]]:
        """(sequence, entity path) of each notification newer than ``sequence``, oldest first,
        leaving ``watch`` on the next change; notifications past their age are purged."""
        children = sorted(self.zk.get_children(zd.CONFIG_CHANGES, watch=watch), key=_sequence)
        now = time.time() * 1000
        found = []
        for child in children:
            path = f"{zd.CONFIG_CHANGES}/{child}"
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                continue
            if _sequence(child) > sequence:
                found.append((_sequence(child), zd.decode_config_change(data)))
            elif now - stat.ctime > NOTIFICATION_MAX_AGE_MS:
                try:
                    self.zk.delete(path)
                except NoNodeError:
                    pass
        return found

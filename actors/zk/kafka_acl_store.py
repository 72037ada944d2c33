"""Kafka ACLs in ZooKeeper, where Kafka's AclAuthorizer keeps them, and the notifications that
tell every broker which resource's ACLs changed.

    /kafka-acl/<Type>/<name>                              LITERAL ACLs of one resource pattern
    /kafka-acl-extended/prefixed/<Type>/<name>            PREFIXED ones
        {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow",
                                 "operation": "Read", "host": "*"}]}
    /kafka-acl-changes/acl_changes_<seq>                  "Topic:LITERAL:orders"
    /kafka-acl-extended-changes/acl_changes_<seq>         {"version": 1, "resourceType": "Topic",
                                                           "name": "orders-",
                                                           "patternType": "PREFIXED"}

A change rewrites one resource pattern's znode (compare-and-set on its version, retried when
another writer got there first) and adds the notification in the same transaction, so no broker
misses it; notifications older than 15 minutes are purged, as Kafka does. Blocking kazoo calls:
an asyncio actor runs these in a worker thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from rafka.actors.zk.client import ZkClient
from rafka.actors.zk.config_store import NOTIFICATION_MAX_AGE_MS
from rafka.protocol.errors import KafkaTimeoutError
from rafka.security.acl import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
PREFIXED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
PATHS = (LITERAL_ROOT, PREFIXED_ROOT, LITERAL_CHANGES, PREFIXED_CHANGES)
"""The persistent znodes of the ACL store."""
WRITE_ATTEMPTS = 10


def pattern_path(pattern: ResourcePattern) -> str:
    """The znode of a resource pattern's ACLs."""
    root = (
        PREFIXED_ROOT if pattern.pattern_type is ACLResourcePatternType.PREFIXED else LITERAL_ROOT
    )
    return f"{root}/{pattern.resource_type.zk_name}/{pattern.resource_name}"


def encode_acls(acls: Iterable[ACL]) -> bytes:
    """A pattern znode's data, in Kafka's JSON."""
    entries = [
        {
            "principal": acl.principal,
            "permissionType": acl.permission_type.name.capitalize(),
            "operation": acl.operation.zk_name,
            "host": acl.host,
        }
        for acl in acls
    ]
    return json.dumps({"version": 1, "acls": entries}, separators=(",", ":")).encode()


def decode_acls(pattern: ResourcePattern, data: bytes) -> set[ACL]:
    """The ACLs of a pattern znode's data."""
    entries: list[dict[str, Any]] = json.loads(data)["acls"] if data else []
    return {
        ACL(
            entry["principal"],
            entry["host"],
            ACLOperation.from_zk_name(entry["operation"]),
            ACLPermissionType[entry["permissionType"].upper()],
            pattern,
        )
        for entry in entries
    }


def encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    """The change notification's folder and data for a pattern, as Kafka writes them."""
    if pattern.pattern_type is ACLResourcePatternType.PREFIXED:
        data = {
            "version": 1,
            "resourceType": pattern.resource_type.zk_name,
            "name": pattern.resource_name,
            "patternType": "PREFIXED",
        }
        return PREFIXED_CHANGES, json.dumps(data, separators=(",", ":")).encode()
    text = f"{pattern.resource_type.zk_name}:LITERAL:{pattern.resource_name}"
    return LITERAL_CHANGES, text.encode()


def decode_change(folder: str, data: bytes) -> ResourcePattern:
    """The resource pattern a change notification names."""
    if folder == PREFIXED_CHANGES:
        fields = json.loads(data)
        return ResourcePattern(
            ResourceType.from_zk_name(fields["resourceType"]),
            fields["name"],
            ACLResourcePatternType[fields["patternType"]],
        )
    kind, _, rest = data.decode().partition(":")
    pattern_type, colon, name = rest.partition(":")
    if not colon or pattern_type not in ("LITERAL", "PREFIXED"):
        name, pattern_type = rest, "LITERAL"  # Kafka's pre-2.0 form: Type:name
    return ResourcePattern(
        ResourceType.from_zk_name(kind), name, ACLResourcePatternType[pattern_type]
    )


class KafkaAclStore:
    """Reads and changes the ACLs in ZooKeeper over one session."""

    def __init__(self, client: ZkClient) -> None:
        self.zk = client.zk
        self.acl = client.acl
        for path in PATHS:
            self.zk.ensure_path(path, acl=self.acl(path))

    def read(self, pattern: ResourcePattern) -> set[ACL]:
        """A pattern's ACLs (none if it has no znode)."""
        try:
            return decode_acls(pattern, self.zk.get(pattern_path(pattern))[0])
        except NoNodeError:
            return set()

    def read_all(self) -> set[ACL]:
        """Every ACL of the cluster."""
        found: set[ACL] = set()
        for root, pattern_type in (
            (LITERAL_ROOT, ACLResourcePatternType.LITERAL),
            (PREFIXED_ROOT, ACLResourcePatternType.PREFIXED),
        ):
            for kind in self._children(root):
                if kind == "prefixed" and root == LITERAL_ROOT:
                    continue
                try:
                    resource_type = ResourceType.from_zk_name(kind)
                except ValueError:
                    continue
                for name in self._children(f"{root}/{kind}"):
                    found |= self.read(ResourcePattern(resource_type, name, pattern_type))
        return found

    def change(self, pattern: ResourcePattern, update: Callable[[set[ACL]], set[ACL]]) -> set[ACL]:
        """Replace a pattern's ACLs with ``update(current)`` and announce it, atomically; the
        ACLs written. A pattern left with none loses its znode."""
        path = pattern_path(pattern)
        folder, notification = encode_change(pattern)
        for _ in range(WRITE_ATTEMPTS):
            try:
                data, stat = self.zk.get(path)
                current, version = decode_acls(pattern, data), stat.version
            except NoNodeError:
                current, version = set(), -1
            wanted = update(set(current))
            if wanted == current:
                return wanted
            transaction = self.zk.transaction()
            if version < 0:
                parent = path.rsplit("/", 1)[0]
                self.zk.ensure_path(parent, acl=self.acl(parent))
                transaction.create(path, encode_acls(wanted), acl=self.acl(path))
            elif wanted:
                transaction.set_data(path, encode_acls(wanted), version=version)
            else:
                transaction.delete(path, version=version)
            transaction.create(f"{folder}/{CHANGE_PREFIX}", notification, sequence=True)
            results = transaction.commit()
            if not any(isinstance(r, Exception) for r in results):
                return wanted
            if not any(
                isinstance(r, (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError))
                for r in results
            ):
                raise next(r for r in results if isinstance(r, Exception))
        raise KafkaTimeoutError(f"ACLs of {path} kept changing under {WRITE_ATTEMPTS} writes")

    def changes_after(
        self, seen: dict[str, int], watch: Callable[[Any], None] | None = None
    ) -> list[ResourcePattern]:
        """The patterns named by notifications newer than ``seen`` (the last sequence number
        taken from each folder, updated in place), oldest first, leaving ``watch`` on both
        folders."""
        changed = []
        now_ms = time.time() * 1000
        for folder in (LITERAL_CHANGES, PREFIXED_CHANGES):
            children = self.zk.get_children(folder, watch=watch)
            for child in sorted(children, key=_sequence):
                sequence, path = _sequence(child), f"{folder}/{child}"
                try:
                    data, stat = self.zk.get(path)
                except NoNodeError:
                    continue
                if sequence > seen.get(folder, -1):
                    seen[folder] = sequence
                    changed.append(decode_change(folder, data))
                elif now_ms - stat.ctime > NOTIFICATION_MAX_AGE_MS:
                    self._purge(path)
        return changed

    def _purge(self, path: str) -> None:
        """Delete a notification every broker has had time to take, as Kafka purges them."""
        try:
            self.zk.delete(path)
        except NoNodeError:
            pass

    def latest_changes(self) -> dict[str, int]:
        """The newest notification's sequence number in each folder (-1 if none)."""
        return {
            folder: max((_sequence(c) for c in self.zk.get_children(folder)), default=-1)
            for folder in (LITERAL_CHANGES, PREFIXED_CHANGES)
        }

    def _children(self, path: str) -> list[str]:
        try:
            return list(self.zk.get_children(path))
        except NoNodeError:
            return []


def _sequence(child: str) -> int:
    return int(child[len(CHANGE_PREFIX) :])

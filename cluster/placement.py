"""Which Ray node each broker of ``rafka up`` runs on, and where its logs go: a decision kept apart
from Ray.

Kafka runs one broker per machine, and a broker's id lives with its log directory: a broker that
comes back must come back to the disk that holds its logs. ``rafka up`` asks every live Ray node
(``NodeDisk``) for its data directory and for the ``broker-<id>`` directories already in it. A
node's data directory is ``RAFKA_DATA_DIR`` in the environment its ``ray start`` ran with (so each
machine, or each node of a one-machine test cluster, can name its own disk), else ``rafka up
--data-dir``. ``place`` then decides:

1. A broker whose directory a node's disk holds goes back to a node of that disk, the one with the
   fewest brokers so far (nodes that share a disk, the same address and data directory, all see
   it). Broker ids therefore stay with their machines across restarts, whatever order Ray lists
   the nodes in.
2. Every other broker goes to the node with the fewest brokers so far, nodes in the order given
   (the head first): one broker per node while there are enough nodes, on a fresh cluster broker 0
   on the head and broker ``i`` on the ``i``-th node.

A broker whose directory is on no live node starts empty on a new node, as a Kafka broker whose disk
was replaced does, and its replicas catch up from the other replicas.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

DATA_DIR_VARIABLE = "RAFKA_DATA_DIR"
"""The variable in a Ray node's environment (set for ``ray start``) naming its data directory."""

BROKER_DIR = re.compile(r"broker-(\d+)")
"""A broker's log directory inside a data directory: ``broker-<id>``."""


@dataclass(frozen=True)
class NodeDisk:
    """A live Ray node as placement sees it: where its brokers' logs go, and which are there."""

    node_id: str
    address: str
    """The node's IP address: nodes on one machine with one data directory share a disk."""
    data_dir: str
    broker_ids: tuple[int, ...] = ()
    """Brokers whose log directory is already in ``data_dir`` on this node."""

    @property
    def disk(self) -> tuple[str, str]:
        """What identifies the disk the node writes to."""
        return self.address, self.data_dir


@dataclass(frozen=True)
class BrokerPlacement:
    """Where one broker runs and writes its logs."""

    broker_id: int
    node_id: str
    log_dir: str


def broker_log_dir(data_dir: str, broker_id: int) -> str:
    """Broker ``broker_id``'s log directory inside ``data_dir``."""
    return str(PurePath(data_dir) / f"broker-{broker_id}")


def node_data_dir(default: str, environ: Mapping[str, str] = os.environ) -> str:
    """This node's data directory: ``RAFKA_DATA_DIR`` when its Ray was started with it, else
    ``default`` (``rafka up --data-dir``)."""
    return environ.get(DATA_DIR_VARIABLE) or default


def brokers_in(data_dir: Path) -> tuple[int, ...]:
    """The ids of the broker directories in ``data_dir`` (none when it does not exist yet)."""
    if not data_dir.is_dir():
        return ()
    found = (BROKER_DIR.fullmatch(entry.name) for entry in data_dir.iterdir() if entry.is_dir())
    return tuple(sorted(int(match[1]) for match in found if match))


def place(nodes: Sequence[NodeDisk], count: int) -> list[BrokerPlacement]:
    """Brokers ``0 .. count-1`` placed on ``nodes`` (listed head first), as the module describes."""
    if not nodes:
        raise ValueError("no live Ray node to place brokers on")
    load = {node.node_id: 0 for node in nodes}
    chosen: dict[int, NodeDisk] = {}

    def take(candidates: Sequence[NodeDisk]) -> NodeDisk:
        # min() keeps the first of equally loaded nodes, so the order given breaks ties.
        node = min(candidates, key=lambda n: load[n.node_id])
        load[node.node_id] += 1
        return node

    for broker_id in range(count):
        holders = [node for node in nodes if broker_id in node.broker_ids]
        if holders:
            # Two disks holding the same broker's directory: the first node's disk wins.
            chosen[broker_id] = take([n for n in holders if n.disk == holders[0].disk])
    for broker_id in range(count):
        if broker_id not in chosen:
            chosen[broker_id] = take(nodes)
    return [
        BrokerPlacement(b, chosen[b].node_id, broker_log_dir(chosen[b].data_dir, b))
        for b in range(count)
    ]

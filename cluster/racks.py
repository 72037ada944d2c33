"""Which rack each broker is on (Kafka's ``broker.rack``), as a local cluster is told or as a Ray
node says.

On a multi-node Ray cluster ``rafka up`` gives each broker the rack of the Ray node it runs on. A
node names its rack with the label ``rafka.rack``
(``ray start --labels='{"rafka.rack": "us-east-1a"}'``) or with a custom resource named
``rack:<name>`` (``ray start --resources='{"rack:us-east-1a": 1}'``); the label wins if a node has
both. A node with neither has no rack, and then (as in Kafka) topics can only be created
rack-unaware unless no broker has a rack. An explicit ``broker_rack`` in the broker config
overrides the node's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

RACK_LABEL = "rafka.rack"
RACK_RESOURCE_PREFIX = "rack:"

Racks = Mapping[int, str] | Sequence[str]
"""Racks given to a local cluster: broker id -> rack, or a list whose item i is broker i's rack."""


def node_rack(node: Mapping[str, Any]) -> str | None:
    """The rack one Ray node (an item of ``ray.nodes()``) declares, or None."""
    label = (node.get("Labels") or {}).get(RACK_LABEL)
    if label:
        return str(label)
    resources = node.get("Resources") or {}
    named = sorted(
        k[len(RACK_RESOURCE_PREFIX) :] for k in resources if k.startswith(RACK_RESOURCE_PREFIX)
    )
    return named[0] if named else None


def racks_by_node(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node id -> rack for every node that declares one."""
    found = {str(node["NodeID"]): node_rack(node) for node in nodes}
    return {node_id: rack for node_id, rack in found.items() if rack is not None}


def broker_rack(racks: Racks | None, broker_id: int) -> str | None:
    """Broker ``broker_id``'s rack among ``racks`` (None: not given one)."""
    if racks is None:
        return None
    if isinstance(racks, Mapping):
        return racks.get(broker_id)
    return racks[broker_id] if broker_id < len(racks) else None

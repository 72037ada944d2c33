"""Control requests addressed to one incarnation of a broker (KIP-380's broker epoch)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    addressed_to_earlier_incarnation,
)

REQUESTS = {
    "LeaderAndIsr": LeaderAndIsrRequest(1, 2, ()),
    "UpdateMetadata": UpdateMetadataRequest(1, 2, (), ()),
    "StopReplica": StopReplicaRequest(1, 2, ()),
}


@pytest.mark.parametrize("request_", REQUESTS.values(), ids=REQUESTS)
@pytest.mark.parametrize(
    ("addressed_epoch", "current_epoch", "stale"),
    [
        (-1, 500, False),  # unchecked
        (500, 500, False),  # this incarnation
        (499, 500, True),  # sent before the broker registered again
        (501, 500, False),  # the broker has not yet noted its newer registration
    ],
)
def test_a_request_for_an_earlier_registration_is_stale(
    request_: LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest,
    addressed_epoch: int,
    current_epoch: int,
    stale: bool,
) -> None:
    addressed = replace(request_, broker_epoch=addressed_epoch)
    assert addressed_to_earlier_incarnation(addressed, current_epoch) is stale

"""Tests for rafka.protocol.wire.group_apis: the consumer group APIs encode Kafka's bytes."""

from __future__ import annotations

import pytest

from rafka.protocol.wire.group_apis import (
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from rafka.protocol.wire.primitives import WireFormatError


def test_heartbeat_v0_is_group_generation_and_member() -> None:
    body = {"group_id": "g", "generation_id": 3, "member_id": "m"}
    assert HEARTBEAT.request.encode(body, 0) == bytes.fromhex(
        "0001 67"  # group id "g"
        "00000003"  # generation 3
        "0001 6d"  # member id "m"
    )


def test_heartbeat_v4_is_flexible_with_a_null_instance_id() -> None:
    body = {"group_id": "g", "generation_id": 3, "member_id": "m"}
    assert HEARTBEAT.request.encode(body, 4) == bytes.fromhex(
        "02 67"  # compact "g"
        "00000003"
        "02 6d"  # compact "m"
        "00"  # group instance id: compact null
        "00"  # tagged fields
    )


def test_join_group_v0_has_no_rebalance_timeout_and_decodes_it_as_minus_one() -> None:
    body = {
        "group_id": "g",
        "session_timeout_ms": 10_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00"}],
    }
    v0 = JOIN_GROUP.request.encode(body, 0)
    v1 = JOIN_GROUP.request.encode({**body, "rebalance_timeout_ms": 5}, 1)
    assert len(v1) == len(v0) + 4
    assert JOIN_GROUP.request.decode(v0, 0)["rebalance_timeout_ms"] == -1


def test_leave_group_names_one_member_until_v3_and_a_batch_from_v3() -> None:
    assert LEAVE_GROUP.request.encode({"group_id": "g", "member_id": "m"}, 2) == bytes.fromhex(
        "0001 67 0001 6d"
    )
    batch = {"group_id": "g", "members": [{"member_id": "m"}]}
    assert LEAVE_GROUP.request.encode(batch, 3) == bytes.fromhex(
        "0001 67"
        "00000001"  # one member
        "0001 6d"  # its id
        "ffff"  # null group instance id
    )


def test_offset_fetch_null_topics_are_refused_before_v2() -> None:
    assert OFFSET_FETCH.request.decode(
        OFFSET_FETCH.request.encode({"group_id": "g", "topics": None}, 2), 2
    ) == {"group_id": "g", "topics": None, "groups": [], "require_stable": False}
    with pytest.raises(WireFormatError):
        OFFSET_FETCH.request.encode({"group_id": "g", "topics": None}, 1)


def test_offset_commit_v0_reads_as_a_commit_outside_the_group_protocol() -> None:
    body = {
        "group_id": "g",
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_metadata": None}
                ],
            }
        ],
    }
    decoded = OFFSET_COMMIT.request.decode(OFFSET_COMMIT.request.encode(body, 0), 0)
    assert (decoded["generation_id_or_member_epoch"], decoded["member_id"]) == (-1, "")
    assert decoded["topics"][0]["partitions"][0]["committed_metadata"] is None

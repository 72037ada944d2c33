"""KIP-101's two scenarios, replayed on real partitions and logs: truncating a restarted follower to
its high watermark loses or diverges data (the 'hw' runs are expected to fail), truncating by leader
epoch does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from rafka.actors.replica.partition import Partition
from rafka.log.log import Log
from rafka.protocol.messages.control import LeaderAndIsrPartitionState
from rafka.protocol.messages.fetch import FetchRequest
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.builder import build_batch

A, B = 0, 1
POLICIES = [
    pytest.param(
        "hw", marks=pytest.mark.xfail(strict=True, reason="HW truncation is what KIP-101 fixes")
    ),
    "epoch",
]


def open_replica(root: Path, broker: int) -> Partition:
    return Partition("t", 0, broker, Log(root / f"broker-{broker}" / "t-0"))


def restart(replica: Partition, root: Path) -> Partition:
    """A clean process restart: checkpoints written, log reopened."""
    replica.checkpoint()
    replica.log.close()
    return open_replica(root, replica.broker_id)


def state(leader: int, epoch: int, isr: tuple[int, ...]) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("t", 0, 1, leader, epoch, isr, 0, (A, B))


def produce(leader: Partition, value: bytes) -> int:
    return leader.append_as_leader(
        build_batch([(None, value, 1)]), acks=1, min_insync_replicas=1
    ).first_offset


def fetch(leader: Partition, follower: Partition, apply: bool = True) -> None:
    """One follower fetch round; with ``apply=False`` the follower dies before seeing the answer."""
    response = leader.read(FetchRequest(follower.log.log_end_offset, replica_id=follower.broker_id))
    if apply:
        follower.append_as_follower(response)


def rejoin(follower: Partition, leader: Partition, policy: str) -> None:
    """What a restarted follower does before fetching from ``leader``."""
    if policy == "hw":
        follower.log.truncate_to(follower.high_watermark)
    else:
        epoch, end = leader.log.end_offset_for_epoch(follower.log.epoch_cache.latest_epoch)
        follower.truncate_to_leader(epoch, end)


def values(replica: Partition) -> list[bytes]:
    data = replica.log.read(replica.log.log_start_offset, 1 << 20)
    values: list[bytes] = []
    for pos, h in iter_batches(data):
        for r in decode_records(data, pos, h):
            assert r.value is not None  # every record these tests append has a value
            values.append(r.value)
    return values


@pytest.mark.parametrize("policy", POLICIES)
def test_acknowledged_record_survives_follower_restart_then_leader_failure(
    tmp_path: Path, policy: str
) -> None:
    a, b = open_replica(tmp_path, A), open_replica(tmp_path, B)
    a.make_leader(state(A, 0, (A, B)))
    b.make_follower(state(A, 0, (A, B)))
    produce(a, b"m1")
    fetch(a, b)
    fetch(a, b)
    produce(a, b"m2")
    fetch(a, b)
    # B's next fetch moves A's HW past m2 (acks=all is answered), but B dies before the response.
    fetch(a, b, apply=False)
    assert a.high_watermark == 2 and b.high_watermark == 1
    b = restart(b, tmp_path)
    b.make_follower(state(A, 0, (A, B)))
    rejoin(b, a, policy)
    # A fails before B fetches again; B is the only ISR member left and becomes leader.
    b.make_leader(state(B, 1, (B,)))
    assert values(b) == [b"m1", b"m2"], "an acknowledged record was lost"


@pytest.mark.parametrize("policy", POLICIES)
def test_replicas_do_not_diverge_after_a_double_failure(tmp_path: Path, policy: str) -> None:
    a, b = open_replica(tmp_path, A), open_replica(tmp_path, B)
    a.make_leader(state(A, 0, (A, B)))
    b.make_follower(state(A, 0, (A, B)))
    produce(a, b"m1")
    fetch(a, b)
    produce(a, b"m2")
    fetch(a, b)
    fetch(a, b)
    assert a.high_watermark == 2
    # A power failure takes both brokers; B had not flushed m2 and loses it.
    b.log.truncate_to(1)
    b = restart(b, tmp_path)
    a = restart(a, tmp_path)
    b.make_leader(state(B, 1, (B,)))
    produce(b, b"m3")
    a.make_follower(state(B, 1, (B,)))
    rejoin(a, b, policy)
    fetch(b, a)
    fetch(b, a)
    assert values(a) == values(b), "the replicas hold different records at the same offsets"
    assert values(b) == [b"m1", b"m3"]

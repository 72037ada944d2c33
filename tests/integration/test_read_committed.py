"""read_committed consumers and transactional offset commits on a real cluster.

Transactions are written by hand, as a transactional producer and the transaction coordinator would
write them: transactional batches produced straight to the leader replica actor, markers through its
``write_txn_markers``; offsets through the group coordinator actor's ``txn_offset_commit`` and
``write_txn_markers``. Consumers then read through the ordinary client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray

from rafka.actors import names
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.cluster.local_cluster import LocalCluster
from rafka.groups.offsets_codec import OFFSETS_TOPIC
from rafka.protocol.errors import Errors
from rafka.protocol.messages.groups import OffsetCommitEntry, OffsetFetchRequest
from rafka.protocol.messages.produce import ACKS_ALL, ProduceRequest
from rafka.protocol.messages.transactions import TxnOffsetCommitRequest, WriteTxnMarkersRequest
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-read-committed"
CLUSTER = "read-committed"
TOPIC = "txn-events"
TP = TopicPartition(TOPIC, 0)
GROUP = "txn-group"


@pytest.fixture(scope="module")
def rcluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers, one offsets partition (so one coordinator answers for every group)."""
    with own_cluster(
        CLUSTER,
        NS,
        group_initial_rebalance_delay_ms=0,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def radmin(rcluster: LocalCluster) -> Admin:
    return rcluster.admin()


class TxnWriter:
    """Writes one partition's transactions by hand at its leader replica actor."""

    def __init__(self, admin: Admin, topic: str) -> None:
        leader = admin.describe_topic(topic).partitions[0].leader
        self.replica = ray.get_actor(names.replica_actor_name(topic, 0, leader), namespace=NS)
        self.sequences: dict[int, int] = {}

    def send(self, *values: bytes, producer_id: int = -1) -> int:
        """A batch of ``values``: transactional of ``producer_id`` if one is given; its offset."""
        transactional = producer_id >= 0
        sequence = self.sequences.get(producer_id, 0)
        builder = RecordBatchBuilder(
            producer_id=producer_id,
            producer_epoch=0 if transactional else -1,
            base_sequence=sequence if transactional else -1,
            is_transactional=transactional,
        )
        builder.extend(list(values), timestamp_ms=1_000)
        response = ray.get(
            self.replica.produce.remote(ProduceRequest(builder.build(), ACKS_ALL)), timeout=30
        )
        assert response.error is Errors.NONE, response
        if transactional:
            self.sequences[producer_id] = sequence + len(values)
        return int(response.base_offset)

    def end(self, producer_id: int, committed: bool) -> None:
        """Write ``producer_id``'s COMMIT or ABORT marker, as the transaction coordinator does."""
        request = WriteTxnMarkersRequest(producer_id, 0, committed, coordinator_epoch=0)
        response = ray.get(self.replica.write_txn_markers.remote(request), timeout=30)
        assert response.error is Errors.NONE, response


def read_all(isolation_level: str, end: int) -> list[Any]:
    """Values a consumer of ``isolation_level`` reads from offset 0 until its position is
    ``end``."""
    seen: list[Any] = []
    with Consumer(namespace=NS, isolation_level=isolation_level, fetch_max_wait_ms=100) as c:
        c.assign([TP])
        c.seek(TP, 0)

        def caught_up() -> bool:
            for records in c.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
            return c.position(TP) >= end

        wait_until(caught_up, 30, f"a {isolation_level} consumer to reach offset {end}")
    return seen


@pytest.fixture(scope="module")
def topic(radmin: Admin) -> str:
    """TOPIC, one partition, one replica."""
    radmin.create_topic(TOPIC, 1, 1)
    return TOPIC


@pytest.fixture(scope="module")
def mixed_log(radmin: Admin, topic: str) -> int:
    """TOPIC's partition: a plain record, an aborted and a committed transaction of two producers
    interleaved; the log end offset."""
    writer = TxnWriter(radmin, topic)
    writer.send(b"a1", producer_id=7001)
    writer.send(b"b1", producer_id=7002)
    writer.send(b"plain")
    writer.send(b"a2", producer_id=7001)
    writer.end(7001, committed=False)
    writer.send(b"b2", producer_id=7002)
    writer.end(7002, committed=True)
    return int(ray.get(writer.replica.describe.remote(), timeout=30)["log_end_offset"])


def test_read_committed_sees_committed_records_only(mixed_log: int) -> None:
    assert read_all("read_committed", mixed_log) == [b"b1", b"plain", b"b2"]


def test_read_uncommitted_sees_every_data_record_and_no_marker(mixed_log: int) -> None:
    assert read_all("read_uncommitted", mixed_log) == [b"a1", b"b1", b"plain", b"a2", b"b2"]


def test_end_offsets_of_a_read_committed_consumer_stop_at_an_open_transaction(
    radmin: Admin,
) -> None:
    radmin.create_topic("txn-open", 1, 1)
    writer = TxnWriter(radmin, "txn-open")
    writer.send(b"before")
    open_at = writer.send(b"open", producer_id=7003)
    writer.send(b"after")
    partition = TopicPartition("txn-open", 0)
    with Consumer(namespace=NS, isolation_level="read_committed") as committed:
        assert committed.end_offsets([partition]) == {partition: open_at}
    with Consumer(namespace=NS) as uncommitted:
        assert uncommitted.end_offsets([partition]) == {partition: open_at + 2}


def offsets_coordinator(rcluster: LocalCluster, radmin: Admin) -> Any:
    """The group coordinator actor owning the one offsets partition, once it has loaded it."""

    def owner() -> Any:
        ray.get(rcluster.brokers[0].find_coordinator.remote(GROUP), timeout=30)
        leader = radmin.describe_topic(OFFSETS_TOPIC).partitions[0].leader
        handle = ray.get_actor(names.coordinator_actor_name(leader), namespace=NS)
        return handle if ray.get(handle.describe.remote(), timeout=30)["owned"] == [0] else None

    return wait_until(owner, 60, "the offsets partition to be loaded")


def committed_offset(coordinator: Any) -> int:
    fetched = ray.get(
        coordinator.offset_fetch.remote(OffsetFetchRequest(GROUP, ((TOPIC, 0),))), timeout=30
    )
    assert fetched.error is Errors.NONE
    return int(fetched.offsets[0].offset)


def test_txn_offsets_become_visible_on_commit_and_are_dropped_on_abort(
    rcluster: LocalCluster, radmin: Admin, topic: str
) -> None:
    coordinator = offsets_coordinator(rcluster, radmin)

    def commit(producer_id: int, offset: int, committed: bool) -> None:
        request = TxnOffsetCommitRequest(
            f"txn-{producer_id}", GROUP, producer_id, 0, (OffsetCommitEntry(TOPIC, 0, offset),)
        )
        response = ray.get(coordinator.txn_offset_commit.remote(request), timeout=30)
        assert response.results == ((TP, Errors.NONE),), response
        assert committed_offset(coordinator) != offset  # pending: not visible yet
        marker = WriteTxnMarkersRequest(producer_id, 0, committed, coordinator_epoch=0)
        ended = ray.get(coordinator.write_txn_markers.remote(0, marker), timeout=30)
        assert ended.error is Errors.NONE, ended

    commit(8001, 3, committed=True)
    assert committed_offset(coordinator) == 3
    commit(8002, 5, committed=False)
    assert committed_offset(coordinator) == 3
    assert ray.get(coordinator.describe.remote(), timeout=30)["pending_transactions"] == []

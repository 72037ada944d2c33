"""Idempotence and transaction markers at the replica actors of a real cluster: hand-built batches
with producer ids and sequences go straight to a partition's leader replica."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchRequest,
    FetchResponse,
)
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP, ListOffsetsRequest
from rafka.protocol.messages.produce import ACKS_ALL, ProduceRequest, ProduceResponse
from rafka.protocol.messages.transactions import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from rafka.protocol.records.batch import iter_batches
from rafka.protocol.records.builder import RecordBatchBuilder
from rafka.protocol.types import now_ms
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NS = "rafka-idempotent"
CLUSTER = "idempotent"


@pytest.fixture(scope="module")
def icluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers with quick failure detection."""
    with own_cluster(
        CLUSTER,
        NS,
        replica_fetch_wait_max_ms=200,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def iadmin(icluster: LocalCluster) -> Admin:
    return icluster.admin()


def batch(pid: int, seq: int, count: int = 1, transactional: bool = False) -> bytes:
    """``count`` records from producer ``pid`` at epoch 0 from sequence ``seq``."""
    builder = RecordBatchBuilder(
        producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=transactional
    )
    for i in range(count):
        builder.append(now_ms(), None, b"%d-%d" % (pid, seq + i))
    return builder.build()


def produce(replica: Any, records: bytes) -> ProduceResponse:
    request = ProduceRequest(records, acks=ACKS_ALL, timeout_ms=20_000)
    return ray.get(replica.produce.remote(request), timeout=30)


def mark(replica: Any, pid: int, committed: bool) -> WriteTxnMarkersResponse:
    request = WriteTxnMarkersRequest(pid, 0, committed, coordinator_epoch=0, timeout_ms=20_000)
    return ray.get(replica.write_txn_markers.remote(request), timeout=30)


def leader_replica(admin: Admin, topic: str) -> tuple[int, Any]:
    leader = wait_until(
        lambda: (p := admin.describe_topic(topic).partitions[0]).leader >= 0 and p.leader,
        60,
        f"a leader for {topic}",
    )
    return leader, serving_replica(topic, 0, leader, NS)


def committed_fetch(replica: Any, offset: int, max_wait_ms: int = 0) -> FetchResponse:
    request = FetchRequest(offset, max_wait_ms=max_wait_ms, isolation_level=READ_COMMITTED)
    return ray.get(replica.fetch.remote(request), timeout=30)


def offsets_in(response: FetchResponse) -> list[int]:
    return [header.base_offset for _, header in iter_batches(response.records)]


def test_a_resent_batch_is_appended_once_even_after_the_leader_fails(
    icluster: LocalCluster, iadmin: Admin
) -> None:
    iadmin.create_topic("idem", 1, 3, config={"min.insync.replicas": "2"})
    old_leader, replica = leader_replica(iadmin, "idem")
    first = produce(replica, batch(1000, 0, count=3))
    again = produce(replica, batch(1000, 0, count=3))
    assert (first.error, first.base_offset) == (Errors.NONE, 0)
    assert (again.error, again.base_offset) == (Errors.NONE, 0)
    gap = produce(replica, batch(1000, 5))
    assert gap.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and "1000" in (gap.error_message or "")
    assert produce(replica, batch(1000, 3)).base_offset == 3
    assert ray.get(replica.describe.remote())["log_end_offset"] == 4

    icluster.kill_broker(old_leader)
    try:
        new_leader = wait_until(
            lambda: (
                (p := iadmin.describe_topic("idem").partitions[0]).leader not in (-1, old_leader)
                and p.leader
            ),
            60,
            "a new leader",
        )
        replica = serving_replica("idem", 0, new_leader, NS)
        resent = wait_until(
            lambda: (r := produce(replica, batch(1000, 3))).error is Errors.NONE and r,
            30,
            "the new leader to accept the resent batch",
        )
        assert resent.base_offset == 3
        assert ray.get(replica.describe.remote())["log_end_offset"] == 4
        assert produce(replica, batch(1000, 4)).base_offset == 4
    finally:
        icluster.start_broker(old_leader)
        iadmin.wait_for_cluster(3, 60_000)


def test_markers_end_transactions_for_read_committed_consumers(iadmin: Admin) -> None:
    iadmin.create_topic("txn", 1, 2)
    leader, replica = leader_replica(iadmin, "txn")
    assert produce(replica, batch(-1, -1)).base_offset == 0
    assert produce(replica, batch(2000, 0, count=2, transactional=True)).base_offset == 1
    assert offsets_in(committed_fetch(replica, 0)) == [0]
    assert committed_fetch(replica, 0).last_stable_offset == 1
    latest = ListOffsetsRequest(LATEST_TIMESTAMP, isolation_level=READ_COMMITTED)
    assert ray.get(replica.list_offsets.remote(latest)).offset == 1

    parked = replica.fetch.remote(
        FetchRequest(1, max_wait_ms=20_000, isolation_level=READ_COMMITTED)
    )
    assert mark(replica, 2000, committed=True).error is Errors.NONE
    woken = ray.get(parked, timeout=15)
    assert offsets_in(woken)[:1] == [1] and woken.aborted_transactions == ()
    assert ray.get(replica.describe.remote())["last_stable_offset"] == 4

    assert produce(replica, batch(2000, 2, transactional=True)).base_offset == 4
    assert mark(replica, 2000, committed=False).error is Errors.NONE
    aborted = committed_fetch(replica, 4)
    assert offsets_in(aborted) == [4, 5]
    assert aborted.aborted_transactions == (AbortedTransaction(2000, 4),)

    follower = next(b for b in iadmin.describe_topic("txn").partitions[0].replicas if b != leader)
    refused = mark(serving_replica("txn", 0, follower, NS), 2000, committed=True)
    assert refused.error is Errors.NOT_LEADER_OR_FOLLOWER

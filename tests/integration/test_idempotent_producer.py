"""The idempotent producer on a real cluster: producer ids from ZooKeeper blocks, batches stamped
with them, and every record written exactly once across a leader's death."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
import ray

from rafka.actors import names
from rafka.actors.broker.producer_id_manager import PRODUCER_ID_BLOCK_PATH, PRODUCER_ID_BLOCK_SIZE
from rafka.actors.zk.client import ZkClient
from rafka.clients.admin import Admin
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.transactions import InitProducerIdRequest, InitProducerIdResponse
from rafka.protocol.records.batch import iter_batches
from rafka.protocol.types import TopicPartition
from rafka.testing import serving_replica, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]
NS = "rafka-idem-producer"
CLUSTER = "idem-producer"


@pytest.fixture(scope="module")
def pcluster(own_cluster: Callable[..., LocalCluster]) -> Iterator[LocalCluster]:
    """Three brokers with quick failure detection and one offsets partition."""
    with own_cluster(
        CLUSTER,
        NS,
        replica_lag_time_max_ms=2000,
        replica_fetch_wait_max_ms=200,
    ) as local:
        yield local


@pytest.fixture(scope="module")
def padmin(pcluster: LocalCluster) -> Admin:
    return pcluster.admin()


def broker(broker_id: int) -> ray.actor.ActorHandle:
    return ray.get_actor(names.broker_actor_name(broker_id), namespace=NS)


def test_brokers_hand_out_disjoint_producer_ids_from_blocks_in_zookeeper(
    pcluster: LocalCluster,
) -> None:
    first = [ray.get(broker(0).allocate_producer_id.remote(), timeout=30) for _ in range(3)]
    second = [ray.get(broker(1).allocate_producer_id.remote(), timeout=30) for _ in range(3)]
    assert not set(first) & set(second)
    assert first == list(range(first[0], first[0] + 3))
    assert first[0] // PRODUCER_ID_BLOCK_SIZE != second[0] // PRODUCER_ID_BLOCK_SIZE
    zk = ZkClient(pcluster.zookeeper_connect, CLUSTER, 10_000)
    try:
        latest = json.loads(zk.zk.get(PRODUCER_ID_BLOCK_PATH)[0])
    finally:
        zk.close()
    assert latest["version"] == 1
    start, end = int(latest["block_start"]), int(latest["block_end"])
    assert end - start + 1 == PRODUCER_ID_BLOCK_SIZE
    # The latest block is the one claimed last: broker 1's, holding its ids.
    assert latest["broker"] == 1
    assert all(start <= producer_id <= end for producer_id in second)


def test_init_producer_id_gives_epoch_zero_and_leaves_transactional_ids_to_the_coordinator(
    pcluster: LocalCluster,
) -> None:
    plain: InitProducerIdResponse = ray.get(
        broker(2).init_producer_id.remote(InitProducerIdRequest()), timeout=30
    )
    assert plain.error is Errors.NONE
    assert plain.producer_id >= 0 and plain.producer_epoch == 0
    transactional: InitProducerIdResponse = ray.get(
        broker(2).init_producer_id.remote(InitProducerIdRequest("txn")), timeout=30
    )
    assert transactional.error is Errors.NOT_COORDINATOR


def test_a_default_producer_stamps_its_batches_with_a_producer_id_and_sequences(
    pcluster: LocalCluster, padmin: Admin
) -> None:
    padmin.create_topic("stamped", 1, 3)
    with Producer(namespace=NS, linger_ms=0) as producer:
        for i in range(3):
            producer.send("stamped", f"v{i}".encode()).get(timeout=30)
    leader = padmin.describe_topic("stamped").partitions[0].leader
    replica = serving_replica("stamped", 0, leader, NS)
    fetched: FetchResponse = ray.get(replica.fetch.remote(FetchRequest(0)), timeout=30)
    headers = [header for _, header in iter_batches(fetched.records)]
    assert [h.base_sequence for h in headers] == [0, 1, 2]
    assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0


def test_every_record_arrives_exactly_once_after_the_leaders_broker_is_killed(
    pcluster: LocalCluster, padmin: Admin
) -> None:
    topic, count = "exactly-once", 3000
    padmin.create_topic(topic, 1, 3, config={"min.insync.replicas": "2"})
    old_leader = padmin.describe_topic(topic).partitions[0].leader
    serving_replica(topic, 0, old_leader, NS)
    with Producer(
        namespace=NS,
        enable_idempotence=True,
        linger_ms=2,
        batch_size=2048,
        retry_backoff_ms=20,
        request_timeout_ms=5000,
    ) as producer:
        futures = [producer.send(topic, f"{i}".encode()) for i in range(count // 3)]
        futures[-1].get(timeout=60)
        futures += [producer.send(topic, f"{i}".encode()) for i in range(count // 3, count // 2)]
        pcluster.kill_broker(old_leader)  # requests are in flight to it
        futures += [producer.send(topic, f"{i}".encode()) for i in range(count // 2, count)]
        producer.flush(timeout=120)
    assert all(f.succeeded() for f in futures)
    offsets = [f.get(0).offset for f in futures]
    assert offsets == list(range(count))
    consumer = pcluster.consumer(auto_offset_reset="earliest", max_poll_records=100_000)
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes | None] = []

    def read_all() -> bool:
        values.extend(r.value for part in consumer.poll(timeout_ms=500).values() for r in part)
        return len(values) >= count

    try:
        wait_until(read_all, 90, f"{count} records")
        assert consumer.poll(timeout_ms=1000) == {}  # no duplicate follows
    finally:
        consumer.close()
    assert values == [f"{i}".encode() for i in range(count)]
    pcluster.start_broker(old_leader)

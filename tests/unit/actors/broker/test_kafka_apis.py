"""KafkaApis against a fake broker: Kafka's field names mapped onto rafka's internal requests,
record batches converted between Kafka's format and rafka's, long-polling fetches and acks=0."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rafka.actors.broker import kafka_apis
from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.kafka_apis import KafkaApis
from rafka.actors.broker.listener import Deferred
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import DescribeAclsResult
from rafka.protocol.messages.configs import AlterConfigsRequest, DescribeConfigsRequest
from rafka.protocol.messages.fetch import (
    AbortedTransaction,
    FetchRequest,
    FetchResponse,
    FileRegion,
)
from rafka.protocol.messages.groups import (
    FindCoordinatorResponse,
    GroupResponse,
    HeartbeatRequest,
)
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.offsets import ListOffsetsRequest, ListOffsetsResponse
from rafka.protocol.messages.produce import (
    HighWatermarkReached,
    ProduceAppended,
    ProduceRequest,
    ProduceResponse,
)
from rafka.protocol.messages.transactions import (
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from rafka.protocol.records.batch import (
    decode_columns,
    decode_records,
    encode_batch,
    make_attributes,
    read_header,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.control import ControlRecordType, build_marker
from rafka.protocol.records.kafka_records import decode_kafka_records, native_to_kafka
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.primitives import FileSlice
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = pytest.mark.timeout(30)

BROKERS = (
    BrokerMetadata(0, "10.0.0.1", "n0", endpoints=("PLAINTEXT://10.0.0.1:9092",)),
    BrokerMetadata(1, "10.0.0.2", "n1", "r1", endpoints=("PLAINTEXT://kafka-1:9093",)),
    BrokerMetadata(2, "10.0.0.3", "n2"),  # no listener: left out of Kafka's answer
)
NATIVE = build_batch([(b"k", b"v", 1_000, [("h", b"x")]), (None, b"w", 1_001)])


class FakeBroker:
    """Records what KafkaApis asks; answers from canned values."""

    def __init__(self) -> None:
        self.metadata_requests: list[MetadataRequest] = []
        self.calls: list[tuple[str, int, str, Any]] = []
        self.fetch_answers: list[FetchResponse] = []
        self.high_watermark_error = Errors.NONE
        self.config = BrokerConfig(broker_id=1)

    async def controller_call(self, method: str, *args: Any) -> Any:
        raise Errors.NOT_CONTROLLER.exception("no controller in this fake")

    async def cluster_metadata(self, request: MetadataRequest) -> list[MetadataResponse]:
        return [await self.metadata(request)]

    async def describe_configs(self, request: DescribeConfigsRequest) -> Any:
        return []

    async def alter_configs(self, request: AlterConfigsRequest) -> Any:
        return []

    async def describe_user_scram_credentials(self, request: Any) -> Any:
        return []

    async def alter_user_scram_credentials(self, request: Any) -> Any:
        return []

    # No authorizer: every request is allowed. The ACL methods are KafkaAclApis' (own tests).
    authorizer = BrokerAuthorizer(False, frozenset(), False)

    async def create_acls(self, request: Any) -> Any:
        return []

    async def describe_acls(self, request: Any) -> Any:
        return DescribeAclsResult(Errors.NONE)

    async def delete_acls(self, request: Any) -> Any:
        return []

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        self.metadata_requests.append(request)
        partition = PartitionMetadata(0, 1, 4, (1, 0), (1,))
        return MetadataResponse(BROKERS, 1, (TopicMetadata("t", (partition,)),), "cid")

    async def find_coordinator(self, key: str, key_type: int) -> FindCoordinatorResponse:
        return FindCoordinatorResponse(Errors.NONE, {"g1": 1, "g2": 2}[key])

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        return InitProducerIdResponse(Errors.NONE, 77, 0)

    async def coordinator_call(self, method: str, *args: Any) -> Any:
        self.calls.append(("", -1, method, args))
        return GroupResponse(Errors.UNKNOWN_MEMBER_ID)

    async def transaction_coordinator_call(self, method: str, *args: Any) -> Any:
        self.calls.append(("txn", -1, method, args))
        if method == "init_producer_id":
            return InitProducerIdResponse(Errors.PRODUCER_FENCED)
        return EndTxnResponse(Errors.CONCURRENT_TRANSACTIONS)

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        self.calls.append((topic, partition, method, request))
        if method == "append":
            required = 42 if request.acks == -1 else None
            return ProduceAppended(ProduceResponse(Errors.NONE, 41, -1, 0), required)
        if method == "await_high_watermark":
            error = self.high_watermark_error
            return HighWatermarkReached(error, request.required_offset, error)
        if method == "list_offsets":
            return ListOffsetsResponse(Errors.NONE, 12, 5, 4)
        assert isinstance(request, FetchRequest)
        if request.max_wait_ms == 0 or not self.fetch_answers:
            return FetchResponse(Errors.NONE, 10, 0, 10)
        return self.fetch_answers.pop(0)


def handle(apis: KafkaApis, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """The response body, the deferred part of the work done."""

    async def answer() -> Any:
        body_or_later = await apis.handle(RequestHeader(api_key, version, 1), body)
        if isinstance(body_or_later, Deferred):
            return await body_or_later.body
        return body_or_later

    return asyncio.run(answer())


def decoded(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as it arrives after an encode/decode round trip (defaults filled in)."""
    header = RequestHeader(api_key, version, 1, "c")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    return dict(DEFAULT_REGISTRY.decode_request(frame[4:]).body)


def test_metadata_lists_only_brokers_with_a_listener_at_their_advertised_address() -> None:
    broker = FakeBroker()
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 3, 9, decoded(3, 9, {"topics": None}))
    assert [(b["node_id"], b["host"], b["port"], b["rack"]) for b in answer["brokers"]] == [
        (0, "10.0.0.1", 9092, None),
        (1, "kafka-1", 9093, "r1"),
    ]
    assert (answer["cluster_id"], answer["controller_id"]) == ("cid", 1)
    partition = answer["topics"][0]["partitions"][0]
    assert (partition["leader_id"], partition["leader_epoch"], partition["isr_nodes"]) == (
        1,
        4,
        [1],
    )
    assert broker.metadata_requests[0].topics is None
    DEFAULT_REGISTRY.encode_response(RequestHeader(3, 9, 1), answer)


def test_an_empty_topic_list_means_every_topic_in_v0_and_none_from_v1() -> None:
    broker = FakeBroker()
    apis = KafkaApis(broker, DEFAULT_REGISTRY)
    handle(apis, 3, 0, decoded(3, 0, {"topics": []}))
    handle(apis, 3, 1, decoded(3, 1, {"topics": []}))
    handle(apis, 3, 4, decoded(3, 4, {"topics": [{"name": "t"}]}))
    assert [r.topics for r in broker.metadata_requests] == [None, (), ("t",)]


def test_produce_passes_a_clients_batches_on_unchanged_and_answers_per_partition() -> None:
    broker = FakeBroker()
    body = decoded(
        0,
        9,
        {
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [
                {
                    "name": "t",
                    "partition_data": [{"index": 0, "records": native_to_kafka(NATIVE)}],
                }
            ],
        },
    )
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 0, 9, body)
    (topic, partition, method, request) = broker.calls[0]
    assert (topic, partition, method, request.acks, request.timeout_ms) == (
        "t",
        0,
        "append",
        -1,
        5000,
    )
    assert isinstance(request, ProduceRequest)
    assert request.records == native_to_kafka(NATIVE)
    (response,) = answer["responses"][0]["partition_responses"]
    assert (response["index"], response["error_code"], response["base_offset"]) == (0, 0, 41)


def produce_body(acks: int) -> dict[str, Any]:
    return decoded(
        0,
        9,
        {
            "acks": acks,
            "timeout_ms": 5000,
            "topic_data": [
                {
                    "name": "t",
                    "partition_data": [
                        {"index": 0, "records": native_to_kafka(NATIVE)},
                        {"index": 1, "records": native_to_kafka(NATIVE)},
                    ],
                }
            ],
        },
    )


def test_a_produce_queues_its_appends_and_defers_the_rest_of_the_work() -> None:
    broker = FakeBroker()

    async def scenario() -> Any:
        later = await KafkaApis(broker, DEFAULT_REGISTRY).handle(
            RequestHeader(0, 9, 1), produce_body(-1)
        )
        # Taken, not yet sent: the connection's next request may be taken first.
        assert isinstance(later, Deferred) and broker.calls == []
        return await later.body

    answer = asyncio.run(scenario())
    assert sorted((p, m) for (_, p, m, _) in broker.calls) == [
        (0, "append"),
        (0, "await_high_watermark"),
        (1, "append"),
        (1, "await_high_watermark"),
    ]
    waits = sorted((p, r) for (_, p, m, r) in broker.calls if m == "await_high_watermark")
    assert [(p, r.required_offset) for p, r in waits] == [(0, 42), (1, 42)]
    assert all(4000 < r.timeout_ms <= 5000 for _, r in waits)  # what is left of 5000 ms
    responses = answer["responses"][0]["partition_responses"]
    assert [(r["index"], r["error_code"], r["base_offset"]) for r in responses] == [
        (0, 0, 41),
        (1, 0, 41),
    ]


def test_pipelined_produces_to_one_partition_are_appended_together_in_order() -> None:
    broker = FakeBroker()

    async def scenario() -> list[Any]:
        apis = KafkaApis(broker, DEFAULT_REGISTRY)
        bodies = [produce_body(1) for _ in range(3)]
        taken = [await apis.handle(RequestHeader(0, 9, i), body) for i, body in enumerate(bodies)]
        return [await later.body for later in taken if isinstance(later, Deferred)]

    answers = asyncio.run(scenario())
    appends = [(p, r) for (_, p, m, r) in broker.calls if m == "append"]
    kafka = native_to_kafka(NATIVE)
    # The three requests' batches for each partition went in one call, in the order they came.
    assert sorted((p, r.records) for p, r in appends) == [(0, kafka * 3), (1, kafka * 3)]
    # NATIVE holds two records, so each request's base offset follows the one before it.
    assert [a["responses"][0]["partition_responses"][0]["base_offset"] for a in answers] == [
        41,
        43,
        45,
    ]


def test_past_the_queued_appends_bound_a_produce_holds_its_connection_until_appended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka_apis, "MAX_QUEUED_APPENDS", 1)
    broker = FakeBroker()

    async def scenario() -> None:
        answer = await KafkaApis(broker, DEFAULT_REGISTRY).handle(
            RequestHeader(0, 9, 1), produce_body(0)
        )
        assert answer is None
        assert sorted(p for (_, p, m, _) in broker.calls if m == "append") == [0, 1]

    asyncio.run(scenario())


def test_a_failed_high_watermark_wait_is_the_partitions_answer() -> None:
    broker = FakeBroker()
    broker.high_watermark_error = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 0, 9, produce_body(-1))
    responses = answer["responses"][0]["partition_responses"]
    assert {r["error_code"] for r in responses} == {int(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)}


def test_a_corrupt_batch_is_answered_corrupt_message_without_reaching_the_replica() -> None:
    broker = FakeBroker()
    kafka = bytearray(native_to_kafka(NATIVE))
    kafka[-1] ^= 0xFF
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 2, "records": bytes(kafka)}]}],
    }
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 0, 9, decoded(0, 9, body))
    (response,) = answer["responses"][0]["partition_responses"]
    assert response["error_code"] == int(Errors.CORRUPT_MESSAGE)
    assert broker.calls == []


def test_produce_with_acks_0_sends_no_response() -> None:
    body = {
        "acks": 0,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "t",
                "partition_data": [{"index": 0, "records": native_to_kafka(NATIVE)}],
            }
        ],
    }
    broker = FakeBroker()
    assert handle(KafkaApis(broker, DEFAULT_REGISTRY), 0, 9, decoded(0, 9, body)) is None
    assert len(broker.calls) == 1


def fetch_body(max_wait_ms: int) -> dict[str, Any]:
    return decoded(
        1,
        12,
        {
            "max_wait_ms": max_wait_ms,
            "min_bytes": 1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 3, "partition_max_bytes": 1000},
                        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1000},
                    ],
                }
            ],
        },
    )


def test_an_empty_fetch_waits_at_the_leaders_and_returns_the_records_in_kafkas_format() -> None:
    broker = FakeBroker()
    broker.fetch_answers = [FetchResponse(Errors.NONE, 10, 0, 10, NATIVE)]
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, fetch_body(500))
    waits = [r.max_wait_ms for (_, _, m, r) in broker.calls if m == "fetch"]
    assert waits == [0, 0, 500, 500]
    partitions = answer["responses"][0]["partitions"]
    with_records = [p for p in partitions if p["records"]]
    assert len(with_records) == 1
    assert decode_kafka_records(with_records[0]["records"]) == decode_records(NATIVE)
    DEFAULT_REGISTRY.encode_response(RequestHeader(1, 12, 1), answer)


def test_a_fetch_serves_batches_a_kafka_client_produced_byte_for_byte() -> None:
    stored = native_to_kafka(NATIVE) + NATIVE
    broker = FakeBroker()
    broker.fetch_answers = [FetchResponse(Errors.NONE, 10, 0, 10, stored)]
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, fetch_body(500))
    (records,) = [p["records"] for p in answer["responses"][0]["partitions"] if p["records"]]
    assert records == native_to_kafka(NATIVE) * 2
    assert decode_kafka_records(records) == decode_records(NATIVE)


class RegionBroker(FakeBroker):
    """Answers a fetch that allows it with a file region, and any other with ``NATIVE``."""

    def __init__(self, region: FileRegion) -> None:
        super().__init__()
        self.region = region

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        self.calls.append((topic, partition, method, request))
        if request.file_regions:
            return FetchResponse(Errors.NONE, 10, 0, 10, region=self.region)
        return FetchResponse(Errors.NONE, 10, 0, 10, NATIVE)


def test_a_fetch_answered_with_a_file_region_sends_a_slice_of_that_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(native_to_kafka(NATIVE) * 3)
    stored = len(native_to_kafka(NATIVE))
    broker = RegionBroker(FileRegion(str(path), path.stat().st_ino, stored, stored))
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, fetch_body(0))
    slices = [p["records"] for p in answer["responses"][0]["partitions"]]
    assert all(isinstance(s, FileSlice) for s in slices)
    for piece in slices:
        piece.file.seek(piece.position)
        assert decode_kafka_records(piece.file.read(piece.size)) == decode_records(NATIVE)
        piece.file.close()
    assert [r.file_regions for (_, _, _, r) in broker.calls] == [True, True]


def test_a_region_whose_file_is_gone_is_read_again_as_bytes(tmp_path: Path) -> None:
    broker = RegionBroker(FileRegion(str(tmp_path / "deleted.log"), 1, 0, 100))
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, fetch_body(0))
    records = [p["records"] for p in answer["responses"][0]["partitions"]]
    assert records == [native_to_kafka(NATIVE)] * 2
    assert [r.file_regions for (_, _, _, r) in broker.calls] == [True, True, False, False]


def test_a_fetch_with_no_wait_asks_each_leader_once() -> None:
    broker = FakeBroker()
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, fetch_body(0))
    assert [r.fetch_offset for (_, _, _, r) in broker.calls] == [3, 0]
    assert all(p["high_watermark"] == 10 for p in answer["responses"][0]["partitions"])


def test_a_fetch_naming_no_partition_is_answered_at_once_even_with_a_wait() -> None:
    broker = FakeBroker()
    body = decoded(1, 12, {"max_wait_ms": 500, "min_bytes": 1, "topics": []})
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, body)
    assert (answer["error_code"], answer["responses"], broker.calls) == (0, [], [])
    DEFAULT_REGISTRY.encode_response(RequestHeader(1, 12, 1), answer)


def test_list_offsets_and_init_producer_id_map_onto_rafkas_requests() -> None:
    broker = FakeBroker()
    apis = KafkaApis(broker, DEFAULT_REGISTRY)
    body = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    answer = handle(apis, 2, 7, decoded(2, 7, body))
    (request,) = [r for (_, _, _, r) in broker.calls]
    assert request == ListOffsetsRequest(-1, -1, 1)
    partition = answer["topics"][0]["partitions"][0]
    assert (partition["offset"], partition["timestamp"], partition["leader_epoch"]) == (12, 5, 4)
    init = handle(
        apis, 22, 4, decoded(22, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
    )
    assert (init["error_code"], init["producer_id"], init["producer_epoch"]) == (0, 77, 0)


def test_find_coordinator_gives_the_coordinators_listener_or_coordinator_not_available() -> None:
    apis = KafkaApis(FakeBroker(), DEFAULT_REGISTRY)
    found = handle(apis, 10, 1, decoded(10, 1, {"key": "g1", "key_type": 0}))
    assert (found["error_code"], found["node_id"], found["host"], found["port"]) == (
        0,
        1,
        "kafka-1",
        9093,
    )
    batched = handle(apis, 10, 4, decoded(10, 4, {"key_type": 0, "coordinator_keys": ["g1", "g2"]}))
    errors = [(c["key"], c["error_code"]) for c in batched["coordinators"]]
    assert errors == [("g1", 0), ("g2", int(Errors.COORDINATOR_NOT_AVAILABLE))]


def test_the_group_apis_are_served_by_the_brokers_group_coordinator() -> None:
    broker = FakeBroker()
    body = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 12, 4, decoded(12, 4, body))
    assert broker.calls == [("", -1, "heartbeat", (HeartbeatRequest("g", 1, "m"),))]
    assert answer == {"error_code": int(Errors.UNKNOWN_MEMBER_ID)}


def test_the_transaction_apis_are_served_by_the_brokers_transaction_coordinator() -> None:
    broker = FakeBroker()
    body = {"transactional_id": "x", "producer_id": 7, "producer_epoch": 1, "committed": True}
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 26, 1, decoded(26, 1, body))
    assert broker.calls == [("txn", -1, "end_txn", (EndTxnRequest("x", 7, 1, True),))]
    assert answer == {"error_code": int(Errors.CONCURRENT_TRANSACTIONS)}


def test_a_transactional_batch_reaches_the_replica_with_its_producer_fields() -> None:
    broker = FakeBroker()
    columns = decode_columns(NATIVE, 0, read_header(NATIVE, 0))
    transactional = encode_batch(
        columns,
        first_timestamp=1_000,
        max_timestamp=1_001,
        last_offset_delta=1,
        attributes=make_attributes(is_transactional=True),
        producer_id=9,
        producer_epoch=2,
        base_sequence=40,
    )
    body = {
        "transactional_id": "x",
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "t",
                "partition_data": [{"index": 0, "records": native_to_kafka(transactional)}],
            }
        ],
    }
    handle(KafkaApis(broker, DEFAULT_REGISTRY), 0, 9, decoded(0, 9, body))
    (_, _, _, request) = broker.calls[0]
    header = read_header(request.records, 0)
    assert header.is_transactional and not header.is_control
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 40)


def test_a_read_committed_fetch_serves_markers_as_control_batches_and_lists_aborts() -> None:
    broker = FakeBroker()
    marker = build_marker(9, 2, ControlRecordType.ABORT, 4, 1_000)
    broker.fetch_answers = [
        FetchResponse(
            Errors.NONE,
            10,
            0,
            10,
            marker,
            last_stable_offset=8,
            aborted_transactions=(AbortedTransaction(9, 3),),
        )
    ]
    answer = handle(
        KafkaApis(broker, DEFAULT_REGISTRY), 1, 12, {**fetch_body(500), "isolation_level": 1}
    )
    (partition,) = [p for p in answer["responses"][0]["partitions"] if p["records"]]
    assert partition["last_stable_offset"] == 8
    assert partition["aborted_transactions"] == [{"producer_id": 9, "first_offset": 3}]
    header = read_header(partition["records"], 0)
    assert header.is_control and header.is_transactional
    assert decode_kafka_records(partition["records"])[0].key == bytes.fromhex("0000 0000")
    DEFAULT_REGISTRY.encode_response(RequestHeader(1, 12, 1), answer)


@pytest.mark.parametrize(
    ("version", "fenced"), [(3, Errors.INVALID_PRODUCER_EPOCH), (4, Errors.PRODUCER_FENCED)]
)
def test_init_producer_id_for_a_transactional_id_asks_the_transaction_coordinator(
    version: int, fenced: Errors
) -> None:
    broker = FakeBroker()
    body = {"transactional_id": "x", "transaction_timeout_ms": 9, "producer_id": 7}
    answer = handle(KafkaApis(broker, DEFAULT_REGISTRY), 22, version, decoded(22, version, body))
    assert broker.calls == [
        ("txn", -1, "init_producer_id", (InitProducerIdRequest("x", 9, 7, -1),))
    ]
    assert answer["error_code"] == int(fenced)

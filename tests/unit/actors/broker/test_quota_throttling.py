"""Client quotas in KafkaApis, with a fake broker: a Produce or consumer Fetch over its client's
quota is answered with Kafka's throttle time (the listener's muting of the connection for that
time is ``test_listener``'s)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.client_quotas import ClientQuotaManager
from rafka.actors.broker.kafka_apis import KafkaApis
from rafka.actors.broker.listener import (
    _CONNECTION_PRINCIPAL,
    Deferred,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.fetch import FetchRequest, FetchResponse
from rafka.protocol.messages.produce import ProduceAppended, ProduceResponse
from rafka.protocol.messages.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    USER,
    ClientQuotaEntity,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.kafka_records import native_to_kafka
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.security.principal import KafkaPrincipal

pytestmark = pytest.mark.timeout(60)

RECORDS = native_to_kafka(build_batch([(b"k", b"v" * 500, 1_000), (None, b"w" * 500, 1_001)]))
NATIVE = build_batch([(None, b"x" * 1000, 1_000)])


class FakeBroker:
    """Appends and fetches answered at once; no authorizer. Only what Produce and Fetch use: the
    handlers for the other APIs are never called (hence the ignored ``arg-type``)."""

    authorizer = BrokerAuthorizer(False, frozenset(), False)

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        if method == "append":
            return ProduceAppended(ProduceResponse(Errors.NONE, 0, -1, 0))
        assert isinstance(request, FetchRequest)
        return FetchResponse(Errors.NONE, 10, 0, 10, NATIVE)


def answer(quotas: ClientQuotaManager, api_key: int, body: dict[str, Any], user: str) -> Any:
    """The response body for a request of client id ``app`` from ``User:<user>``."""

    async def scenario() -> Any:
        _CONNECTION_PRINCIPAL.set(KafkaPrincipal.user(user))
        apis = KafkaApis(FakeBroker(), DEFAULT_REGISTRY, quotas)  # type: ignore[arg-type]
        later = await apis.handle(RequestHeader(api_key, 9 if api_key == 0 else 12, 1, "app"), body)
        return await later.body if isinstance(later, Deferred) else later

    return asyncio.run(scenario())


def produce_body() -> dict[str, Any]:
    partitions = [{"index": i, "records": RECORDS} for i in range(2)]
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": partitions}],
    }


def fetch_body(replica_id: int = -1) -> dict[str, Any]:
    partitions = [
        {
            "partition": i,
            "fetch_offset": 0,
            "partition_max_bytes": 10_000,
            "current_leader_epoch": -1,
        }
        for i in range(2)
    ]
    return {
        "replica_id": replica_id,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1_000_000,
        "isolation_level": 0,
        "topics": [{"topic": "t", "partitions": partitions}],
    }


def quotas_of(entity: dict[str, str | None], key: str, bound: float) -> ClientQuotaManager:
    quotas = ClientQuotaManager()
    quotas.update(ClientQuotaEntity.of(entity), {key: bound})
    return quotas


def test_a_produce_over_its_client_ids_quota_is_answered_with_kafkas_throttle_time() -> None:
    sent = 2 * len(RECORDS)
    # The request's record bytes over the 10 s a first burst is measured over are twice the
    # quota: (2q - q) / q * 10 s.
    quotas = quotas_of({CLIENT_ID: "app"}, PRODUCER_BYTE_RATE, sent / 10 / 2)
    body = answer(quotas, 0, produce_body(), "ANONYMOUS")
    assert body["throttle_time_ms"] == 10_000
    assert [p["error_code"] for p in body["responses"][0]["partition_responses"]] == [0, 0]


def test_a_produce_is_held_to_its_users_quota_and_another_users_is_not() -> None:
    quotas = quotas_of({USER: "alice"}, PRODUCER_BYTE_RATE, 1)
    assert answer(quotas, 0, produce_body(), "alice")["throttle_time_ms"] > 0
    assert answer(quotas, 0, produce_body(), "bob")["throttle_time_ms"] == 0


def test_a_produce_without_a_quota_is_not_throttled() -> None:
    assert answer(ClientQuotaManager(), 0, produce_body(), "alice")["throttle_time_ms"] == 0


def test_a_fetch_takes_what_ten_windows_of_its_quota_allow_and_the_next_is_throttled() -> None:
    one_partition = len(native_to_kafka(NATIVE))
    # Ten windows of this quota hold one partition's records, not two.
    quotas = quotas_of({CLIENT_ID: "app"}, CONSUMER_BYTE_RATE, one_partition / 10)

    async def scenario() -> list[Any]:
        apis = KafkaApis(FakeBroker(), DEFAULT_REGISTRY, quotas)  # type: ignore[arg-type]
        header = RequestHeader(1, 12, 1, "app")
        return [await apis.handle(header, fetch_body()) for _ in range(2)]

    first, second = asyncio.run(scenario())
    records = [p["records"] for p in first["responses"][0]["partitions"]]
    assert [len(r) for r in records] == [one_partition, 0]
    assert first["throttle_time_ms"] == 0  # exactly the quota over 10 s
    # Two partitions' worth over 10 s against one's: (2 - 1) / 1 * 10 s.
    assert second["throttle_time_ms"] == pytest.approx(10_000, abs=5)


def test_a_followers_fetch_is_never_held_to_a_client_quota() -> None:
    quotas = quotas_of({CLIENT_ID: None}, CONSUMER_BYTE_RATE, 1)
    body = answer(quotas, 1, fetch_body(replica_id=1), "ANONYMOUS")
    assert body["throttle_time_ms"] == 0
    assert all(p["records"] for p in body["responses"][0]["partitions"])

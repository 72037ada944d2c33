"""KafkaAdminApis against a fake broker: Kafka's admin request bodies (round-tripped through the
wire codec) mapped onto the requests rafka's Admin sends its controller, brokers and replicas, and
the answers mapped back into bodies that encode at the request's version, errors as Kafka's
codes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rafka.actors.broker.authorizer import BrokerAuthorizer
from rafka.actors.broker.config import BrokerConfig
from rafka.actors.broker.kafka_admin_apis import KafkaAdminApis
from rafka.actors.broker.kafka_config_apis import _described_entry
from rafka.protocol.configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import DescribeAclsResult
from rafka.protocol.messages.admin import (
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
)
from rafka.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResult,
    DescribeConfigsRequest,
    DescribeConfigsResult,
)
from rafka.protocol.messages.metadata import (
    BrokerMetadata,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from rafka.protocol.messages.offsets import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from rafka.protocol.types import NewPartitions, NewTopic
from rafka.protocol.wire.headers import RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY

pytestmark = pytest.mark.timeout(30)

CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH = 19, 20, 21, 23
DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_PARTITIONS = 32, 33, 37
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLUSTER = 44, 60

BROKERS = (
    BrokerMetadata(0, "10.0.0.1", "n0", endpoints=("PLAINTEXT://10.0.0.1:9092",)),
    BrokerMetadata(1, "10.0.0.2", "n1", "r1", endpoints=("PLAINTEXT://kafka-1:9093",)),
    BrokerMetadata(2, "10.0.0.3", "n2"),  # no listener: left out of Kafka's answer
)
TOPIC_ENTRIES = (
    ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    ConfigEntry(
        "retention.ms",
        "5",
        ConfigSource.TOPIC_CONFIG,
        synonyms=(
            ConfigSynonym("retention.ms", "5", ConfigSource.TOPIC_CONFIG),
            ConfigSynonym("log.retention.ms", "9", ConfigSource.STATIC_BROKER_CONFIG),
        ),
    ),
)


def led(name: str, partitions: int, replicas: tuple[int, ...] = (0, 1)) -> TopicMetadata:
    """A topic whose every partition has a leader."""
    return TopicMetadata(
        name,
        tuple(PartitionMetadata(p, replicas[0], 0, replicas, replicas) for p in range(partitions)),
    )


class FakeBroker:
    """Plays the broker, a peer broker and, behind them, the controller: a created topic shows in
    the metadata at once (unless ``hidden``; the peer sees ``peer_view`` instead where it says
    so), and ``not_controller`` answers NOT_CONTROLLER that many times."""

    def __init__(self) -> None:
        self.config = BrokerConfig(broker_id=0, num_partitions=3, default_replication_factor=2)
        self.topics: dict[str, TopicMetadata] = {"old": led("old", 2)}
        self.hidden: set[str] = set()
        self.peer_view: dict[str, TopicMetadata] = {}
        self.peer_controller_id = 1
        self.not_controller = 0
        self.unreachable = 0
        self.controller_calls: list[tuple[str, Any]] = []
        self.config_requests: list[Any] = []
        self.replica_calls: list[tuple[str, int, str, Any]] = []
        self.replica_errors: dict[tuple[str, int], Errors] = {}

    async def controller_call(self, method: str, *args: Any) -> Any:
        self.controller_calls.append((method, args[0]))
        if len(args) == 3 and args[2]:  # validate_only: answer as if, change nothing
            saved = dict(self.topics)
            answers = getattr(self, f"_{method}")(args[0])
            self.topics = saved
            return answers
        if self.unreachable:
            self.unreachable -= 1
            raise Errors.NOT_CONTROLLER.exception("controller 9 cannot be reached")
        if self.not_controller:
            self.not_controller -= 1
            moved = [n if isinstance(n, str) else n.name for n in args[0]]
            kind = {"create_topics": CreateTopicResult, "delete_topics": DeleteTopicResult}.get(
                method, CreatePartitionsResult
            )
            return [kind(n, Errors.NOT_CONTROLLER, "moved") for n in moved]
        return getattr(self, f"_{method}")(args[0])

    def _create_topics(self, topics: list[NewTopic]) -> list[CreateTopicResult]:
        results = []
        for t in topics:
            if t.name in self.topics:
                results.append(CreateTopicResult(t.name, Errors.TOPIC_ALREADY_EXISTS, "exists"))
                continue
            count = t.num_partitions if t.num_partitions > 0 else len(t.replica_assignments)
            if t.name not in self.hidden:
                self.topics[t.name] = led(t.name, count, tuple(range(max(t.replication_factor, 1))))
            results.append(CreateTopicResult(t.name, Errors.NONE))
        return results

    def _create_partitions(self, topics: dict[str, NewPartitions]) -> list[CreatePartitionsResult]:
        results = []
        for name, grow in topics.items():
            if name not in self.topics:
                results.append(
                    CreatePartitionsResult(name, Errors.UNKNOWN_TOPIC_OR_PARTITION, "no topic")
                )
                continue
            if name not in self.hidden:
                self.topics[name] = led(name, grow.total_count)
            results.append(CreatePartitionsResult(name, Errors.NONE))
        return results

    def _delete_topics(self, names: list[str]) -> list[DeleteTopicResult]:
        results = []
        for name in names:
            if name not in self.topics:
                results.append(DeleteTopicResult(name, Errors.UNKNOWN_TOPIC_OR_PARTITION, "none"))
                continue
            if name not in self.hidden:
                del self.topics[name]
            results.append(DeleteTopicResult(name, Errors.NONE))
        return results

    async def metadata(self, request: MetadataRequest) -> MetadataResponse:
        names = request.topics if request.topics is not None else tuple(self.topics)
        topics = tuple(
            self.topics.get(n, TopicMetadata(n, error=Errors.UNKNOWN_TOPIC_OR_PARTITION))
            for n in names
        )
        return MetadataResponse(BROKERS, 1, topics, "cluster-1")

    async def cluster_metadata(self, request: MetadataRequest) -> list[MetadataResponse]:
        here = await self.metadata(request)
        peer = tuple(self.peer_view.get(t.name, t) for t in here.topics)
        return [here, MetadataResponse(BROKERS, self.peer_controller_id, peer, "cluster-1")]

    async def describe_configs(
        self, request: DescribeConfigsRequest
    ) -> list[DescribeConfigsResult]:
        self.config_requests.append(request)
        return [
            DescribeConfigsResult(r, Errors.NONE, None, TOPIC_ENTRIES)
            if r.name != "missing"
            else DescribeConfigsResult(r, Errors.UNKNOWN_TOPIC_OR_PARTITION, "no topic 'missing'")
            for r in request.resources
        ]

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        self.config_requests.append(request)
        return [
            AlterConfigsResult(r, Errors.NONE)
            if "bad" not in (r.configs or {})
            else AlterConfigsResult(r, Errors.INVALID_CONFIG, "bad is not a config")
            for r in request.resources
        ]

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

    async def replica_call(self, topic: str, partition: int, method: str, request: Any) -> Any:
        self.replica_calls.append((topic, partition, method, request))
        error = self.replica_errors.get((topic, partition))
        if error is not None:
            raise error.exception(f"{topic}-{partition}: {error.name}")
        if method == "delete_records":
            return DeleteRecordsResponse(Errors.NONE, request.offset)
        return OffsetsForLeaderEpochResponse(Errors.NONE, request.leader_epoch, 100)


def handle(broker: FakeBroker, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """``body`` sent through the codec and KafkaAdminApis; the answer must encode at
    ``version``."""
    header = RequestHeader(api_key, version, 1, "admin-client")
    frame = DEFAULT_REGISTRY.encode_request(header, body)
    request = DEFAULT_REGISTRY.decode_request(frame[4:])
    apis = KafkaAdminApis(broker)

    async def call() -> Any:
        return await apis.handlers()[api_key](request.header, request.body)

    answer = asyncio.run(call())
    response = DEFAULT_REGISTRY.encode_response(header, answer)
    return DEFAULT_REGISTRY.decode_response(response[4:], header)[1]


def topic(name: str, partitions: int = 1, factor: int = 1, **more: Any) -> dict[str, Any]:
    """A CreateTopics request topic."""
    return {"name": name, "num_partitions": partitions, "replication_factor": factor, **more}


# ------------------------------------------------------------------ CreateTopics


@pytest.mark.parametrize("version", [0, 4, 7])
def test_create_topics_asks_the_controller_and_answers_each_topic(version: int) -> None:
    broker = FakeBroker()
    configs = [{"name": "retention.ms", "value": "5"}, {"name": "segment.ms", "value": None}]
    answer = handle(
        broker,
        CREATE_TOPICS,
        version,
        {"topics": [topic("new", 2, 2, configs=configs), topic("old")], "timeout_ms": 5_000},
    )
    [(method, asked)] = broker.controller_calls
    assert method == "create_topics"
    assert [(t.name, t.num_partitions, t.replication_factor, t.config) for t in asked] == [
        ("new", 2, 2, (("retention.ms", "5"),)),
        ("old", 1, 1, ()),
    ]
    assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
        ("new", 0),
        ("old", Errors.TOPIC_ALREADY_EXISTS),
    ]
    assert answer["topics"][1]["error_message"] == ("exists" if version >= 1 else None)


def test_create_topics_minus_one_takes_the_broker_defaults_and_v5_reports_them() -> None:
    broker = FakeBroker()
    answer = handle(broker, CREATE_TOPICS, 5, {"topics": [topic("t", -1, -1)], "timeout_ms": 5_000})
    [(_, [asked])] = broker.controller_calls
    assert (asked.num_partitions, asked.replication_factor) == (3, 2)
    [created] = answer["topics"]
    assert (created["num_partitions"], created["replication_factor"]) == (3, 2)
    assert {c["name"]: (c["value"], c["config_source"]) for c in created["configs"]} == {
        "cleanup.policy": ("delete", int(ConfigSource.DEFAULT_CONFIG)),
        "retention.ms": ("5", int(ConfigSource.TOPIC_CONFIG)),
    }


def test_create_topics_passes_explicit_assignments_and_keeps_minus_one() -> None:
    broker = FakeBroker()
    assignments = [
        {"partition_index": 0, "broker_ids": [1, 0]},
        {"partition_index": 1, "broker_ids": [0, 1]},
    ]
    handle(
        broker,
        CREATE_TOPICS,
        4,
        {"topics": [topic("t", -1, -1, assignments=assignments)], "timeout_ms": 5_000},
    )
    [(_, [asked])] = broker.controller_calls
    assert (asked.num_partitions, asked.replication_factor) == (-1, -1)
    assert asked.replica_assignments == {0: (1, 0), 1: (0, 1)}


def test_create_topics_asks_again_while_the_controller_moves() -> None:
    broker = FakeBroker()
    broker.unreachable, broker.not_controller = 1, 1
    answer = handle(broker, CREATE_TOPICS, 4, {"topics": [topic("t")], "timeout_ms": 5_000})
    assert len(broker.controller_calls) == 3
    assert answer["topics"][0]["error_code"] == 0


def test_create_topics_answers_not_controller_when_none_answers_in_time() -> None:
    broker = FakeBroker()
    broker.unreachable = 1_000
    answer = handle(broker, CREATE_TOPICS, 4, {"topics": [topic("t")], "timeout_ms": 300})
    assert answer["topics"][0]["error_code"] == Errors.NOT_CONTROLLER
    assert "cannot be reached" in answer["topics"][0]["error_message"]


def test_create_topics_times_out_a_topic_this_broker_never_sees_led() -> None:
    broker = FakeBroker()
    broker.hidden.add("slow")
    answer = handle(
        broker, CREATE_TOPICS, 4, {"topics": [topic("slow"), topic("t")], "timeout_ms": 300}
    )
    assert [t["error_code"] for t in answer["topics"]] == [Errors.REQUEST_TIMED_OUT, 0]


def test_create_topics_waits_for_every_briefed_broker_to_see_the_topic_led() -> None:
    broker = FakeBroker()
    broker.peer_view["t"] = TopicMetadata("t", error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
    answer = handle(broker, CREATE_TOPICS, 4, {"topics": [topic("t")], "timeout_ms": 300})
    assert answer["topics"][0]["error_code"] == Errors.REQUEST_TIMED_OUT
    assert "every broker" in answer["topics"][0]["error_message"]
    # A broker the controller has not briefed yet (no controller known) is not waited for.
    broker = FakeBroker()
    broker.peer_controller_id = -1
    broker.peer_view["t"] = TopicMetadata("t", error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
    answer = handle(broker, CREATE_TOPICS, 4, {"topics": [topic("t")], "timeout_ms": 5_000})
    assert answer["topics"][0]["error_code"] == 0


def test_create_topics_with_no_timeout_answers_once_the_controller_accepted() -> None:
    broker = FakeBroker()
    broker.hidden.add("t")
    answer = handle(broker, CREATE_TOPICS, 5, {"topics": [topic("t")], "timeout_ms": 0})
    [created] = answer["topics"]
    assert (created["error_code"], created["num_partitions"]) == (0, -1)


def test_create_topics_validate_only_answers_each_topic_and_creates_none() -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        CREATE_TOPICS,
        4,
        {"topics": [topic("t"), topic("old")], "timeout_ms": 1_000, "validate_only": True},
    )
    assert [t["error_code"] for t in answer["topics"]] == [0, Errors.TOPIC_ALREADY_EXISTS]
    assert "t" not in broker.topics
    assert [method for method, _ in broker.controller_calls] == ["create_topics"]


def test_create_topics_refuses_duplicates_without_asking() -> None:
    broker = FakeBroker()
    twice = handle(
        broker, CREATE_TOPICS, 4, {"topics": [topic("d"), topic("d"), topic("e")], "timeout_ms": 1}
    )
    assert [t["error_code"] for t in twice["topics"]] == [Errors.INVALID_REQUEST] * 2 + [0]
    assert [[t.name for t in asked] for _, asked in broker.controller_calls] == [["e"]]


# ------------------------------------------------------------------ CreatePartitions / DeleteTopics


@pytest.mark.parametrize("version", [0, 3])
def test_create_partitions_grows_topics_with_or_without_assignments(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        CREATE_PARTITIONS,
        version,
        {
            "topics": [
                {
                    "name": "old",
                    "count": 4,
                    "assignments": [{"broker_ids": [1]}, {"broker_ids": [0]}],
                },
                {"name": "ghost", "count": 2, "assignments": None},
            ],
            "timeout_ms": 5_000,
        },
    )
    [(method, asked)] = broker.controller_calls
    assert method == "create_partitions"
    assert asked == {"old": NewPartitions(4, [(1,), (0,)]), "ghost": NewPartitions(2, None)}
    assert asked["old"].new_assignments == [(1,), (0,)]
    assert [(r["name"], r["error_code"]) for r in answer["results"]] == [
        ("old", 0),
        ("ghost", Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert len(broker.topics["old"].partitions) == 4


def test_create_partitions_validate_only_answers_each_topic_and_grows_none() -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        CREATE_PARTITIONS,
        2,
        {
            "topics": [
                {"name": "old", "count": 4, "assignments": None},
                {"name": "ghost", "count": 2, "assignments": None},
            ],
            "timeout_ms": 5_000,
            "validate_only": True,
        },
    )
    assert [r["error_code"] for r in answer["results"]] == [0, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert len(broker.topics["old"].partitions) == 2
    assert [method for method, _ in broker.controller_calls] == ["create_partitions"]


@pytest.mark.parametrize("version", [0, 5])
def test_delete_topics_waits_until_this_broker_forgets_them(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker, DELETE_TOPICS, version, {"topic_names": ["old", "ghost"], "timeout_ms": 5_000}
    )
    assert broker.controller_calls == [("delete_topics", ["old", "ghost"])]
    assert [(r["name"], r["error_code"]) for r in answer["responses"]] == [
        ("old", 0),
        ("ghost", Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert "old" not in broker.topics


def test_delete_topics_v6_deletes_by_name_and_cannot_know_a_topic_id() -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        DELETE_TOPICS,
        6,
        {"topics": [{"name": "old"}, {"name": None}], "timeout_ms": 5_000},
    )
    assert [(r["name"], r["error_code"]) for r in answer["responses"]] == [
        ("old", 0),
        (None, Errors.UNKNOWN_TOPIC_ID),
    ]


def test_delete_topics_times_out_a_topic_a_broker_still_knows() -> None:
    broker = FakeBroker()
    broker.hidden.add("old")
    answer = handle(broker, DELETE_TOPICS, 4, {"topic_names": ["old"], "timeout_ms": 200})
    assert answer["responses"][0]["error_code"] == Errors.REQUEST_TIMED_OUT
    broker = FakeBroker()
    broker.peer_view["old"] = led("old", 2)
    answer = handle(broker, DELETE_TOPICS, 4, {"topic_names": ["old"], "timeout_ms": 200})
    assert answer["responses"][0]["error_code"] == Errors.REQUEST_TIMED_OUT


# ------------------------------------------------------------------ configs


@pytest.mark.parametrize("version", [0, 1, 4])
def test_describe_configs_filters_keys_and_reports_sources(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]},
                {"resource_type": 8, "resource_name": "0", "configuration_keys": None},
                {"resource_type": 2, "resource_name": "missing", "configuration_keys": None},
            ],
            "include_synonyms": True,
        },
    )
    [request] = broker.config_requests
    assert request == DescribeConfigsRequest(
        (
            ConfigResource(ConfigResourceType.TOPIC, "t"),
            ConfigResource(ConfigResourceType.TOPIC, "missing"),
        )
    )
    found, logger, missing = answer["results"]
    [entry] = found["configs"]
    assert (found["error_code"], entry["name"], entry["value"]) == (0, "retention.ms", "5")
    if version == 0:
        assert entry["is_default"] is False
    else:
        assert entry["config_source"] == int(ConfigSource.TOPIC_CONFIG)
        assert [s["name"] for s in entry["synonyms"]] == ["retention.ms", "log.retention.ms"]
    assert (logger["error_code"], logger["resource_type"]) == (Errors.INVALID_REQUEST, 8)
    assert missing["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert missing["error_message"] == "no topic 'missing'"


def test_describe_configs_leaves_synonyms_out_unless_asked() -> None:
    answer = handle(
        FakeBroker(),
        DESCRIBE_CONFIGS,
        2,
        {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}]},
    )
    configs = answer["results"][0]["configs"]
    assert [c["name"] for c in configs] == ["cleanup.policy", "retention.ms"]
    assert all(c["synonyms"] == [] for c in configs)


@pytest.mark.parametrize("version", [0, 2])
def test_alter_configs_replaces_each_resources_overrides(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        ALTER_CONFIGS,
        version,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {"name": "retention.ms", "value": "7"},
                        {"name": "x", "value": None},
                    ],
                },
                {
                    "resource_type": 4,
                    "resource_name": "1",
                    "configs": [{"name": "bad", "value": "1"}],
                },
            ]
        },
    )
    [request] = broker.config_requests
    assert request == AlterConfigsRequest(
        (
            ConfigResource(ConfigResourceType.TOPIC, "t", {"retention.ms": "7"}),
            ConfigResource(ConfigResourceType.BROKER, "1", {"bad": "1"}),
        ),
        incremental=False,
    )
    assert [(r["resource_name"], r["error_code"]) for r in answer["responses"]] == [
        ("t", 0),
        ("1", Errors.INVALID_CONFIG),
    ]
    assert answer["responses"][1]["error_message"] == "bad is not a config"


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_alter_configs_sends_each_operation(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        INCREMENTAL_ALTER_CONFIGS,
        version,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {"name": "retention.ms", "config_operation": 0, "value": "7"},
                        {"name": "segment.ms", "config_operation": 1, "value": None},
                    ],
                },
                {
                    "resource_type": 2,
                    "resource_name": "u",
                    "configs": [{"name": "a", "config_operation": 9, "value": "1"}],
                },
                {
                    "resource_type": 2,
                    "resource_name": "v",
                    "configs": [
                        {"name": "a", "config_operation": 0, "value": "1"},
                        {"name": "a", "config_operation": 1, "value": None},
                    ],
                },
            ]
        },
    )
    [request] = broker.config_requests
    assert request == AlterConfigsRequest(
        (
            ConfigResource(
                ConfigResourceType.TOPIC,
                "t",
                {
                    "retention.ms": AlterConfigOp(AlterConfigOpType.SET, "7"),
                    "segment.ms": AlterConfigOp(AlterConfigOpType.DELETE),
                },
            ),
        ),
        incremental=True,
    )
    assert [r["error_code"] for r in answer["responses"]] == [
        0,
        Errors.INVALID_REQUEST,
        Errors.INVALID_REQUEST,
    ]


@pytest.mark.parametrize("api", [ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS])
def test_validate_only_reaches_the_config_manager_with_the_changes(api: int) -> None:
    broker = FakeBroker()
    config: dict[str, Any] = {"name": "retention.ms", "value": "7"}
    if api == INCREMENTAL_ALTER_CONFIGS:
        config["config_operation"] = 0
    answer = handle(
        broker,
        api,
        1,
        {
            "resources": [{"resource_type": 2, "resource_name": "t", "configs": [config]}],
            "validate_only": True,
        },
    )
    [request] = broker.config_requests
    assert request.validate_only and request.resources[0].name == "t"
    assert answer["responses"][0]["error_code"] == 0


# ------------------------------------------------------------------ records, epochs, cluster


@pytest.mark.parametrize("version", [0, 2])
def test_delete_records_asks_each_partitions_replica(version: int) -> None:
    broker = FakeBroker()
    broker.replica_errors[("t", 1)] = Errors.NOT_LEADER_OR_FOLLOWER
    answer = handle(
        broker,
        DELETE_RECORDS,
        version,
        {
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "offset": 6},
                        {"partition_index": 1, "offset": -1},
                    ],
                }
            ],
            "timeout_ms": 1_000,
        },
    )
    assert [(t, p, m, r) for t, p, m, r in broker.replica_calls] == [
        ("t", 0, "delete_records", DeleteRecordsRequest(6)),
        ("t", 1, "delete_records", DeleteRecordsRequest(-1)),
    ]
    [result] = answer["topics"]
    assert result["name"] == "t"
    assert [
        (p["partition_index"], p["low_watermark"], p["error_code"]) for p in result["partitions"]
    ] == [
        (0, 6, 0),
        (1, -1, Errors.NOT_LEADER_OR_FOLLOWER),
    ]


@pytest.mark.parametrize("version", [0, 2, 3, 4])
def test_offset_for_leader_epoch_asks_the_leader_replica(version: int) -> None:
    broker = FakeBroker()
    answer = handle(
        broker,
        OFFSET_FOR_LEADER_EPOCH,
        version,
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 2, "current_leader_epoch": 4, "leader_epoch": 3}],
                }
            ],
        },
    )
    [(_, _, method, request)] = broker.replica_calls
    assert method == "offsets_for_leader_epoch"
    assert request == OffsetsForLeaderEpochRequest(
        3, -1 if version >= 3 else -2, 4 if version >= 2 else -1
    )
    [partition] = answer["topics"][0]["partitions"]
    assert (partition["partition"], partition["end_offset"]) == (2, 100)
    assert partition["leader_epoch"] == (3 if version >= 1 else -1)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_lists_brokers_with_a_kafka_listener(version: int) -> None:
    answer = handle(FakeBroker(), DESCRIBE_CLUSTER, version, {})
    assert (answer["error_code"], answer["cluster_id"], answer["controller_id"]) == (
        0,
        "cluster-1",
        1,
    )
    assert [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in answer["brokers"]] == [
        (0, "10.0.0.1", 9092, None),
        (1, "kafka-1", 9093, "r1"),
    ]


def test_describe_cluster_has_no_controller_endpoints() -> None:
    answer = handle(FakeBroker(), DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
    assert answer["error_code"] == Errors.UNSUPPORTED_ENDPOINT_TYPE
    assert answer["brokers"] == []


def test_a_sensitive_config_goes_on_the_wire_flagged_and_without_a_value() -> None:
    entry = ConfigEntry(
        "ssl.key.password",
        None,
        ConfigSource.STATIC_BROKER_CONFIG,
        read_only=True,
        synonyms=(ConfigSynonym("ssl.key.password", None, ConfigSource.STATIC_BROKER_CONFIG),),
        is_sensitive=True,
    )
    described = _described_entry(entry, synonyms=True)
    assert (described["value"], described["is_sensitive"]) == (None, True)
    assert [s["value"] for s in described["synonyms"]] == [None]


def test_the_user_apis_are_served_with_the_admin_apis() -> None:
    # DescribeUserScramCredentials and AlterUserScramCredentials (KafkaUserApis).
    assert {50, 51} <= KafkaAdminApis(FakeBroker()).handlers().keys()


def test_the_acl_apis_are_served_with_the_admin_apis() -> None:
    # DescribeAcls, CreateAcls and DeleteAcls (KafkaAclApis).
    assert {29, 30, 31} <= KafkaAdminApis(FakeBroker()).handlers().keys()

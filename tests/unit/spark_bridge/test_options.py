"""Tests for rafka.spark_bridge.options: Spark's Kafka option rules, errors naming the option."""

from __future__ import annotations

import pytest

from rafka.protocol.errors import InvalidConfigError
from rafka.spark_bridge.options import (
    ClusterSettings,
    include_headers,
    parse_cluster,
    parse_duration_ms,
    parse_partition_json,
    parse_sink_options,
    parse_source_options,
)


def source(streaming: bool = False, **options: str):
    return parse_source_options({"subscribe": "t", **options}, streaming)


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(InvalidConfigError) as info:
        call(*args, **kwargs)
    return str(info.value)


def test_defaults_follow_sparks_kafka_source() -> None:
    batch = source()
    stream = source(streaming=True)
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert stream.starting.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.max_offsets_per_trigger is None and batch.min_partitions is None
    assert batch.max_trigger_delay_ms == 15 * 60_000
    assert batch.cluster == ClusterSettings()


def test_keys_are_case_insensitive_as_spark_lowercases_them() -> None:
    options = parse_source_options(
        {"SUBSCRIBE": "a, b", "MaxOffsetsPerTrigger": "10", "includeheaders": "TRUE"}, True
    )
    assert options.selection.topics == ("a", "b")
    assert options.max_offsets_per_trigger == 10
    assert options.include_headers
    assert include_headers({"IncludeHeaders": "true"})


@pytest.mark.parametrize(
    "options, named",
    [
        ({}, "'subscribe'"),
        ({"subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of"),
        ({"subscribe": "t", "subscribePattern": "t.*"}, "'subscribePattern'"),
        ({"subscribe": " , "}, "'subscribe'"),
        ({"subscribePattern": "(unclosed"}, "'subscribePattern'"),
        ({"assign": '{"t": [0, "x"]}'}, "'assign'"),
        ({"assign": "{t:[0]}"}, "'assign': malformed JSON"),
        (
            {"subscribe": "t", "startingOffsets": '{"t": {"0": 5'},
            "'startingOffsets': malformed JSON",
        ),
        ({"subscribe": "t", "startingOffsets": '{"t": {"zero": 5}}'}, "'startingOffsets'"),
        ({"subscribe": "t", "startingOffsets": '{"t": {"0": "5"}}'}, "'startingOffsets'"),
        (
            {"subscribe": "t", "startingOffsets": "latest"},
            "'startingOffsets': 'latest' is not allowed for batch",
        ),
        ({"subscribe": "t", "startingOffsets": '{"t": {"0": -1}}'}, "'startingOffsets'"),
        ({"subscribe": "t", "endingOffsets": "earliest"}, "'endingOffsets'"),
        ({"subscribe": "t", "endingOffsets": '{"t": {"0": -2}}'}, "'endingOffsets'"),
        ({"subscribe": "t", "startingTimestamp": "soon"}, "'startingTimestamp'"),
        (
            {"subscribe": "t", "startingOffsetsByTimestamp": '{"t": {"0": -5}}'},
            "'startingOffsetsByTimestamp'",
        ),
        (
            {"subscribe": "t", "startingOffsetsByTimestampStrategy": "closest"},
            "'startingOffsetsByTimestampStrategy'",
        ),
        ({"subscribe": "t", "maxOffsetsPerTrigger": "0"}, "'maxOffsetsPerTrigger'"),
        (
            {"subscribe": "t", "minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"},
            "'minOffsetsPerTrigger'",
        ),
        ({"subscribe": "t", "maxTriggerDelay": "soon"}, "'maxTriggerDelay'"),
        ({"subscribe": "t", "minPartitions": "many"}, "'minPartitions'"),
        ({"subscribe": "t", "failOnDataLoss": "yes"}, "'failOnDataLoss'"),
        ({"subscribe": "t", "topic": "t"}, "'topic'"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset'"),
        ({"subscribe": "t", "kafka.security.protocol": "SSL"}, "'kafka.security.protocol'"),
        ({"subscribe": "t", "rafka.namespace": " "}, "'rafka.namespace'"),
    ],
)
def test_bad_source_options_name_the_option(options: dict[str, str], named: str) -> None:
    assert named in error_of(parse_source_options, options, False)


def test_ending_offsets_are_refused_in_streaming_queries() -> None:
    assert "'endingOffsets'" in error_of(source, streaming=True, endingOffsets="latest")
    assert "'endingTimestamp'" in error_of(source, streaming=True, endingTimestamp="5")


def test_assign_keeps_each_partition_once_in_order() -> None:
    options = parse_source_options({"assign": '{"a": [1, 0, 1], "b": [2]}'}, False)
    assert options.selection.assignment == (("a", 1), ("a", 0), ("b", 2))


def test_offset_json_keeps_kafkas_sentinels() -> None:
    spec = source(streaming=True, startingOffsets='{"t": {"0": 23, "1": -2, "2": -1}}').starting
    assert spec.kind == "offsets"
    assert dict(spec.offsets) == {("t", 0): 23, ("t", 1): -2, ("t", 2): -1}


def test_timestamp_options_take_precedence_as_in_spark() -> None:
    options = source(
        startingTimestamp="1000",
        startingOffsetsByTimestamp='{"t": {"0": 5}}',
        startingOffsets="earliest",
        endingOffsetsByTimestamp='{"t": {"0": 9}}',
        endingOffsets="latest",
    )
    assert (options.starting.kind, options.starting.timestamp, options.starting.option) == (
        "timestamp",
        1000,
        "startingTimestamp",
    )
    assert (options.ending.kind, dict(options.ending.offsets)) == ("timestamps", {("t", 0): 9})


def test_partition_json_rejects_what_is_not_a_topic_map() -> None:
    assert "expected a JSON object" in error_of(parse_partition_json, "startingOffsets", "[1, 2]")
    assert "must map partition numbers" in error_of(
        parse_partition_json, "startingOffsets", '{"t": 5}'
    )


@pytest.mark.parametrize(
    "raw, ms",
    [
        ("15m", 900_000),
        ("30s", 30_000),
        ("250", 250),
        ("100ms", 100),
        ("1h", 3_600_000),
        ("2min", 120_000),
    ],
)
def test_durations_use_sparks_time_strings(raw: str, ms: int) -> None:
    assert parse_duration_ms("maxTriggerDelay", raw) == ms


def test_cluster_settings() -> None:
    settings = parse_cluster(
        {
            "rafka.ray.address": " 127.0.0.1:6379 ",
            "rafka.namespace": "prod",
            "rafka.cluster.id": "abc",
            "kafka.request.timeout.ms": "5000",
        }
    )
    assert settings == ClusterSettings("127.0.0.1:6379", "prod", "abc", 5000)


def test_sink_options_map_kafka_producer_names() -> None:
    sink = parse_sink_options(
        {
            "topic": "out",
            "acks": "all",
            "linger.ms": "5",
            "kafka.batch.size": "65536",
            "compression.type": "GZIP",
            "checkpointLocation": "/tmp/x",
            "kafka.bootstrap.servers": "ignored:9092",
        }
    )
    config = dict(sink.producer_config)
    assert sink.topic == "out"
    assert config == {
        "acks": "all",
        "linger_ms": 5,
        "batch_size": 65536,
        "compression_type": "gzip",
        "request_timeout_ms": 30_000,
    }


def test_prefixed_producer_setting_wins_over_the_bare_one() -> None:
    for options in (
        {"linger.ms": "1", "kafka.linger.ms": "7"},
        {"kafka.linger.ms": "7", "linger.ms": "1"},
    ):
        assert dict(parse_sink_options(options).producer_config)["linger_ms"] == 7


@pytest.mark.parametrize(
    "options, named",
    [
        ({"acks": "2"}, "'acks'"),
        ({"kafka.linger.ms": "soon"}, "'kafka.linger.ms'"),
        ({"batch.size": "-1"}, "'batch.size'"),
        ({"compression.type": "brotli"}, "'compression.type'"),
        ({"kafka.value.serializer": "x"}, "'kafka.value.serializer'"),
        ({"kafka.transactional.id": "x"}, "'kafka.transactional.id'"),
    ],
)
def test_bad_sink_options_name_the_option(options: dict[str, str], named: str) -> None:
    assert named in error_of(parse_sink_options, options)

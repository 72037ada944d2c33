"""Tests for ``rafka log-dirs`` (rafka.cli.log_dirs): kafka-log-dirs.sh's options and JSON."""

from __future__ import annotations

import json
import re

import pytest

from rafka.cli.log_dirs import format_json
from rafka.cli.main import main
from rafka.protocol.errors import Errors
from rafka.protocol.messages.admin import LogDirDescription, ReplicaLogDirInfo
from rafka.protocol.types import TopicPartition

DESCRIPTIONS = {
    2: (LogDirDescription("/data/broker-2", Errors.KAFKA_STORAGE_ERROR),),
    1: (
        LogDirDescription(
            "/data/broker-1",
            Errors.NONE,
            {
                TopicPartition("t", 1): ReplicaLogDirInfo(10, 3),
                TopicPartition("other", 0): ReplicaLogDirInfo(0, 0),
                TopicPartition("t", 0): ReplicaLogDirInfo(2048, 0),
            },
        ),
    ),
}


def test_the_json_is_kafkas_compact_form_by_broker_and_partition() -> None:
    text = format_json(DESCRIPTIONS)
    assert text.startswith('{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":')
    assert json.loads(text) == {
        "version": 1,
        "brokers": [
            {
                "broker": 1,
                "logDirs": [
                    {
                        "logDir": "/data/broker-1",
                        "error": None,
                        "partitions": [
                            {"partition": "other-0", "size": 0, "offsetLag": 0, "isFuture": False},
                            {"partition": "t-0", "size": 2048, "offsetLag": 0, "isFuture": False},
                            {"partition": "t-1", "size": 10, "offsetLag": 3, "isFuture": False},
                        ],
                    }
                ],
            },
            {
                "broker": 2,
                "logDirs": [
                    {"logDir": "/data/broker-2", "error": "KafkaStorageError", "partitions": []}
                ],
            },
        ],
    }


def test_a_topic_list_keeps_only_those_topics_partitions() -> None:
    found = json.loads(format_json(DESCRIPTIONS, {"t"}))
    partitions = found["brokers"][0]["logDirs"][0]["partitions"]
    assert [p["partition"] for p in partitions] == ["t-0", "t-1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--broker-list", "1,x"], "'1,x' is not a list of broker ids"),
        (["--broker-list", "1"], "the following arguments are required: --describe"),
    ],
)
def test_options_that_cannot_run_are_refused_before_connecting(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["log-dirs", *args])
    assert exited.value.code == 2
    assert re.search(re.escape(message), capsys.readouterr().err)

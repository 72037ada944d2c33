"""The ``rafka`` command against a real cluster: Kafka tools' options and output."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from rafka.cli.main import main
from rafka.cli.perf import consumer_perf
from rafka.clients.admin import Admin
from rafka.clients.producer import Producer
from rafka.cluster.zookeeper_server import ZooKeeperServer
from rafka.protocol.types import OffsetAndMetadata, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.usefixtures("cluster")]
NS = ["--namespace", "rafka-test"]


def test_topics_create_list_and_describe_print_what_kafka_topics_prints(
    capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert (
        main(
            [
                *NS,
                "topics",
                "--create",
                "--topic",
                topic_name,
                # Two partitions of two replicas, placed as given: placement starts at a random
                # broker otherwise.
                "--replica-assignment",
                "0:1,1:2",
                "--config",
                "retention.ms=60000",
            ]
        )
        == 0
    )
    assert f"Created topic {topic_name}." in capsys.readouterr().out
    assert main([*NS, "topics", "--list"]) == 0
    assert topic_name in capsys.readouterr().out.split()
    assert main([*NS, "topics", "--describe", "--topic", topic_name]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert (
        lines[0] == f"Topic: {topic_name}\tPartitionCount: 2\tReplicationFactor: 2\t"
        "Configs: retention.ms=60000"
    )
    assert lines[1] == f"\tTopic: {topic_name}\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1"


def test_a_bad_request_prints_kafkas_error_and_exits_1(
    capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert (
        main([*NS, "topics", "--create", "--topic", topic_name, "--replication-factor", "7"]) == 1
    )
    assert "INVALID_REPLICATION_FACTOR (38)" in capsys.readouterr().err


def test_console_producer_and_consumer_round_trip_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert main([*NS, "topics", "--create", "--topic", topic_name]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("k1:hello\nk2:world\nno-separator\n"))
    assert (
        main(
            [
                *NS,
                "produce",
                "--topic",
                topic_name,
                "--acks",
                "all",
                "--property",
                "parse.key=true",
                "--property",
                "key.separator=:",
            ]
        )
        == 0
    )
    assert "skipped line without key separator" in capsys.readouterr().err
    assert (
        main(
            [
                *NS,
                "consume",
                "--topic",
                topic_name,
                "--from-beginning",
                "--max-messages",
                "2",
                "--property",
                "print.key=true",
                "--property",
                "print.offset=true",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["Offset:0\tk1\thello", "Offset:1\tk2\tworld"]
    assert "Processed a total of 2 messages" in captured.err


def test_consumer_reads_one_partition_from_an_offset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert main([*NS, "topics", "--create", "--topic", topic_name]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"line-{i}\n" for i in range(5))))
    assert main([*NS, "produce", "--topic", topic_name]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                *NS,
                "consume",
                "--topic",
                topic_name,
                "--partition",
                "0",
                "--offset",
                "3",
                "--timeout-ms",
                "3000",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == ["line-3", "line-4"]


def records_printed(out: str) -> list[str]:
    """The console consumer's lines, without the warnings Ray's raylet pushes to this test process
    (a Ray driver of the session's cluster)."""
    return [line for line in out.splitlines() if "(raylet)" not in line]


def test_consume_with_a_group_commits_what_it_printed_and_the_next_run_resumes_after_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    topic_name: str,
    admin: Admin,
) -> None:
    group = f"{topic_name}-group"
    assert main([*NS, "topics", "--create", "--topic", topic_name, "--partitions", "1"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"line-{i}\n" for i in range(5))))
    assert main([*NS, "produce", "--topic", topic_name, "--acks", "all"]) == 0
    capsys.readouterr()
    consume = [*NS, "consume", "--topic", topic_name, "--group", group, "--from-beginning"]
    assert main([*consume, "--max-messages", "3"]) == 0
    assert records_printed(capsys.readouterr().out) == ["line-0", "line-1", "line-2"]
    assert admin.list_group_offsets(group) == {
        TopicPartition(topic_name, 0): OffsetAndMetadata(3, "")
    }
    assert main([*NS, "groups", "--list"]) == 0
    assert group in capsys.readouterr().out.split()
    assert main([*consume, "--timeout-ms", "3000"]) == 0
    captured = capsys.readouterr()
    assert records_printed(captured.out) == ["line-3", "line-4"]
    assert "Processed a total of 2 messages" in captured.err
    assert admin.list_group_offsets(group)[TopicPartition(topic_name, 0)].offset == 5


def test_consume_refuses_a_group_together_with_a_partition(
    capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert main([*NS, "topics", "--create", "--topic", topic_name]) == 0
    command = ["consume", "--topic", topic_name, "--group", "g", "--partition", "0"]
    assert main([*NS, *command]) == 1
    assert "--group and --partition cannot be used together" in capsys.readouterr().err


def test_perf_tools_print_kafkas_summary_lines(
    capsys: pytest.CaptureFixture[str], topic_name: str
) -> None:
    assert main([*NS, "topics", "--create", "--topic", topic_name, "--partitions", "2"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                *NS,
                "perf",
                "produce",
                "--topic",
                topic_name,
                "--num-records",
                "2000",
                "--record-size",
                "50",
                "--throughput",
                "-1",
                "--acks",
                "all",
                "--producer-props",
                "linger_ms=5",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("2000 records sent, ") and "ms 99.9th." in out
    assert main([*NS, "perf", "consume", "--topic", topic_name, "--messages", "2000"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
    assert lines[1].split(", ")[2] == "2000"


def test_consumer_perf_reads_only_the_partitions_given(topic_name: str) -> None:
    assert main([*NS, "topics", "--create", "--topic", topic_name, "--partitions", "3"]) == 0
    # Partitions of different record counts and sizes, so the figures tell which ones were read.
    with Producer(namespace=NS[1]) as producer:
        for partition, records, size in ((0, 10, 5), (1, 100, 7), (2, 20, 3)):
            for _ in range(records):
                producer.send(topic_name, b"x" * size, partition=partition)
        producer.flush()
    read = consumer_perf(NS[1], topic_name, 30, progress=False, partitions=[0, 2])
    assert (read.records, read.bytes) == (30, 10 * 5 + 20 * 3)
    # Asked for more than partitions 0 and 2 hold, it times out rather than reading partition 1.
    short = consumer_perf(
        NS[1], topic_name, 31, timeout_ms=2_000, progress=False, partitions=[0, 2]
    )
    assert short.records == 30


def test_up_and_down_start_and_stop_detached_brokers_on_the_running_ray(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    address = ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "rafka", "--namespace", "rafka-cli-up", "--address", address]
    env = dict(os.environ)
    up = subprocess.run(
        [
            *command,
            "up",
            "--brokers",
            "2",
            "--data-dir",
            str(tmp_path),
            "--zookeeper",
            zookeeper.connect_string + "/rafka/cli-up",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert up.returncode == 0, up.stderr
    assert "brokers [0, 1]" in up.stdout
    state = json.loads((tmp_path / "rafka-cluster.json").read_text())
    assert (
        state["brokers"] == [0, 1]
        and state["started_ray"] is False
        and state["embedded_zookeeper"] is False
    )
    status = subprocess.run(
        [*command, "status"], env=env, capture_output=True, text=True, timeout=120
    )
    assert [b["id"] for b in json.loads(status.stdout)["brokers"]] == [0, 1]
    down = subprocess.run(
        [*command, "down", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert down.returncode == 0, down.stderr
    assert down.stdout.split("\n")[:2] == ["stopped broker 0", "stopped broker 1"]
    with pytest.raises(ValueError):
        ray.get_actor("broker-0", namespace="rafka-cli-up")

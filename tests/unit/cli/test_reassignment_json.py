"""The files of ``rafka reassign-partitions`` (rafka.cli.reassignment_json): Kafka's shapes, and a
message naming the file, the entry and the problem for anything else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rafka.cli.reassignment_json import (
    ReassignmentInputError,
    format_reassignment,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    read_input,
)
from rafka.protocol.types import TopicPartition, partition_name


def entry(
    topic: object = "foo", partition: object = 0, replicas: object = (1, 2)
) -> dict[str, object]:
    """One partition entry of a reassignment file."""
    return {
        "topic": topic,
        "partition": partition,
        "replicas": list(replicas) if isinstance(replicas, tuple) else replicas,
    }


def reassignment(*entries: object, version: object = 1) -> str:
    """A reassignment file's text."""
    return json.dumps({"version": version, "partitions": list(entries)})


def test_topics_to_move_are_read_in_file_order() -> None:
    text = '{"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}'
    assert parse_topics_to_move(text, "t.json") == ["foo", "bar"]


def test_a_file_without_version_is_version_1_as_in_kafka() -> None:
    assert parse_topics_to_move('{"topics":[{"topic":"foo"}]}', "t.json") == ["foo"]
    assert parse_reassignment(json.dumps({"partitions": [entry()]}), "r.json") == {
        TopicPartition("foo", 0): (1, 2)
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version":1,"topics":[{"topic":"foo"}', "t.json is not valid JSON: "),
        ('[{"topic":"foo"}]', "t.json must hold a JSON object with a 'topics' list, not a list"),
        ('{"version":2,"topics":[{"topic":"foo"}]}', "t.json has version 2; the only supported"),
        ('{"version":"1","topics":[{"topic":"foo"}]}', 't.json has version "1"'),
        ('{"version":true,"topics":[{"topic":"foo"}]}', "t.json has version true"),
        ('{"version":1}', "t.json has no 'topics' list"),
        ('{"version":1,"topics":{"topic":"foo"}}', "t.json: 'topics' must be a list, not an"),
        ('{"version":1,"topics":[]}', "t.json: the 'topics' list is empty"),
        ('{"version":1,"topics":["foo"]}', "t.json: topics[0] must be an object, not a string"),
        ('{"version":1,"topics":[{"name":"foo"}]}', 'topics[0] needs a non-empty "topic" string'),
        ('{"version":1,"topics":[{"topic":""}]}', 'topics[0] needs a non-empty "topic" string'),
        (
            '{"version":1,"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}]}',
            "t.json: the list of topics to move names a more than once",
        ),
    ],
)
def test_a_bad_topics_to_move_file_is_refused_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(ReassignmentInputError, match=re.escape(message)):
        parse_topics_to_move(text, "t.json")


def test_a_reassignment_is_read_sorted_by_topic_and_partition() -> None:
    text = reassignment(entry("foo", 1, (3, 4)), entry("bar", 0, (4,)), entry("foo", 0, (4, 3)))
    assert list(parse_reassignment(text, "r.json").items()) == [
        (TopicPartition("bar", 0), (4,)),
        (TopicPartition("foo", 0), (4, 3)),
        (TopicPartition("foo", 1), (3, 4)),
    ]


def test_log_dirs_of_any_are_accepted() -> None:
    item = {**entry(), "log_dirs": ["any", "any"]}
    assert parse_reassignment(reassignment(item), "r.json") == {TopicPartition("foo", 0): (1, 2)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "r.json is not valid JSON: Expecting value"),
        (reassignment(entry(), version=0), "r.json has version 0; the only supported version is 1"),
        ('{"version":1}', "r.json has no 'partitions' list"),
        (reassignment(), "r.json: the 'partitions' list is empty"),
        (reassignment(7), "r.json: partitions[0] must be an object, not a number"),
        (
            reassignment({"partition": 0, "replicas": [1]}),
            'r.json: partitions[0] needs a non-empty "topic" string (got missing)',
        ),
        (
            reassignment(entry(topic=3)),
            'r.json: partitions[0] needs a non-empty "topic" string (got 3)',
        ),
        (
            reassignment({"topic": "foo", "replicas": [1]}),
            'partitions[0] needs a "partition" number (an integer >= 0, got missing)',
        ),
        (reassignment(entry(partition=-1)), "an integer >= 0, got -1"),
        (reassignment(entry(partition="0")), 'an integer >= 0, got "0"'),
        (reassignment(entry(partition=1.5)), "an integer >= 0, got 1.5"),
        (
            reassignment({"topic": "foo", "partition": 2}),
            'r.json: partitions[0] (foo-2) needs a "replicas" list of broker ids (missing)',
        ),
        (reassignment(entry(replicas="1,2")), '"replicas" list of broker ids (a string)'),
        (reassignment(entry(replicas=[])), "r.json: partitions[0] (foo-0) has an empty replica"),
        (
            reassignment(entry(), entry("foo", 1, [1, "2"])),
            'r.json: partitions[1] (foo-1): replicas must be broker ids (integers >= 0), not "2"',
        ),
        (reassignment(entry(replicas=[1, True])), "broker ids (integers >= 0), not true"),
        (reassignment(entry(replicas=[-4])), "broker ids (integers >= 0), not -4"),
        (
            reassignment(entry(replicas=[4, 5, 4, 5, 6])),
            "r.json: partitions[0] (foo-0): the replica list [4, 5, 4, 5, 6] names broker 4, 5 "
            "more than once",
        ),
        (
            reassignment({**entry(), "log_dirs": ["any"]}),
            '"log_dirs" must be a list with one entry per replica (2), got ["any"]',
        ),
        (
            reassignment({**entry(), "log_dirs": ["any", "/data/d2"]}),
            'log directory "/data/d2" cannot be chosen',
        ),
        (
            reassignment(entry("foo", 0), entry("bar", 1), entry("foo", 0, (3,)), entry("bar", 1)),
            "r.json: partition foo-0, bar-1 is listed more than once",
        ),
    ],
)
def test_a_bad_reassignment_file_is_refused_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(ReassignmentInputError, match=re.escape(message)):
        parse_reassignment(text, "r.json")


def test_a_broker_list_is_read_in_order() -> None:
    assert parse_broker_list("4, 5,6") == [4, 5, 6]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--broker-list is empty"),
        (" , ", "--broker-list is empty"),
        ("4,five", "--broker-list '4,five' is not broker ids separated by commas"),
        ("4:5", "is not broker ids separated by commas"),
        ("4,-5", "--broker-list '4,-5' has a negative broker id"),
        ("4,5,4", "--broker-list names broker 4 more than once"),
    ],
)
def test_a_bad_broker_list_is_refused(text: str, message: str) -> None:
    with pytest.raises(ReassignmentInputError, match=re.escape(message)):
        parse_broker_list(text)


def test_an_assignment_prints_as_kafkas_one_line_json_sorted_with_any_log_dirs() -> None:
    text = format_reassignment(
        {
            TopicPartition("foo", 1): (2, 3),
            TopicPartition("bar", 0): [1],
            TopicPartition("foo", 0): (3, 2),
        }
    )
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"bar","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"foo","partition":0,"replicas":[3,2],"log_dirs":["any","any"]},'
        '{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}'
    )


def test_a_printed_assignment_reads_back_as_the_same_assignment() -> None:
    assignment = {TopicPartition("foo", p): (p, p + 1, p + 2) for p in range(12)}
    assert parse_reassignment(format_reassignment(assignment), "r.json") == assignment


def test_a_partition_is_named_as_kafka_names_it() -> None:
    assert partition_name(TopicPartition("my.topic-1", 10)) == "my.topic-1-10"


def test_a_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ReassignmentInputError, match=re.escape(f"cannot read {missing}: ")):
        read_input(missing)

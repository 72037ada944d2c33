"""``rafka --help`` and every subcommand's help are plain text: no reStructuredText markup."""

from __future__ import annotations

import argparse
import re

from rafka.cli import topics
from rafka.cli.main import build_parser

MARKUP = re.compile(r"``|`|::|\*\*")


def every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found.extend(every_parser(child))
    return found


def test_help_of_every_command_is_plain_text() -> None:
    parsers = every_parser(build_parser())
    assert len(parsers) > 8  # rafka, up, down, status, topics, groups, produce, consume, perf, ...
    for parser in parsers:
        text = parser.format_help()
        assert not MARKUP.search(text), f"{parser.prog}: {MARKUP.findall(text)}\n{text}"


def test_the_top_level_help_names_the_command_and_its_purpose() -> None:
    assert "\nThe rafka command: launch a cluster" in build_parser().format_help()


def test_topics_delete_takes_a_regex_matched_against_whole_names() -> None:
    names = ["logs-a", "logs-b", "metrics", "xlogs-a"]
    assert topics.matching_topics("logs-.*", names) == ["logs-a", "logs-b"]
    assert topics.matching_topics("metrics", names) == ["metrics"]
    assert topics.matching_topics("nothing", names) == []
    assert topics.matching_topics("logs-[", ["logs-["]) == ["logs-["]

"""Tests for rafka.actors.zk.config_store's Ray-free parts: users' entity names, sanitized as
Kafka's Sanitizer sanitizes them."""

from __future__ import annotations

import pytest

from rafka.actors.zk.config_store import entity_user, user_entity


@pytest.mark.parametrize(
    ("user", "entity"),
    [
        ("alice", "users/alice"),
        ("a.b-c_d", "users/a.b-c_d"),
        # Java's URLEncoder with Kafka's two replacements: "*" and a space percent-encoded.
        ("ops team*", "users/ops%20team%2A"),
        ("CN=x,O=y/z~", "users/CN%3Dx%2CO%3Dy%2Fz%7E"),
        ("zoë", "users/zo%C3%AB"),
    ],
)
def test_a_user_name_becomes_one_znode_name_and_back(user: str, entity: str) -> None:
    assert user_entity(user) == entity
    assert entity_user(entity.removeprefix("users/")) == user


def test_a_plus_in_a_znode_name_is_a_space_as_kafkas_url_decoding_reads_it() -> None:
    assert entity_user("ops+team") == "ops team"

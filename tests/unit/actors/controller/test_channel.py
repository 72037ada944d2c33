"""Tests for rafka.actors.controller.channel: per-broker order, retry until answered, and stopping
when the broker leaves, with no Ray."""

from __future__ import annotations

import pytest

from rafka.actors.controller.channel import Backoff, BrokerChannel, api_name
from rafka.protocol.messages.control import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)


def test_requests_are_sent_one_at_a_time_in_the_order_they_were_queued() -> None:
    channel: BrokerChannel[str] = BrokerChannel(1)
    for request in ("leader_and_isr-1", "update_metadata-1", "leader_and_isr-2"):
        channel.enqueue(request)
    sent = []
    while (head := channel.head()) is not None:
        sent.append(head)
        assert channel.answered() == head
    assert sent == ["leader_and_isr-1", "update_metadata-1", "leader_and_isr-2"]
    assert channel.answered_total == 3


def test_a_failed_send_keeps_the_head_until_the_broker_answers_it() -> None:
    channel: BrokerChannel[str] = BrokerChannel(1, Backoff(initial_s=0.1, max_s=1.0))
    channel.enqueue("first")
    channel.enqueue("second")
    delays = [channel.failed() for _ in range(6)]
    assert channel.head() == "first"
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    channel.answered()
    assert channel.head() == "second"
    assert channel.failures == 0 and channel.failed_total == 6
    assert channel.failed() == 0.1


def test_a_broker_that_leaves_gets_nothing_more() -> None:
    channel: BrokerChannel[str] = BrokerChannel(1)
    channel.enqueue("a")
    channel.enqueue("b")
    channel.failed()
    assert channel.close() == ["a", "b"]
    assert channel.head() is None and len(channel) == 0
    assert not channel.enqueue("c")
    assert channel.head() is None


@pytest.mark.parametrize(("failures", "delay"), [(0, 0.0), (1, 0.1), (2, 0.2), (3, 0.4), (10, 5.0)])
def test_backoff_grows_exponentially_up_to_its_maximum(failures: int, delay: float) -> None:
    assert Backoff().delay_s(failures) == pytest.approx(delay)


def test_each_control_request_names_the_broker_method_that_handles_it() -> None:
    assert api_name(LeaderAndIsrRequest(0, 1, ())) == "leader_and_isr"
    assert api_name(UpdateMetadataRequest(0, 1, (), ())) == "update_metadata"
    assert api_name(StopReplicaRequest(0, 1, ())) == "stop_replica"

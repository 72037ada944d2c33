"""The transport contract, on the in-process implementation: calls, deadlines, dead actors, and the
transport installed for a namespace reaching clients made without one."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest

from rafka.clients.cluster import ClusterConnection, connect
from rafka.clients.local_transport import LocalTransport
from rafka.clients.transport import NoAnswerError, RemoteError, UnreachableError


class Echo:
    """An actor answering at once, never, or by raising."""

    def echo(self, value: Any) -> Any:
        return value

    def hang(self) -> Future[Any]:
        return Future()

    def fail(self) -> None:
        raise ValueError("broken")


@pytest.fixture
def transport() -> LocalTransport:
    local = LocalTransport("t")
    local.actors["broker-0"] = Echo()
    return local


def test_a_call_is_answered_through_ready_and_result(transport: LocalTransport) -> None:
    call = transport.send(transport.broker(0), "echo", 7)
    assert transport.ready([call], 1, 0) == [call]
    assert transport.result(call, 0) == 7


def test_a_call_not_answered_keeps_its_deadline(transport: LocalTransport) -> None:
    call = transport.send(transport.broker(0), "hang")
    started = time.monotonic()
    assert transport.ready([call], 1, 0.1) == []
    with pytest.raises(NoAnswerError):
        transport.result(call, 0.1)
    assert time.monotonic() - started < 0.5


def test_a_dead_actor_is_unreachable_at_lookup_and_at_its_answer(
    transport: LocalTransport,
) -> None:
    endpoint = transport.broker(0)
    transport.dead.add("broker-0")
    assert transport.broker_ids() == []
    with pytest.raises(UnreachableError):
        transport.broker(0)
    with pytest.raises(UnreachableError):
        transport.result(transport.send(endpoint, "echo", 1), 0)


def test_an_actor_that_raises_reaches_callbacks_as_remote_error(
    transport: LocalTransport,
) -> None:
    answers: list[Future[Any]] = []
    transport.on_done(transport.send(transport.broker(0), "fail"), answers.append)
    with pytest.raises(RemoteError, match="broken"):
        transport.answer(answers[0])


def test_clients_without_a_transport_use_the_one_installed_for_their_namespace(
    fake_cluster: Any,
) -> None:
    assert connect(fake_cluster.transport.namespace, None) is fake_cluster.transport
    assert ClusterConnection().transport is fake_cluster.transport

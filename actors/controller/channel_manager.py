"""The controller's channels to the brokers over Ray (Kafka's ControllerChannelManager).

One task per broker drains that broker's ``BrokerChannel``: it calls the broker actor's control
method for the head request, waits for the answer (at most ``request_timeout_s``), and on a failed
send looks the actor up again after the channel's backoff. Every answer resolves the future that
``send`` returned and is passed to ``on_answer``; the controller turns answers carrying errors into
events for its core. A broker method that raised counts as an answer with UNKNOWN_SERVER_ERROR:
sending the same request again would raise again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray

from rafka.actors import names
from rafka.actors.controller.channel import Backoff, BrokerChannel, api_name
from rafka.actors.controller.effects import ControlRequest
from rafka.actors.state_change import (
    ChangeFields,
    describe_state,
    log_state_change,
    partition_name,
)
from rafka.protocol.errors import Errors
from rafka.protocol.messages.control import (
    ControlResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
)

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0
"""Kafka's controller.socket.timeout.ms: how long one send may wait for its answer."""

ControlAnswer = LeaderAndIsrResponse | ControlResponse


@dataclass(eq=False)
class _Queued:
    request: ControlRequest
    answer: asyncio.Future[ControlAnswer | None]


class ControllerChannelManager:
    """Per-broker ordered, acknowledged delivery of control requests."""

    def __init__(
        self,
        namespace: str,
        on_answer: Callable[[int, ControlRequest, ControlAnswer], None],
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        backoff: Backoff | None = None,
    ) -> None:
        self.namespace = namespace
        self._on_answer = on_answer
        self._timeout_s = request_timeout_s
        self._backoff = backoff or Backoff()
        self._channels: dict[int, BrokerChannel[_Queued]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._handles: dict[int, Any] = {}
        self._correlation_ids = itertools.count()

    def send(self, broker_id: int, request: ControlRequest) -> asyncio.Future[ControlAnswer | None]:
        """Queue a request for a broker; the future gets its answer, or None if the broker leaves
        before answering."""
        if broker_id not in self._channels:
            self._channels[broker_id] = BrokerChannel(broker_id, self._backoff)
            self._wake[broker_id] = asyncio.Event()
            self._tasks[broker_id] = asyncio.get_running_loop().create_task(self._drain(broker_id))
        request = dataclasses.replace(request, correlation_id=next(self._correlation_ids))
        _log_sending(broker_id, request)
        queued = _Queued(request, asyncio.get_running_loop().create_future())
        self._channels[broker_id].enqueue(queued)
        self._wake[broker_id].set()
        return queued.answer

    def remove_broker(self, broker_id: int) -> None:
        """The broker left ``/brokers/ids``: stop sending to it, drop what it has not answered."""
        channel = self._channels.pop(broker_id, None)
        if channel is None:
            return
        self._wake.pop(broker_id)
        self._tasks.pop(broker_id).cancel()
        self._handles.pop(broker_id, None)
        for queued in channel.close():
            if not queued.answer.done():
                queued.answer.set_result(None)

    def close(self) -> None:
        """Stop every channel."""
        for broker_id in list(self._channels):
            self.remove_broker(broker_id)

    def describe(self) -> dict[int, dict[str, int]]:
        """Per broker: requests queued (the head may be in flight), answered, and failed sends."""
        return {
            broker_id: {
                "queued": len(channel),
                "answered": channel.answered_total,
                "failed_sends": channel.failed_total,
            }
            for broker_id, channel in sorted(self._channels.items())
        }

    async def _drain(self, broker_id: int) -> None:
        channel = self._channels[broker_id]
        wake = self._wake[broker_id]
        while not channel.closed:
            queued = channel.head()
            if queued is None:
                wake.clear()
                await wake.wait()
                continue
            try:
                answer = await self._send_once(broker_id, queued.request)
            except (ValueError, asyncio.TimeoutError, ray.exceptions.RayError) as exc:
                self._handles.pop(broker_id, None)
                delay = channel.failed()
                logger.warning(
                    "%s to broker %d failed (%d in a row), retrying in %.1fs: %r",
                    api_name(queued.request),
                    broker_id,
                    channel.failures,
                    delay,
                    exc,
                )
                log_state_change(
                    ChangeFields(
                        queued.request.controller_id,
                        queued.request.controller_epoch,
                        queued.request.correlation_id,
                    ),
                    "[Channel to broker %d] %s failed (%d in a row), retrying in %.1fs: %s",
                    broker_id,
                    api_name(queued.request),
                    channel.failures,
                    delay,
                    type(exc).__name__,
                )
                await asyncio.sleep(delay)
                continue
            channel.answered()
            if not queued.answer.done():
                queued.answer.set_result(answer)
            self._on_answer(broker_id, queued.request, answer)

    async def _send_once(self, broker_id: int, request: ControlRequest) -> ControlAnswer:
        handle = self._handles.get(broker_id)
        if handle is None:
            handle = self._handles[broker_id] = ray.get_actor(
                names.broker_actor_name(broker_id), namespace=self.namespace
            )
        ref = getattr(handle, api_name(request)).remote(request)
        try:
            answer: ControlAnswer = await asyncio.wait_for(
                asyncio.wrap_future(ref.future()), self._timeout_s
            )
        except ray.exceptions.RayActorError:
            raise
        except ray.exceptions.RayTaskError as exc:
            logger.error("broker %d raised on %s: %s", broker_id, api_name(request), exc)
            if isinstance(request, LeaderAndIsrRequest):
                return LeaderAndIsrResponse(Errors.UNKNOWN_SERVER_ERROR)
            return ControlResponse(Errors.UNKNOWN_SERVER_ERROR)
        return answer


def _log_sending(broker_id: int, request: ControlRequest) -> None:
    """One state-change line per partition of a LeaderAndIsr or StopReplica going out."""
    if isinstance(request, LeaderAndIsrRequest):
        for p in request.partitions:
            log_state_change(
                ChangeFields(
                    request.controller_id,
                    request.controller_epoch,
                    request.correlation_id,
                    partition_name(p),
                ),
                "[Controller id=%d epoch=%d] sending LeaderAndIsr to broker %d: %s",
                request.controller_id,
                request.controller_epoch,
                broker_id,
                describe_state(p),
            )
    elif isinstance(request, StopReplicaRequest):
        for topic, partition in request.partitions:
            log_state_change(
                ChangeFields(
                    request.controller_id,
                    request.controller_epoch,
                    request.correlation_id,
                    f"{topic}-{partition}",
                ),
                "[Controller id=%d epoch=%d] sending StopReplica (delete %s) to broker %d",
                request.controller_id,
                request.controller_epoch,
                request.delete,
                broker_id,
            )

"""Gather every live broker's metric families, for rafka's Prometheus endpoint and the console.

Each broker answers ``metrics_snapshot`` with its own families, its replicas', its controller's and
its group coordinator's (consumer lag included), so one call per broker covers the cluster. A broker
that does not answer within the timeout is left out of that scrape, not waited for: a scrape must
answer while a broker is down, which is when people look.
"""

from __future__ import annotations

import asyncio

import ray

from rafka.actors.names import DEFAULT_NAMESPACE, broker_id_of
from rafka.metrics.registry import MetricFamily, merge

SCRAPE_TIMEOUT_S = 5.0
"""How long a scrape waits for the brokers' answers."""


def broker_handles(namespace: str = DEFAULT_NAMESPACE) -> dict[int, ray.actor.ActorHandle]:
    """The live broker actors of the cluster in ``namespace``, by broker id."""
    handles = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] != namespace:
            continue
        broker_id = broker_id_of(entry["name"])
        if broker_id is not None:
            try:
                handles[broker_id] = ray.get_actor(entry["name"], namespace=namespace)
            except ValueError:  # it died between the listing and the lookup
                continue
    return dict(sorted(handles.items()))


def scrape(
    namespace: str = DEFAULT_NAMESPACE, timeout_s: float = SCRAPE_TIMEOUT_S
) -> list[MetricFamily]:
    """Every answering broker's families, merged by metric name (Ray must be initialised)."""
    refs = [handle.metrics_snapshot.remote() for handle in broker_handles(namespace).values()]
    ready, _late = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    answers: list[list[MetricFamily]] = []
    for ref in ready:
        try:
            answers.append(ray.get(ref))
        except ray.exceptions.RayError:  # a broker that died while answering
            continue
    return merge(answers)


async def scrape_async(
    namespace: str = DEFAULT_NAMESPACE, timeout_s: float = SCRAPE_TIMEOUT_S
) -> list[MetricFamily]:
    """``scrape`` for an event loop (an async actor or web handler): awaits instead of blocking."""

    async def answer(handle: ray.actor.ActorHandle) -> list[MetricFamily] | None:
        try:
            found: list[MetricFamily] = await asyncio.wait_for(
                handle.metrics_snapshot.remote(), timeout_s
            )
        except (ray.exceptions.RayError, asyncio.TimeoutError):
            return None
        return found

    handles = broker_handles(namespace).values()
    answers = await asyncio.gather(*(answer(handle) for handle in handles))
    return merge(found for found in answers if found is not None)

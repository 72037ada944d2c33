"""The Ray transport on real actors: a handle cached for a name that outlives its actor (a
restarted broker's controller, say) is dropped at the first unreachable answer, so the next lookup
of the name reaches the new actor."""

from __future__ import annotations

import pytest
import ray

from rafka.actors import names
from rafka.clients.ray_transport import RayTransport
from rafka.clients.transport import UnreachableError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
NS = "rafka-transport"


@ray.remote(num_cpus=0)
class Generation:
    """An actor that tells which incarnation of its name it is."""

    def __init__(self, generation: int) -> None:
        self.generation = generation

    def which(self) -> int:
        return self.generation


def start(name: str, generation: int) -> ray.actor.ActorHandle:
    handle = Generation.options(  # type: ignore[attr-defined]
        name=name, namespace=NS, lifetime="detached"
    ).remote(generation)
    ray.get(handle.which.remote())
    return handle


def test_a_name_whose_actor_was_replaced_reaches_the_new_actor_after_one_unreachable_answer(
    ray_nodes: list[str],
) -> None:
    transport = RayTransport(namespace=NS)
    name = names.controller_actor_name(2)
    first = start(name, 1)
    assert transport.request(transport.controller(2), "which", timeout_s=30) == 1
    ray.kill(first)
    second = start(name, 2)
    with pytest.raises(UnreachableError):
        transport.request(transport.controller(2), "which", timeout_s=30)
    try:
        assert transport.request(transport.controller(2), "which", timeout_s=30) == 2
    finally:
        ray.kill(second)

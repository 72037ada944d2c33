"""Ray's failure detection for the controller: one call kept outstanding on an actor, which Ray
fails as soon as that actor's process dies, seconds before its ZooKeeper session expires."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ray

# Ray raises ActorUnavailableError when it cannot reach a live actor for a moment (a slow or broken
# connection on a loaded machine); asking again after this pause tells that apart from a death.
UNAVAILABLE_RETRY_S = 0.5


async def await_death(resolve: Callable[[], Any], died: Callable[[], None]) -> None:
    """Keep one ``wait_until_stopped`` call outstanding on the actor ``resolve`` returns and call
    ``died`` once Ray reports its process gone; return quietly if it stops cleanly.

    ``resolve`` raising ValueError means no actor has the name, so the process is already gone (a
    new controller learns of it before the dead process's session expires). An actor Ray only
    reports unavailable may be alive, so the call is made again rather than failing over a live
    broker: if the process did die, the next call says so.
    """
    while True:
        try:
            await resolve().wait_until_stopped.remote()
            return
        except ray.exceptions.ActorUnavailableError:
            await asyncio.sleep(UNAVAILABLE_RETRY_S)
        except (ray.exceptions.RayActorError, ValueError):
            died()
            return

"""rafka's own Prometheus endpoint (``rafka up --metrics-port``): one page with every broker's
metrics, for users who do not scrape Ray's per-node endpoints.

A detached actor on the node that ran ``rafka up`` serves ``/metrics`` with aiohttp; each scrape
asks every live broker for its snapshot (``rafka.metrics.scrape``), so it answers while a broker is
down, with that broker left out.
"""

from __future__ import annotations

from aiohttp import web

from rafka.actors.process import configure_actor_logging
from rafka.metrics.exposition import CONTENT_TYPE, render
from rafka.metrics.scrape import scrape_async


class MetricsEndpoint:
    """Ray actor serving the cluster's metrics at ``http://host:port/metrics``."""

    def __init__(self, namespace: str, host: str, port: int) -> None:
        configure_actor_logging()
        self.namespace = namespace
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Bind and serve (idempotent); the endpoint's URL."""
        if self._runner is None:
            app = web.Application()
            app.router.add_get("/metrics", self._metrics)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, self.host, self.port).start()
            self._runner = runner
        return self.url()

    def url(self) -> str:
        """Where the endpoint serves."""
        return f"http://{self.host}:{self.port}/metrics"

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = render(await scrape_async(self.namespace))
        return web.Response(body=body.encode(), headers={"Content-Type": CONTENT_TYPE})

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

"""The console's web app (rafka.console.app) through aiohttp's test client against the fake admin:
every page renders what the cluster says, missing metrics show "—", an operation goes form ->
confirmation -> job, bad input comes back at its field, read-only refuses changes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp.test_utils import TestClient, TestServer

from rafka.console.app import CONSOLE, Settings, create_app
from rafka.console.source import ClusterSource
from rafka.metrics import catalog
from rafka.metrics.exposition import CONTENT_TYPE
from rafka.metrics.registry import MetricFamily, MetricsRegistry
from rafka.protocol.types import TopicPartition
from rafka.testing import wait_until

from .conftest import FakeAdmin, member

T = TypeVar("T")
Session = Callable[[TestClient], Awaitable[T]]


def browse(source: ClusterSource, session: Session[T], read_only: bool = False) -> T:
    """Run ``session`` against a console app for ``source``."""

    async def main() -> T:
        app = create_app(source, Settings(read_only=read_only))
        async with TestClient(TestServer(app)) as client:
            return await session(client)

    return asyncio.run(main())


def row(html: str, attribute: str, value: str) -> str:
    """The table row carrying ``attribute="value"``."""
    found = re.search(rf'<tr {attribute}="{re.escape(value)}".*?</tr>', html, re.S)
    assert found is not None, f"no row {attribute}={value}"
    return found.group(0)


def cell(html: str, css: str) -> str:
    found = re.search(rf'<td class="{css}">(.*?)</td>', html, re.S)
    assert found is not None, f"no cell {css}"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def populated(admin: FakeAdmin) -> FakeAdmin:
    admin.add_topic("orders", [[0, 1], [1, 2]], isrs=[[0, 1], [1]], config={"retention.ms": "1000"})
    admin.offsets = {TopicPartition("orders", 0): (2, 10), TopicPartition("orders", 1): (0, 7)}
    admin.sizes = {(TopicPartition("orders", 0), 0): 2048}
    admin.add_group(
        "billing",
        "Stable",
        [member("m-1", [("orders", 0), ("orders", 1)])],
        {TopicPartition("orders", 0): 4, TopicPartition("orders", 1): 7},
    )
    return admin


def test_the_cluster_page_shows_brokers_controller_and_under_replicated_partitions(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    populated(admin)

    async def session(client: TestClient) -> str:
        response = await client.get("/")
        assert response.status == 200
        return await response.text()

    html = browse(source, session)
    assert 'id="controller">broker 0<' in html and 'id="controller-epoch">7<' in html
    broker_1 = row(html, "data-broker", "1")
    assert (cell(broker_1, "host"), cell(broker_1, "partitions"), cell(broker_1, "leaders")) == (
        "10.0.0.2",
        "2",
        "1",
    )
    assert cell(broker_1, "messages-in") == "—"  # no broker reports metrics
    under = re.search(r'<table id="under-replicated">.*?</table>', html, re.S)
    assert under is not None
    assert re.findall(r'data-partition="([^"]+)"', under.group(0)) == ["orders-1"]
    assert 'id="no-offline"' in html


def test_topic_list_and_topic_page_show_partitions_isr_offsets_and_configs(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    populated(admin)

    async def session(client: TestClient) -> tuple[str, str, int]:
        listing = await (await client.get("/topics")).text()
        page = await (await client.get("/topics/orders")).text()
        missing = await client.get("/topics/ghost")
        return listing, page, missing.status

    listing, page, missing = browse(source, session)
    orders = row(listing, "data-topic", "orders")
    assert (cell(orders, "partitions"), cell(orders, "replication-factor")) == ("2", "2")
    assert (cell(orders, "under-replicated"), cell(orders, "size")) == ("1", "2.0 KiB")
    first = row(page, "data-partition", "0")
    assert (cell(first, "leader"), cell(first, "replicas"), cell(first, "isr")) == (
        "0",
        "0,1",
        "0,1",
    )
    assert (cell(first, "log-start"), cell(first, "log-end"), cell(first, "preferred")) == (
        "2",
        "10",
        "yes",
    )
    assert cell(row(page, "data-partition", "1"), "isr") == "1"
    assert cell(row(page, "data-config", "retention.ms"), "value") == "1000"
    assert missing == 404


def test_group_pages_show_members_assignments_and_lag(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    populated(admin)

    async def session(client: TestClient) -> tuple[str, str]:
        listing = await (await client.get("/groups")).text()
        page = await (await client.get("/groups/billing")).text()
        return listing, page

    listing, page = browse(source, session)
    billing = row(listing, "data-group", "billing")
    assert (cell(billing, "state"), cell(billing, "members"), cell(billing, "lag")) == (
        "Stable",
        "1",
        "6",
    )
    assert cell(row(page, "data-member", "m-1"), "assignment") == "orders-0, orders-1"
    lag = row(page, "data-partition", "orders-0")
    assert (cell(lag, "committed"), cell(lag, "log-end"), cell(lag, "lag")) == ("4", "10", "6")
    assert cell(row(page, "data-partition", "orders-1"), "lag") == "0"


def test_create_topic_goes_form_confirmation_job_and_bad_input_stays_at_its_field(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    async def session(client: TestClient) -> tuple[str, str, str, dict[str, object]]:
        form = await (await client.get("/operations/create-topic")).text()
        token = re.search(r'name="token" value="([^"]+)"', form)
        assert token is not None
        fields = {
            "token": token.group(1),
            "name": "orders",
            "partitions": "-1",
            "replication_factor": "1",
            "configs": "",
        }
        refused = await client.post("/operations/create-topic", data=fields)
        assert refused.status == 422
        bad = await refused.text()
        fields["partitions"] = "2"
        confirm = await (await client.post("/operations/create-topic", data=fields)).text()
        started = await client.post(
            "/operations/create-topic/run", data=fields, allow_redirects=False
        )
        assert started.status == 303
        location = started.headers["Location"]
        job_page = await (await client.get(location)).text()
        job_id = location.rsplit("/", 1)[1]

        jobs = client.app[CONSOLE].jobs
        await asyncio.to_thread(
            wait_until, lambda: jobs.get(job_id).done, 10, "the create-topic job to end"
        )
        job = await (await client.get(f"/api/jobs/{job_id}")).json()
        return bad, confirm, job_page, job

    bad, confirm, job_page, job = browse(source, session)
    expected = "INVALID_PARTITIONS (37): number of partitions must be at least 1, got -1"
    assert f'id="error-partitions">{expected}<' in bad
    assert "Create topic orders with 2 partitions of replication factor 1." in confirm
    assert 'id="confirm-button"' in confirm
    assert "Job #1: Create topic: orders" in job_page
    assert job["state"] == "succeeded", job
    assert [name for name, *_ in admin.changes] == ["create_topics"]
    assert admin.list_topics() == ["orders"]


def test_read_only_hides_operations_and_refuses_them(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    populated(admin)

    async def session(client: TestClient) -> tuple[str, int, int]:
        page = await (await client.get("/topics/orders")).text()
        form = await client.get("/operations/delete-topic?topic=orders")
        post = await client.post("/operations/delete-topic/run", data={"topic": "orders"})
        return page, form.status, post.status

    page, form, post = browse(source, session, read_only=True)
    assert "data-operation" not in page and 'id="read-only"' in page
    assert (form, post) == (403, 403)
    assert admin.changes == [] and admin.list_topics() == ["orders"]


def test_a_post_without_the_consoles_token_is_refused(
    admin: FakeAdmin, source: ClusterSource
) -> None:
    populated(admin)

    async def session(client: TestClient) -> int:
        response = await client.post("/operations/delete-topic/run", data={"topic": "orders"})
        return response.status

    assert browse(source, session) == 403
    assert admin.list_topics() == ["orders"]


def test_metrics_are_served_for_prometheus_and_charted(
    admin: FakeAdmin, source: ClusterSource, families: list[MetricFamily]
) -> None:
    registry = MetricsRegistry()
    registry.counter(catalog.MESSAGES_IN, broker=0, topic="orders").inc(5)
    families.extend(registry.collect())
    populated(admin)

    async def session(client: TestClient) -> tuple[str, str, list[dict[str, object]], str]:
        response = await client.get("/metrics")
        console = client.app[CONSOLE]
        await console.sample()  # a second sample: lag has two points, rates one
        lag = await (await client.get("/api/charts/lag?group=billing")).json()
        script = await (await client.get("/static/console.js")).text()
        return response.headers["Content-Type"], await response.text(), lag["series"], script

    content_type, text, lag, script = browse(source, session)
    assert content_type == CONTENT_TYPE
    assert 'rafka_messages_in_total{broker="0",topic="orders"} 5' in text
    assert {s["name"] for s in lag} == {"orders-0", "orders-1"}
    assert "figure.chart" in script

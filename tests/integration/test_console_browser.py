"""The web console (``rafka console``) in a real browser against the session's cluster.

``rafka console`` runs as a user runs it, a subprocess with a user's environment; headless Chromium
(Debian's package, driven by playwright's sync API, never a downloaded browser) opens every page and
checks the brokers, topics, ISR and lag shown against what the admin client says; creates and
deletes a topic through the forms and their confirmation; sends bad input and finds Kafka's error
text next to the field with nothing changed; and finds no operation in a ``--read-only`` console.
Each page is saved to ``docs/console/`` for the README.

When ``/usr/bin/chromium`` is missing the module installs Debian's ``chromium`` with ``apt-get``
(as root); it is skipped, saying why, only when that is impossible.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray

from rafka.clients.admin import Admin
from rafka.clients.producer import Producer
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.messages.offsets import LATEST_TIMESTAMP
from rafka.protocol.types import TopicPartition
from rafka.testing import user_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
VENV_BIN = Path(sys.executable).parent
APT_TIMEOUT_S = 600
START_TIMEOUT_S = 120
PAGE_TIMEOUT_MS = 60_000

TOPIC = "console-orders"
TRAFFIC = "console-traffic"
GROUP = "console-lagging"
PER_PARTITION = 15
COMMITTED = {0: 5, 1: 10}
"""The lagging group's committed offset per partition of TOPIC: its lag is 10 and 5."""


def _apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["apt-get", "-q", *args],
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        capture_output=True,
        text=True,
        timeout=APT_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium, installed with apt-get (as root) if it is not there yet."""
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(
            f"{CHROMIUM} is missing and only root with apt-get can install Debian's chromium"
        )
    attempt = _apt_get("install", "-y", "chromium")
    if attempt.returncode != 0:  # a fresh machine may have no package lists yet
        _apt_get("update")
        attempt = _apt_get("install", "-y", "chromium")
    if not CHROMIUM.exists():
        pytest.skip(f"apt-get could not install chromium: {attempt.stderr.strip()[-400:]}")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Any]:
    """One headless Chromium for the module, driven by playwright."""
    driver = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
    )
    with driver.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def status_of(url: str) -> int:
    """The HTTP status ``url`` answers with."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


@contextmanager
def running_console(cluster: LocalCluster, log: Path, *options: str) -> Iterator[str]:
    """``rafka console`` for the cluster, started as a user starts it; yields its URL."""
    port = free_port()
    address = ray.get_runtime_context().gcs_address
    command = [str(VENV_BIN / "rafka"), "--namespace", cluster.namespace, "--address", address]
    with log.open("w") as output:
        process = subprocess.Popen(
            [*command, "console", "--port", str(port), "--refresh-ms", "1000", *options],
            env=user_env(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: process.poll() is not None or status_of(url + "/") == 200,
            START_TIMEOUT_S,
            f"the console to answer at {url}",
        )
        assert process.poll() is None, f"rafka console exited: {log.read_text()}"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def lagging_group(cluster: LocalCluster, admin: Admin) -> Iterator[None]:
    """TOPIC with PER_PARTITION records in each of its two partitions, and GROUP, whose one member
    keeps polling it but has committed only COMMITTED."""
    admin.create_topic(TOPIC, num_partitions=2, replication_factor=3)
    with Producer(namespace=cluster.namespace, acks="all") as producer:
        futures = [
            producer.send(TOPIC, key=f"k{i}".encode(), value=b"x" * 100, partition=p)
            for i in range(PER_PARTITION)
            for p in COMMITTED
        ]
        for future in futures:
            future.get(timeout=60)
    committed = threading.Event()
    stop = threading.Event()

    def member() -> None:
        # A consumer is driven from one thread: this one joins, commits, then keeps polling (its
        # position moves on, its committed offsets do not) so that it stays a member.
        with cluster.consumer(
            TOPIC,
            group_id=GROUP,
            client_id="console-test",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        ) as consumer:
            while len(consumer.assignment()) < len(COMMITTED) and not stop.is_set():
                consumer.poll(timeout_ms=200)
            consumer.commit({TopicPartition(TOPIC, p): o for p, o in COMMITTED.items()})
            committed.set()
            while not stop.is_set():
                consumer.poll(timeout_ms=200)

    thread = threading.Thread(target=member, daemon=True)
    thread.start()
    wait_until(committed.is_set, 120, f"group {GROUP} to commit its offsets")
    yield
    stop.set()
    thread.join(timeout=60)


@pytest.fixture(scope="module")
def traffic(cluster: LocalCluster, admin: Admin) -> Iterator[None]:
    """A trickle of records into TRAFFIC, read back as they come, so that the throughput charts
    have something to draw while the pages are looked at."""
    admin.create_topic(TRAFFIC, num_partitions=1, replication_factor=2)
    stop = threading.Event()

    def flow() -> None:
        with (
            cluster.producer(acks=1) as producer,
            cluster.consumer(group_id=None, auto_offset_reset="earliest") as consumer,
        ):
            consumer.assign([TopicPartition(TRAFFIC, 0)])
            # About ten records a second: enough for the charts, little for two cores.
            while not stop.wait(0.1):
                producer.send(TRAFFIC, value=b"t" * 500)
                consumer.poll(timeout_ms=50)

    thread = threading.Thread(target=flow, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=60)


@pytest.fixture(scope="module")
def console(
    cluster: LocalCluster,
    lagging_group: None,
    traffic: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The console of the session's cluster, with operations on."""
    log = tmp_path_factory.mktemp("console") / "console.log"
    with running_console(cluster, log) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page, 1280 pixels wide."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(PAGE_TIMEOUT_MS)
    yield opened
    context.close()


CHARTS_DRAWN = (
    "[...document.querySelectorAll('figure.chart figcaption')].every(c => c.textContent !== '—')"
)
"""Whether every chart of the page has been drawn from its JSON at least once."""


def screenshot(page: Any, name: str) -> None:
    """Save the page, once its charts are drawn, as docs/console/<name>.png."""
    page.wait_for_function(CHARTS_DRAWN)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def cells(row: Any) -> dict[str, str]:
    """A table row's cells by their class."""
    found: dict[str, str] = row.evaluate(
        "r => Object.fromEntries([...r.cells].map(c => [c.className, c.innerText.trim()]))"
    )
    return found


def test_the_cluster_page_shows_each_broker_and_the_controller(
    console: str, page: Any, admin: Admin
) -> None:
    page.goto(console + "/")
    # A line needs two rates, three samples of the running history; the table's rates need two.
    page.wait_for_selector("figure.chart polyline", state="attached")
    page.reload()
    screenshot(page, "cluster")
    truth = admin.describe_cluster()
    hosted: dict[int, int] = {}
    led: dict[int, int] = {}
    for name in admin.list_topics():
        for p in admin.describe_topic(name).partitions:
            for replica in p.replicas:
                hosted[replica] = hosted.get(replica, 0) + 1
            led[p.leader] = led.get(p.leader, 0) + 1
    assert page.inner_text("#controller") == f"broker {truth.controller_id}"
    assert page.inner_text("#controller-epoch").isdigit()
    rows = page.locator("#brokers tbody tr")
    assert rows.count() == len(truth.brokers)
    for broker in truth.brokers:
        shown = cells(page.locator(f'#brokers tr[data-broker="{broker.broker_id}"]'))
        assert shown["host"] == broker.host
        assert shown["state"] == "online"
        assert shown["partitions"] == str(hosted.get(broker.broker_id, 0))
        assert shown["leaders"] == str(led.get(broker.broker_id, 0))
    assert page.locator("#no-offline").count() == 1


def test_topic_list_and_topic_page_show_partitions_isr_and_offsets(
    console: str, page: Any, admin: Admin
) -> None:
    page.goto(console + "/topics")
    screenshot(page, "topics")
    shown = cells(page.locator(f'#topics tr[data-topic="{TOPIC}"]'))
    assert (shown["partitions"], shown["replication-factor"]) == ("2", "3")
    assert shown["size"] != "—"
    page.click(f'#topics tr[data-topic="{TOPIC}"] a')
    page.wait_for_selector("#partitions")
    screenshot(page, "topic")
    described = admin.describe_topic(TOPIC)
    ends = admin.list_offsets([TopicPartition(TOPIC, p) for p in COMMITTED], LATEST_TIMESTAMP)
    for p in described.partitions:
        row = cells(page.locator(f'#partitions tr[data-partition="{p.partition}"]'))
        assert row["leader"] == str(p.leader)
        assert row["replicas"] == ",".join(map(str, p.replicas))
        assert row["isr"] == ",".join(map(str, p.isr))
        assert row["log-end"] == str(ends[TopicPartition(TOPIC, p.partition)].offset)
        assert row["log-start"] == "0"


def test_group_pages_show_the_member_its_assignment_and_lag(
    console: str, page: Any, admin: Admin
) -> None:
    page.goto(console + "/groups")
    screenshot(page, "groups")
    lags = {p: PER_PARTITION - o for p, o in COMMITTED.items()}
    listed = cells(page.locator(f'#groups tr[data-group="{GROUP}"]'))
    assert (listed["state"], listed["members"], listed["lag"]) == (
        "Stable",
        "1",
        str(sum(lags.values())),
    )
    page.click(f'#groups tr[data-group="{GROUP}"] a')
    # Two samples make a line in the lag chart.
    page.wait_for_selector("figure.chart polyline", state="attached")
    screenshot(page, "group")
    (member,) = admin.describe_group(GROUP).members
    shown = cells(page.locator(f'#members tr[data-member="{member.member_id}"]'))
    assert shown["assignment"] == f"{TOPIC}-0, {TOPIC}-1"
    assert shown["client"] == "console-test"
    committed = admin.list_group_offsets(GROUP)
    ends = admin.list_offsets(list(committed), LATEST_TIMESTAMP)
    for tp, offset in committed.items():
        row = cells(page.locator(f'#lag tr[data-partition="{tp.topic}-{tp.partition}"]'))
        assert row["committed"] == str(offset.offset)
        assert row["lag"] == str(ends[tp].offset - offset.offset) == str(lags[tp.partition])


def run_confirmed(page: Any, name: str) -> None:
    """Confirm the checked operation shown and wait for its job to succeed."""
    page.click("#confirm-button")
    page.wait_for_selector('#job[data-done="true"]')
    screenshot(page, name)
    assert page.inner_text("#job-state") == "succeeded", page.inner_text("#job")


def test_create_then_delete_a_topic_through_the_forms(
    console: str, page: Any, admin: Admin
) -> None:
    name = "console-created"
    page.goto(console + "/topics")
    page.click('a[data-operation="create-topic"]')
    page.fill("#field-name", name)
    page.fill("#field-partitions", "2")
    page.fill("#field-replication_factor", "2")
    page.fill("#field-configs", "retention.ms=3600000")
    page.click("#operation button[type=submit]")
    page.wait_for_selector("#plan")
    screenshot(page, "confirm")
    assert name not in admin.list_topics()  # nothing happens before the confirmation
    run_confirmed(page, "job")
    created = admin.describe_topic(name)
    assert len(created.partitions) == 2 and created.config == {"retention.ms": "3600000"}

    page.goto(f"{console}/topics/{name}")
    page.click('a[data-operation="delete-topic"]')
    assert page.input_value("#field-topic") == name
    page.click("#operation button[type=submit]")
    page.wait_for_selector("#plan")
    run_confirmed(page, "delete-job")
    assert name not in admin.list_topics()
    page.goto(console + "/operations")
    screenshot(page, "operations")


def test_every_operation_form_opens_a_plan_is_generated_and_an_election_runs(
    console: str, page: Any, admin: Admin
) -> None:
    for kind in ("add-partitions", "alter-configs", "elect-leaders", "delete-topic"):
        page.goto(f"{console}/operations/{kind}?topic={TOPIC}")
        assert page.input_value("#field-topic") == TOPIC, kind
    page.goto(console + "/operations/reassign-partitions")
    page.fill("#field-topics", TOPIC)
    page.fill("#field-brokers", "0,1,2")
    page.click("#generate button")
    page.wait_for_selector("#field-plan")
    screenshot(page, "reassign")
    plan = json.loads(page.input_value("#field-plan"))
    assert sorted(p["partition"] for p in plan["partitions"]) == sorted(COMMITTED)
    assert all(sorted(p["replicas"]) == [0, 1, 2] for p in plan["partitions"])
    assert admin.list_partition_reassignments() == {}  # generating changes nothing

    page.goto(f"{console}/topics/{TOPIC}")
    page.click('a[data-operation="elect-leaders"]')
    page.click("#operation button[type=submit]")
    page.wait_for_selector("#plan")
    run_confirmed(page, "election-job")
    steps = page.inner_text("#job-steps")
    assert f"{TOPIC}-0" in steps and f"{TOPIC}-1" in steps
    for p in admin.describe_topic(TOPIC).partitions:
        assert p.leader == p.replicas[0]


def test_bad_input_shows_kafkas_error_next_to_each_field_and_changes_nothing(
    console: str, page: Any, admin: Admin
) -> None:
    before = admin.list_topics()
    page.goto(console + "/operations/create-topic")
    page.fill("#field-name", "bad name!")
    page.fill("#field-partitions", "-4")
    page.fill("#field-configs", "retention.ms=soon")
    page.click("#operation button[type=submit]")
    page.wait_for_selector("#error-name")
    screenshot(page, "form-errors")
    assert page.inner_text("#error-name").startswith(
        "INVALID_TOPIC_EXCEPTION (17): topic name 'bad name!' is illegal"
    )
    assert page.inner_text("#error-partitions") == (
        "INVALID_PARTITIONS (37): number of partitions must be at least 1, got -4"
    )
    assert page.inner_text("#error-configs").startswith("INVALID_CONFIG (40): ")
    assert page.input_value("#field-name") == "bad name!"  # the input is kept for correcting
    assert admin.list_topics() == before


def test_a_read_only_console_offers_no_operation_and_refuses_them(
    cluster: LocalCluster,
    lagging_group: None,
    page: Any,
    admin: Admin,
    tmp_path: Path,
) -> None:
    with running_console(cluster, tmp_path / "read-only.log", "--read-only") as url:
        page.goto(f"{url}/topics/{TOPIC}")
        assert page.locator("#read-only").count() == 1
        assert page.locator("[data-operation]").count() == 0
        assert page.locator('nav a[href="/operations"]').count() == 0
        assert status_of(f"{url}/operations/delete-topic?topic={TOPIC}") == 403
        refused = page.request.post(f"{url}/operations/delete-topic/run", form={"topic": TOPIC})
        assert refused.status == 403
        assert status_of(url + "/metrics") == 200
    assert TOPIC in admin.list_topics()

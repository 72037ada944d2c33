"""The console's web app (aiohttp): server-rendered pages, the operation forms and their jobs, the
charts' JSON, and a Prometheus endpoint.

Pages: ``/`` the cluster, ``/topics`` and ``/topics/<t>``, ``/groups`` and ``/groups/<g>``,
``/operations`` (each operation's form at ``/operations/<kind>``, posted to be checked and shown
for confirmation, posted to ``/operations/<kind>/run`` to start it as a job shown at
``/jobs/<id>``). Data: ``/api/charts/<name>``, ``/api/jobs/<id>``, ``/metrics``.

Every admin call blocks, so each runs in a worker thread and a slow one holds up only its own
page. A background task samples the cluster every refresh interval into the history the charts
and rates read. With ``read_only`` the operation pages answer 403 and so does any POST; every form
carries a token that a POST must return, so a page of another site cannot post to the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import jinja2
from aiohttp import web

from rafka.cli.errors import error_line
from rafka.cli.reassignment_progress import format_bytes
from rafka.clients.transport import TransportError
from rafka.console.charts import CHARTS, Sampler, broker_throughput, topic_throughput
from rafka.console.cluster_state import NO_THROUGHPUT, ClusterView
from rafka.console.history import DEFAULT_REFRESH_MS, History, SeriesKey
from rafka.console.jobs import JobBoard, JobView
from rafka.console.operations import (
    OPERATIONS,
    FormErrors,
    Operation,
    Plan,
    ReassignPartitions,
    generate_reassignment,
)
from rafka.console.source import ClusterReader, ClusterSource
from rafka.metrics.exposition import CONTENT_TYPE, render
from rafka.protocol.errors import RafkaError, UnknownTopicOrPartitionError

T = TypeVar("T")
logger = logging.getLogger(__name__)

WORKER_THREADS = 8
"""Admin calls in flight at once: pages, the sampler and running jobs."""

UNAVAILABLE = (RafkaError, TransportError)
"""What a call to the cluster raises when the cluster cannot answer it."""


@dataclass(frozen=True)
class Settings:
    """How the console runs: changes allowed or not, and its refresh interval."""

    read_only: bool = False
    refresh_ms: int = DEFAULT_REFRESH_MS


class Console:
    """One console's state: its source of cluster answers, history, sampler, jobs and threads."""

    def __init__(self, source: ClusterSource, settings: Settings) -> None:
        self.source = source
        self.settings = settings
        self.reader = ClusterReader(source)
        self.history = History()
        self.sampler = Sampler()
        self.executor = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="rafka-console")
        self.jobs = JobBoard(self.executor)
        self.token = secrets.token_urlsafe(24)
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("rafka.console", "templates"),
            autoescape=jinja2.select_autoescape(default=True),
            undefined=jinja2.StrictUndefined,
        )
        self.templates.filters.update(dash=_dash, size=_size, rate=_rate, ids=_ids)
        self.templates.globals.update(
            read_only=settings.read_only, refresh_ms=settings.refresh_ms, token=self.token
        )

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args))

    def collect(self) -> dict[SeriesKey, float]:
        """One sample's values (blocking): the brokers' metrics and every group's lag."""
        return self.sampler.values(self.source.scrape(), self.reader.groups())

    async def sample(self) -> None:
        """Take one sample into the history (recorded on the event loop, which alone reads it)."""
        values = await self.call(self.collect)
        self.history.record(time.time(), values)

    async def sample_forever(self) -> None:
        """Sample every refresh interval; a failed sample is logged and the next one tried."""
        while True:
            try:
                await self.sample()
            except Exception as exc:  # one failed sample must not end the charts for good
                logger.warning("sampling the cluster failed: %s", error_line(exc))
            await asyncio.sleep(self.settings.refresh_ms / 1000)

    def page(self, template: str, status: int = 200, **context: Any) -> web.Response:
        """A rendered page (``active`` names the navigation entry to mark)."""
        context.setdefault("active", "")
        text = self.templates.get_template(template).render(**context)
        return web.Response(text=text, status=status, content_type="text/html")


CONSOLE = web.AppKey("console", Console)


def _console(request: web.Request) -> Console:
    return request.app[CONSOLE]


def _dash(value: object) -> object:
    return "—" if value is None else value


def _size(value: int | None) -> str:
    return "—" if value is None else format_bytes(value)


def _rate(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values)) or "—"


# ------------------------------------------------------------------ pages


async def _cluster(console: Console) -> ClusterView:
    """The cluster's view with the current rates."""
    return await console.call(
        console.reader.cluster,
        broker_throughput(console.history),
        topic_throughput(console.history),
    )


async def cluster_page(request: web.Request) -> web.Response:
    """Brokers, controller, partitions in trouble, broker charts."""
    console = _console(request)
    return console.page("cluster.html", view=await _cluster(console), active="cluster")


async def topics_page(request: web.Request) -> web.Response:
    """Every topic with its partitions, replication factor, size and rates."""
    console = _console(request)
    return console.page("topics.html", view=await _cluster(console), active="topics")


async def topic_page(request: web.Request) -> web.Response:
    """One topic's partitions, offsets and configs."""
    console = _console(request)
    name = request.match_info["topic"]
    rates = topic_throughput(console.history).get(name, NO_THROUGHPUT)
    try:
        view = await console.call(console.reader.topic, name, rates)
    except UnknownTopicOrPartitionError as exc:
        return _error(console, 404, f"There is no topic {name!r}.", exc)
    return console.page("topic.html", view=view, active="topics")


async def groups_page(request: web.Request) -> web.Response:
    """Every consumer group with its state, members and lag."""
    console = _console(request)
    groups = await console.call(console.reader.groups)
    return console.page("groups.html", groups=groups, active="groups")


async def group_page(request: web.Request) -> web.Response:
    """One group's members, their assignments, and lag per partition."""
    console = _console(request)
    group_id = request.match_info["group"]
    view = await console.call(console.reader.group, group_id)
    if view.state == "Dead" and not view.partitions:
        return _error(console, 404, f"There is no consumer group {group_id!r}.")
    return console.page("group.html", group=view, active="groups")


async def operations_page(request: web.Request) -> web.Response:
    """The operations and the jobs run so far."""
    console = _console(request)
    return console.page(
        "operations.html",
        operations=list(OPERATIONS.values()),
        jobs=console.jobs.recent(),
        active="operations",
    )


def _operation(request: web.Request) -> Operation[Any]:
    operation = OPERATIONS.get(request.match_info["kind"])
    if operation is None:
        raise web.HTTPNotFound(text=f"no operation {request.match_info['kind']!r}")
    return operation


def _form(
    console: Console,
    operation: Operation[Any],
    values: Mapping[str, str],
    errors: Mapping[str, str] | None = None,
    status: int = 200,
    **extra: Any,
) -> web.Response:
    filled = {f.name: values.get(f.name, f.default) for f in operation.fields}
    return console.page(
        "operation.html",
        status,
        operation=operation,
        values=filled,
        errors=errors or {},
        generate=extra.get("generate", {}),
        generate_errors=extra.get("generate_errors", {}),
        active="operations",
    )


async def operation_form(request: web.Request) -> web.Response:
    """An operation's form, filled from the query (a reassignment's with a generated plan when
    the query asks for one)."""
    console = _console(request)
    operation = _operation(request)
    values = dict(request.query)
    if isinstance(operation, ReassignPartitions) and "generate" in values:
        try:
            values["plan"] = await console.call(generate_reassignment, values, console.source.admin)
        except FormErrors as exc:
            return _form(
                console, operation, values, status=422, generate=values, generate_errors=exc.errors
            )
        return _form(console, operation, values, generate=values)
    return _form(console, operation, values)


async def _checked(
    request: web.Request,
) -> tuple[Operation[Any], dict[str, str], Plan[Any] | web.Response]:
    """The posted operation, its values, and its plan or, when the check fails, the form again
    with each error at its field."""
    console = _console(request)
    operation = _operation(request)
    values = {k: str(v) for k, v in (await request.post()).items() if k != "token"}
    try:
        plan = await console.call(operation.check, values, console.source.admin)
    except FormErrors as exc:
        return operation, values, _form(console, operation, values, exc.errors, status=422)
    return operation, values, plan


async def operation_check(request: web.Request) -> web.Response:
    """Check a posted form: the confirmation page, or the form with each error at its field."""
    console = _console(request)
    operation, values, plan = await _checked(request)
    if isinstance(plan, web.Response):
        return plan
    return console.page(
        "confirm.html", operation=operation, values=values, plan=plan, active="operations"
    )


async def operation_run(request: web.Request) -> web.Response:
    """Check a confirmed form again and start it as a job; its page follows it."""
    console = _console(request)
    operation, values, plan = await _checked(request)
    if isinstance(plan, web.Response):
        return plan
    admin = console.source.admin
    checked_request = plan.request
    job = console.jobs.start(
        operation.job_title(values),
        lambda progress: operation.run(checked_request, admin, progress),
    )
    raise web.HTTPSeeOther(f"/jobs/{job.job_id}")


async def job_page(request: web.Request) -> web.Response:
    """A job's steps and progress (the page follows it while it runs)."""
    console = _console(request)
    job = console.jobs.get(request.match_info["job"])
    if job is None:
        return _error(console, 404, "There is no such job (the console keeps the last 100).")
    return console.page("job.html", job=job, active="operations")


# ------------------------------------------------------------------ data


def _job_json(job: JobView) -> dict[str, Any]:
    return {
        "id": job.job_id,
        "title": job.title,
        "state": job.state.value,
        "done": job.done,
        "steps": list(job.steps),
        "status": job.status,
        "fraction": job.fraction,
        "error": job.error,
    }


async def job_json(request: web.Request) -> web.Response:
    """A job's state as JSON, for its page's script."""
    job = _console(request).jobs.get(request.match_info["job"])
    if job is None:
        raise web.HTTPNotFound()
    return web.json_response(_job_json(job))


async def chart_json(request: web.Request) -> web.Response:
    """A chart's series as JSON."""
    build = CHARTS.get(request.match_info["chart"])
    if build is None:
        raise web.HTTPNotFound()
    return web.json_response(build(_console(request).history, request.query).to_json())


async def metrics(request: web.Request) -> web.Response:
    """Every broker's metrics in Prometheus' text format."""
    console = _console(request)
    families = await console.call(console.source.scrape)
    return web.Response(body=render(families).encode(), headers={"Content-Type": CONTENT_TYPE})


# ------------------------------------------------------------------ guards


def _error(
    console: Console, status: int, message: str, exc: BaseException | None = None
) -> web.Response:
    detail = error_line(exc).removeprefix("Error: ") if exc is not None else None
    return console.page("error.html", status, code=status, message=message, detail=detail)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse changes when read-only, and posts without the console's token; show a cluster that
    cannot answer as a 503 page."""
    console = _console(request)
    changes = request.method == "POST" or request.path.startswith("/operations")
    if changes and console.settings.read_only:
        return _error(console, 403, "This console is read-only: it changes nothing in the cluster.")
    if request.method == "POST" and (await request.post()).get("token") != console.token:
        return _error(console, 403, "The form is stale or from another site: reload the page.")
    try:
        return await handler(request)
    except UNAVAILABLE as exc:
        return _error(console, 503, "The cluster did not answer.", exc)


async def _sampling(app: web.Application) -> AsyncIterator[None]:
    """Sample the cluster while the app runs; free the worker threads when it stops."""
    console = app[CONSOLE]
    task = asyncio.create_task(console.sample_forever())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    console.executor.shutdown(wait=False, cancel_futures=True)


def create_app(source: ClusterSource, settings: Settings = Settings()) -> web.Application:
    """The console app for ``source``."""
    app = web.Application(middlewares=[guard])
    app[CONSOLE] = Console(source, settings)
    app.cleanup_ctx.append(_sampling)
    app.router.add_get("/", cluster_page)
    app.router.add_get("/topics", topics_page)
    app.router.add_get("/topics/{topic}", topic_page)
    app.router.add_get("/groups", groups_page)
    app.router.add_get("/groups/{group:.+}", group_page)
    app.router.add_get("/operations", operations_page)
    app.router.add_get("/operations/{kind}", operation_form)
    app.router.add_post("/operations/{kind}", operation_check)
    app.router.add_post("/operations/{kind}/run", operation_run)
    app.router.add_get("/jobs/{job}", job_page)
    app.router.add_get("/api/jobs/{job}", job_json)
    app.router.add_get("/api/charts/{chart}", chart_json)
    app.router.add_get("/metrics", metrics)
    app.router.add_static("/static", str(resources.files("rafka.console") / "static"))
    return app

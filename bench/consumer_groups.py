"""Consumer-group benchmark: rebalance times, commit throughput, grouped consumption.

One 3-broker cluster. On an 8-partition topic, groups of 1, 2, 4 and 8 members (one thread and one
``Consumer`` each, polling every 100 ms) are timed from their start until the group is Stable:
every member holds the same generation, their assignments cover the 8 partitions exactly once, and
the coordinator reports that generation Stable with as many members. Then, for groups of 2 or more,
one member is killed (its poll loop and heartbeat thread stop without a LeaveGroup, so the
coordinator only notices when its session times out), a new member is added, and one member closes
cleanly (LeaveGroup); each is timed until the group is Stable again. Then one member's offset
commits of 8 partitions (synchronous and ``commit_async``), and a single-member group's consumption
of ``records`` 100-byte records against a standalone consumer's, both timed from the first poll.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from typing import Any

from rafka.cli.perf import producer_perf
from rafka.clients.admin import Admin
from rafka.clients.consumer import Consumer
from rafka.cluster.local_cluster import LocalCluster
from rafka.groups.offsets_codec import partition_for
from rafka.protocol.types import TopicPartition

NAMESPACE = "rafka-bench-groups"
OFFSETS_PARTITIONS = 3
BROKER_CONFIG = {
    "offsets_topic_num_partitions": OFFSETS_PARTITIONS,
    "group_initial_rebalance_delay_ms": 0,
    "group_min_session_timeout_ms": 500,
}
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
MEMBER_CONFIG: dict[str, Any] = {
    "session_timeout_ms": SESSION_TIMEOUT_MS,
    "heartbeat_interval_ms": HEARTBEAT_MS,
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
}
GROUP_SIZES = (1, 2, 4, 8)
MEMBERS_TOPIC, MEMBERS_PARTITIONS = "members", 8
CONSUME_TOPIC, CONSUME_PARTITIONS = "consume", 6
PRODUCER = {"batch_size": 262_144, "linger_ms": 5, "acks": "all"}
CONSUMER: dict[str, Any] = {"max_poll_records": 100_000, "max_partition_fetch_bytes": 4 << 20}
COMMIT_SECONDS = 3.0
ASYNC_WINDOW = 64
STABLE_DEADLINE_S = 60.0
IDLE_DEADLINE_S = 30.0
CONSUME_ROUNDS = 2


def _log(message: str) -> None:
    print(f"[groups] {message}", file=sys.stderr, flush=True)


class Member:
    """A grouped consumer polling on its own thread; publishes (generation, assignment) per poll."""

    def __init__(self, group_id: str, name: str) -> None:
        self.group_id = group_id
        self.name = name
        self.snapshot: tuple[int, frozenset[TopicPartition]] = (-1, frozenset())
        self.error: BaseException | None = None
        self.consumer: Consumer | None = None
        self._stop: str | None = None  # None (run), "close" (LeaveGroup) or "kill" (vanish)
        self._thread = threading.Thread(target=self._run, name=f"bench-{name}", daemon=True)

    def start(self) -> Member:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.consumer = Consumer(
                namespace=NAMESPACE, group_id=self.group_id, client_id=self.name, **MEMBER_CONFIG
            )
            self.consumer.subscribe([MEMBERS_TOPIC])
            while self._stop is None:
                self.consumer.poll(timeout_ms=100)
                group = self.consumer._group  # bench-only peek at the member's generation
                self.snapshot = (
                    group.generation if group is not None else -1,
                    frozenset(self.consumer.assignment()),
                )
            if self._stop == "close":
                self.consumer.close()
        except BaseException as exc:
            self.error = exc

    def kill(self) -> None:
        """Vanish without a LeaveGroup: stop heartbeating and polling (never close())."""
        self._stop = "kill"
        consumer = self.consumer
        if consumer is not None and consumer._group is not None:
            # Bench-only hook: the heartbeat thread exits when this
            # event is set; nothing is sent to the coordinator.
            consumer._group._closed.set()

    def close(self) -> None:
        """Leave cleanly: the member's own thread calls close(), which sends LeaveGroup."""
        self._stop = "close"

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout=timeout_s)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def dispose(self) -> None:
        """After the thread ended: release a killed member's consumer (its member id expired)."""
        if self.consumer is not None and not self._thread.is_alive():
            try:
                self.consumer.close(autocommit=False)
            except Exception as exc:
                _log(f"closing {self.name} after the run: {exc}")


def _wait_stable(
    admin: Admin, group_id: str, live: list[Member], after_generation: int, started: float
) -> tuple[float, int]:
    """Seconds from ``started`` until the live members form a Stable generation after ``after``."""
    everything = frozenset(TopicPartition(MEMBERS_TOPIC, p) for p in range(MEMBERS_PARTITIONS))
    deadline = started + STABLE_DEADLINE_S
    while time.monotonic() < deadline:
        for member in live:
            if member.error is not None:
                raise RuntimeError(
                    f"member {member.name} failed: {member.error!r}"
                ) from member.error
        now = time.monotonic()
        snapshots = [m.snapshot for m in live]
        generations = {g for g, _ in snapshots}
        owned = [tp for _, assignment in snapshots for tp in assignment]
        if (
            len(generations) == 1
            and (generation := generations.pop()) > after_generation
            and len(owned) == len(everything)
            and frozenset(owned) == everything
        ):
            described = admin.describe_group(group_id)
            if (
                described.state == "Stable"
                and described.generation_id == generation
                and len(described.members) == len(live)
            ):
                return now - started, generation
        time.sleep(0.01)
    raise TimeoutError(
        f"group {group_id} of {len(live)} members not Stable within {STABLE_DEADLINE_S:.0f} s: "
        f"{[(m.name, m.snapshot[0], len(m.snapshot[1])) for m in live]}"
    )


def _membership(admin: Admin, size: int, results: dict[str, dict[int, float]]) -> None:
    """Join, kill, add and leave timings for one group of ``size`` members."""
    group_id = f"bench-members-{size}"
    members: list[Member] = []
    try:
        started = time.monotonic()
        members = [Member(group_id, f"m{size}-{i}").start() for i in range(size)]
        seconds, generation = _wait_stable(admin, group_id, members, 0, started)
        results["join"][size] = seconds
        if size < 2:
            return
        live = list(members)
        victim = live.pop()
        started = time.monotonic()
        victim.kill()
        results["kill"][size], generation = _wait_stable(admin, group_id, live, generation, started)
        started = time.monotonic()
        newcomer = Member(group_id, f"m{size}-new").start()
        members.append(newcomer)
        live.append(newcomer)
        results["add"][size], generation = _wait_stable(admin, group_id, live, generation, started)
        leaver = live.pop(0)
        started = time.monotonic()
        leaver.close()
        results["leave"][size], generation = _wait_stable(
            admin, group_id, live, generation, started
        )
    finally:
        for member in members:
            if member.alive() and member._stop is None:
                member.close()
        for member in members:
            member.join(timeout_s=60)
        for member in members:
            if member._stop == "kill":
                member.dispose()


def _commit_throughput() -> tuple[float, float, float, int]:
    """(sync commits/s, their p50 latency in ms, async commits/s, async failures) for one member."""
    partitions = [TopicPartition(MEMBERS_TOPIC, p) for p in range(MEMBERS_PARTITIONS)]
    consumer = Consumer(
        namespace=NAMESPACE, group_id="bench-commits", client_id="committer", **MEMBER_CONFIG
    )
    try:
        consumer.subscribe([MEMBERS_TOPIC])
        deadline = time.monotonic() + STABLE_DEADLINE_S
        while len(consumer.assignment()) < MEMBERS_PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError("the committing member got no assignment")
            consumer.poll(timeout_ms=100)
        offset = 0
        latencies: list[float] = []
        started = time.monotonic()
        while time.monotonic() - started < COMMIT_SECONDS:
            offset += 1
            before = time.perf_counter()
            consumer.commit({tp: offset for tp in partitions})
            latencies.append(time.perf_counter() - before)
        sync_rate = len(latencies) / (time.monotonic() - started)
        failures: list[Exception] = []

        def done(_offsets: Any, exc: Exception | None) -> None:
            if exc is not None:
                failures.append(exc)

        pending: list[Future] = []
        submitted = 0
        started = time.monotonic()
        while time.monotonic() - started < COMMIT_SECONDS:
            if len(pending) >= ASYNC_WINDOW:
                pending.pop(0).result(timeout=60)
            offset += 1
            pending.append(consumer.commit_async({tp: offset for tp in partitions}, done))
            submitted += 1
        for future in pending:
            future.result(timeout=60)
        async_rate = submitted / (time.monotonic() - started)
        last = consumer.committed(partitions[0])
        if last != offset:
            raise RuntimeError(f"last committed offset is {last}, expected {offset}")
        return sync_rate, statistics.median(latencies) * 1000, async_rate, len(failures)
    finally:
        consumer.close(autocommit=False)


def _consume(records: int, group_id: str | None) -> tuple[int, float, float]:
    """(records received, seconds from first poll to last record, seconds to the first record)."""
    if group_id is None:
        consumer = Consumer(namespace=NAMESPACE, **CONSUMER)
        consumer.assign([TopicPartition(CONSUME_TOPIC, p) for p in range(CONSUME_PARTITIONS)])
        consumer.seek_to_beginning()
    else:
        consumer = Consumer(
            namespace=NAMESPACE, group_id=group_id, auto_offset_reset="earliest", **CONSUMER
        )
        consumer.subscribe([CONSUME_TOPIC])
    try:
        count = 0
        first = None
        started = time.perf_counter()
        last_data = started
        while count < records:
            polled = consumer.poll(timeout_ms=100)
            now = time.perf_counter()
            if not polled:
                if now - last_data > IDLE_DEADLINE_S:
                    break
                continue
            if first is None:
                first = now - started
            last_data = now
            for batch in polled.values():
                count += len(batch)
        return count, time.perf_counter() - started, first if first is not None else float("nan")
    finally:
        consumer.close()


def _warm_up(admin: Admin) -> None:
    """Create ``__consumer_offsets`` and wait until every coordinator has loaded its partitions,
    so the first measured join does not pay for it: one committed() lookup per offsets partition."""
    wanted = set(range(OFFSETS_PARTITIONS))
    index = 0
    while wanted:
        group_id = f"bench-warm-up-{index}"
        index += 1
        partition = partition_for(group_id, OFFSETS_PARTITIONS)
        if partition not in wanted:
            continue
        wanted.discard(partition)
        consumer = Consumer(namespace=NAMESPACE, group_id=group_id, request_timeout_ms=60_000)
        try:
            consumer.committed(TopicPartition(MEMBERS_TOPIC, 0))
        finally:
            consumer.close()


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def run(records: int = 1_000_000) -> list[tuple[str, ...]]:
    """Every consumer-group measurement as table rows (what, figure, note/target)."""
    rows: list[tuple[str, ...]] = []
    results: dict[str, dict[int, float]] = {"join": {}, "kill": {}, "add": {}, "leave": {}}
    with tempfile.TemporaryDirectory(prefix="rafka-bench-groups-") as data_dir:
        with LocalCluster(
            brokers=3, data_dir=data_dir, namespace=NAMESPACE, broker_config=BROKER_CONFIG
        ) as cluster:
            admin = cluster.admin()
            admin.create_topic(MEMBERS_TOPIC, MEMBERS_PARTITIONS, 1)
            admin.create_topic(CONSUME_TOPIC, CONSUME_PARTITIONS, 3)
            _warm_up(admin)
            failures: list[tuple[str, ...]] = []
            for size in GROUP_SIZES:
                _log(f"membership: group of {size}")
                try:
                    _membership(admin, size, results)
                except (
                    RuntimeError,
                    TimeoutError,
                ) as exc:  # report it and go on with the other measurements
                    _log(f"group of {size} failed: {exc}")
                    failures.append(
                        (f"group of {size}", "FAILED", str(exc).replace("|", "/")[:200])
                    )
            session = (
                f"session timeout {SESSION_TIMEOUT_MS / 1000:g} s, "
                f"heartbeat {HEARTBEAT_MS / 1000:g} s"
            )
            for size in GROUP_SIZES:
                rows.append(
                    (
                        f"join: {size} member{'s' if size > 1 else ''} start → Stable",
                        _seconds(results["join"].get(size)),
                        "initial rebalance delay 0; consumers start at once, 100 ms poll loop",
                    )
                )
            for size in GROUP_SIZES[1:]:
                rows.append(
                    (
                        f"member killed (no LeaveGroup): {size} → {size - 1} Stable",
                        _seconds(results["kill"].get(size)),
                        f"<= session timeout + 1 s ({session})",
                    )
                )
            for size in GROUP_SIZES[1:]:
                rows.append(
                    (
                        f"member closed (LeaveGroup): {size} → {size - 1} Stable",
                        _seconds(results["leave"].get(size)),
                        "no session wait; members rejoin on their next heartbeat",
                    )
                )
            for size in GROUP_SIZES[1:]:
                rows.append(
                    (
                        f"member added: {size - 1} → {size} Stable",
                        _seconds(results["add"].get(size)),
                        "existing members rejoin on their next heartbeat",
                    )
                )
            rows += failures

            _log("offset commits")
            sync_rate, p50_ms, async_rate, async_failed = _commit_throughput()
            rows.append(
                (
                    f"offset commits, commit() of {MEMBERS_PARTITIONS} partitions",
                    f"{sync_rate:,.0f} commits/s",
                    f"{sync_rate * MEMBERS_PARTITIONS:,.0f} offsets/s; p50 {p50_ms:.1f} ms; "
                    "acks=all to RF 3 "
                    f"__consumer_offsets",
                )
            )
            rows.append(
                (
                    f"offset commits, commit_async() of {MEMBERS_PARTITIONS} partitions",
                    f"{async_rate:,.0f} commits/s",
                    f"{async_rate * MEMBERS_PARTITIONS:,.0f} offsets/s; <= {ASYNC_WINDOW} pending, "
                    "applied in order" + (f"; {async_failed} failed" if async_failed else ""),
                )
            )

            _log(f"producing {records:,} records")
            producer_perf(
                NAMESPACE, CONSUME_TOPIC, records, 100, -1, dict(PRODUCER), progress=False
            )
            standalone: list[tuple[int, float, float]] = []
            grouped: list[tuple[int, float, float]] = []
            for round_ in range(CONSUME_ROUNDS):
                _log(f"consuming, round {round_ + 1} of {CONSUME_ROUNDS}")
                standalone.append(_consume(records, None))
                grouped.append(_consume(records, f"bench-consume-{round_}"))
            alone = max(standalone, key=lambda r: r[0] / r[1])
            group = max(grouped, key=lambda r: r[0] / r[1])
            alone_rate, group_rate = alone[0] / alone[1], group[0] / group[1]

            def received(result: tuple[int, float, float]) -> str:
                return (
                    ""
                    if result[0] >= records
                    else f"; INCOMPLETE: {result[0]:,} of {records:,} records"
                )

            rows.append(
                (
                    "standalone consumer (assign 6 partitions + seek_to_beginning)",
                    f"{alone_rate:,.0f} records/s",
                    f"best of {CONSUME_ROUNDS}; {alone[1]:.2f} s from first poll, {alone[2]:.2f} s "
                    "to the first record" + received(alone),
                )
            )
            rows.append(
                (
                    "grouped consumer (1-member group, auto_offset_reset=earliest)",
                    f"{group_rate:,.0f} records/s",
                    f"best of {CONSUME_ROUNDS}; {group[1]:.2f} s from first poll, of which "
                    f"{group[2]:.2f} s to the "
                    "first record (join, offset fetch)" + received(group),
                )
            )
            # The same ratio without the time to the first
            # record (the group's join and offset fetch).
            steady = (
                (group[0] / (group[1] - group[2])) / (alone[0] / (alone[1] - alone[2]))
                if group[1] > group[2] and alone[1] > alone[2]
                else float("nan")
            )
            rows.append(
                (
                    "grouped / standalone",
                    f"{group_rate / alone_rate:.2f}",
                    f">= 0.9 (from the first record on: {steady:.2f})",
                )
            )
    return rows


def _main(argv: list[str]) -> None:
    for row in run(int(argv[1]) if len(argv) > 1 else 100_000):
        print(" | ".join(row))


if __name__ == "__main__":
    _main(sys.argv)

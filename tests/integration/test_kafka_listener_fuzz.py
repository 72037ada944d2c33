"""Fuzzing a live broker's Kafka listener: whatever bytes a client sends, the broker answers with
Kafka's error codes or closes that connection, within a deadline; it never stores a corrupt batch;
and well-formed clients on other connections keep working throughout and after.

Each property runs ``RAFKA_FUZZ_EXAMPLES`` examples (default 50, derandomized so a CI run is
repeatable); setting the variable also makes the examples random, for a longer hunt.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from rafka.clients.admin import Admin
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    MAGIC_OFFSET,
)
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.compression import Compression
from rafka.protocol.records.kafka_records import (
    check_client_batch,
    decode_kafka_records,
    native_to_kafka,
    validate_kafka_batch,
)
from rafka.protocol.wire.headers import DEFAULT_MAX_FRAME_BYTES, RequestHeader
from rafka.protocol.wire.registry import DEFAULT_REGISTRY
from rafka.testing import wait_until

pytestmark = [
    pytest.mark.timeout(600),
    # kafka-python reads its protocol schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
    # The kafka-python traffic thread draws from ``random`` while hypothesis builds an example,
    # which hypothesis takes for a strategy using it.
    pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies"),
]

EXAMPLES = int(os.environ.get("RAFKA_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="RAFKA_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)
ANSWER_DEADLINE_S = 20.0
"""How long the broker may take to answer (or close) one fuzzed connection before it counts as
hung; every request here is answerable at once except a Fetch's bounded long poll."""
TOPIC = "listener-fuzz"
TRAFFIC_TOPIC = "listener-fuzz-traffic"
RANGES = {r.api_key: r for r in DEFAULT_REGISTRY.supported_versions()}
SERVED = [
    (key, version)
    for key, r in RANGES.items()
    for version in range(r.min_version, r.max_version + 1)
]
CORRUPT_MESSAGE = int(Errors.CORRUPT_MESSAGE)
UNSUPPORTED_VERSION = int(Errors.UNSUPPORTED_VERSION)
INVALID_RECORD = int(Errors.INVALID_RECORD)
ERROR_NAMES = {int(e): e.name for e in Errors}
NOW_MS = int(time.time() * 1000)
"""Record timestamps are drawn around the time the module was loaded (fixed, so that hypothesis
can replay an example)."""
_SIZE = struct.Struct(">i")


class WireConnection:
    """A plain TCP connection speaking Kafka's framing; the reads of one exchange share a deadline
    (``expect_by``), so a broker that dribbles bytes cannot stretch it."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=ANSWER_DEADLINE_S)
        self._correlation = 0
        self._deadline = time.monotonic() + ANSWER_DEADLINE_S

    def expect_by(self, seconds: float = ANSWER_DEADLINE_S) -> None:
        """Start an exchange: the reads until the next call must be done within ``seconds``."""
        self._deadline = time.monotonic() + seconds

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def read_frame(self) -> bytes | None:
        """One response frame's payload, or None once the broker closed the connection."""
        size = self._read_exactly(_SIZE.size)
        if size is None:
            return None
        payload = self._read_exactly(_SIZE.unpack(size)[0])
        assert payload is not None, "the broker closed the connection inside a response frame"
        return payload

    def _read_exactly(self, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            self.sock.settimeout(max(0.001, self._deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(size - len(chunks))
            except TimeoutError:
                raise AssertionError(
                    f"the broker neither answered nor closed within {ANSWER_DEADLINE_S}s"
                ) from None
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send one well-formed request and decode its answer."""
        self._correlation += 1
        header = RequestHeader(api_key, version, self._correlation, "fuzz")
        self.expect_by()
        self.sock.sendall(DEFAULT_REGISTRY.encode_request(header, body))
        payload = self.read_frame()
        assert payload is not None, (
            f"the broker closed the connection instead of answering {header}"
        )
        answer_header, answer = DEFAULT_REGISTRY.decode_response(payload, header)
        assert answer_header.correlation_id == header.correlation_id
        return dict(answer)


def metadata(conn: WireConnection, topic: str) -> dict[str, Any]:
    """The Metadata v9 answer for ``topic``."""
    return conn.request(3, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})


def exchange(address: tuple[str, int], data: bytes) -> list[bytes]:
    """Send ``data`` on a fresh connection, end the sending side, and collect every response
    frame until the broker closes; fails if it does neither within the deadline."""
    conn = WireConnection(address)
    try:
        conn.expect_by()
        try:
            conn.sock.sendall(data)
            conn.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return []  # closed before it read everything: a refusal
        frames = []
        while (frame := conn.read_frame()) is not None:
            frames.append(frame)
        return frames
    finally:
        conn.close()


@pytest.fixture(scope="module")
def leader(cluster: LocalCluster, admin: Admin) -> tuple[str, int]:
    """The listener address of the broker leading the fuzzed topic's only partition."""
    admin.create_topic(TOPIC, 1, 3)
    admin.create_topic(TRAFFIC_TOPIC, 1, 3)
    host, _, port = cluster.bootstrap_servers().split(",")[0].rpartition(":")
    conn = WireConnection((host, int(port)))

    def led() -> tuple[str, int] | None:
        answer = metadata(conn, TOPIC)
        leader_id = answer["topics"][0]["partitions"][0]["leader_id"]
        brokers = {b["node_id"]: (b["host"], b["port"]) for b in answer["brokers"]}
        return brokers.get(leader_id)

    try:
        found: tuple[str, int] = wait_until(led, 60, f"a leader of {TOPIC}")
    finally:
        conn.close()
    return found


@dataclass
class Traffic:
    """A kafka-python producer sending on its own connections while the fuzzer runs."""

    bootstrap: str
    acknowledged: list[tuple[int, bytes]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        """Run ``run`` on a thread of its own."""
        self.thread = threading.Thread(target=self.run, name="kafka-python-traffic", daemon=True)
        self.thread.start()

    def finish(self) -> None:
        """Stop sending and wait for the producer to close."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join(60)
            assert not self.thread.is_alive(), "the kafka-python producer did not stop"

    def run(self) -> None:
        """Send one record at a time, each waited for, until told to stop."""
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        try:
            n = 0
            while not self.stop.is_set():
                value = f"traffic-{n}".encode()
                sent = producer.send(TRAFFIC_TOPIC, value=value).get(timeout=30)
                self.acknowledged.append((sent.offset, value))
                n += 1
                self.stop.wait(0.05)  # pacing, so the fuzzer keeps most of the machine
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            producer.close(timeout=10)


@pytest.fixture(scope="module")
def traffic(cluster: LocalCluster, leader: tuple[str, int]) -> Iterator[Traffic]:
    """Well-formed Kafka-client traffic running for the whole module."""
    running = Traffic(cluster.bootstrap_servers())
    running.start()
    yield running
    running.finish()


@pytest.fixture(scope="module")
def good(leader: tuple[str, int]) -> Iterator[WireConnection]:
    """A well-formed client's connection to the fuzzed broker, kept open across all examples."""
    conn = WireConnection(leader)
    yield conn
    conn.close()


def assert_still_serving(good: WireConnection, traffic: Traffic) -> None:
    """The well-formed connection is answered, and the kafka-python traffic has not failed."""
    assert metadata(good, TOPIC)["topics"][0]["error_code"] == 0
    assert not traffic.errors, f"the kafka-python producer failed: {traffic.errors[0]!r}"


# ---------------------------------------------------------------------------- malformed frames


@dataclass(frozen=True)
class Frame:
    """Bytes to send on one connection and how many answers the broker may give to them."""

    kind: str
    data: bytes
    max_answers: int
    answer_error: int | None = None
    min_answers: int = 0


def valid_payload(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    """A well-formed request payload (no size) with every body field at its default."""
    header = RequestHeader(api_key, version, correlation_id, "fuzz")
    return DEFAULT_REGISTRY.encode_request(header, {})[_SIZE.size :]


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    """One kind of bad input: a wrong size, a truncated frame, an api or version not served, a
    garbage body for a served api, or a Fetch with arbitrary field values."""
    kind = draw(
        st.sampled_from(
            [
                "negative-size",
                "oversized",
                "size-beyond-data",
                "truncated",
                "unknown-api",
                "unsupported-version",
                "future-api-versions",
                "garbage-body",
                "fetch-fields",
            ]
        )
    )
    tail = draw(st.binary(max_size=64))
    if kind == "negative-size":
        return Frame(kind, _SIZE.pack(draw(st.integers(-(2**31), -1))) + tail, 0)
    if kind == "oversized":
        size = draw(st.integers(DEFAULT_MAX_FRAME_BYTES + 1, 2**31 - 1))
        return Frame(kind, _SIZE.pack(size) + tail, 0)
    if kind in ("size-beyond-data", "truncated"):
        payload = valid_payload(*draw(st.sampled_from(SERVED)))
        if kind == "size-beyond-data":
            return Frame(kind, _SIZE.pack(len(payload) + draw(st.integers(1, 1000))) + payload, 0)
        frame = _SIZE.pack(len(payload)) + payload
        return Frame(kind, frame[: draw(st.integers(1, len(frame) - 1))], 0)
    if kind == "unknown-api":
        api_key = draw(st.integers(-(2**15), 2**15 - 1).filter(lambda k: k not in DEFAULT_REGISTRY))
        payload = struct.pack(">hhih", api_key, draw(st.integers(0, 20)), 1, -1) + tail
        return Frame(kind, _SIZE.pack(len(payload)) + payload, 0)
    if kind in ("unsupported-version", "future-api-versions"):
        # An ApiVersions version not served is answered (KIP-511); any other api's is refused.
        api_key = (
            18
            if kind == "future-api-versions"
            else draw(st.sampled_from(sorted(k for k in RANGES if k != 18)))
        )
        version = draw(
            st.integers(RANGES[api_key].max_version + 1, 2**15 - 1)
            | st.integers(-(2**15), RANGES[api_key].min_version - 1)
        )
        # A flexible header (v2): the client id, then an empty tagged-fields section.
        payload = struct.pack(">hhih", api_key, version, 1, 4) + b"fuzz\x00" + tail
        if kind == "future-api-versions":
            return Frame(kind, _SIZE.pack(len(payload)) + payload, 1, UNSUPPORTED_VERSION)
        return Frame(kind, _SIZE.pack(len(payload)) + payload, 0)
    if kind == "garbage-body":
        api_key, version = draw(st.sampled_from(SERVED))
        _, reader = DEFAULT_REGISTRY.read_request_header(valid_payload(api_key, version))
        payload = valid_payload(api_key, version)[: reader.position] + draw(
            st.binary(min_size=1, max_size=200)
        )
        return Frame(kind, _SIZE.pack(len(payload)) + payload, 1)
    version = draw(st.integers(RANGES[1].min_version, RANGES[1].max_version))
    partitions = st.fixed_dictionaries(
        {
            "partition": st.integers(-2, 2),
            "fetch_offset": st.integers(-(2**63), 2**63 - 1),
            "partition_max_bytes": st.integers(-(2**31), 2**31 - 1),
        }
    )
    topics = st.lists(
        st.fixed_dictionaries(
            {
                "topic": st.sampled_from([TOPIC, "no-such-topic", ""]),
                "partitions": st.lists(partitions, max_size=2),
            }
        ),
        max_size=2,
    )
    body = {
        "max_wait_ms": draw(st.integers(-1000, 300)),
        "min_bytes": draw(st.integers(-(2**31), 2**31 - 1)),
        "max_bytes": draw(st.integers(-(2**31), 2**31 - 1)),
        "isolation_level": draw(st.integers(0, 1)),
        "topics": draw(topics),
    }
    frame = DEFAULT_REGISTRY.encode_request(RequestHeader(1, version, 1, "fuzz"), body)
    return Frame(kind, frame, 1, min_answers=1)  # well-formed, however odd: it must be answered


def test_malformed_frames_are_answered_with_an_error_or_a_closed_connection(
    leader: tuple[str, int], good: WireConnection, traffic: Traffic
) -> None:
    kinds: dict[str, int] = {}

    @given(frames())
    @FUZZ
    def fuzz(frame: Frame) -> None:
        kinds[frame.kind] = kinds.get(frame.kind, 0) + 1
        answers = exchange(leader, frame.data)
        assert frame.min_answers <= len(answers) <= frame.max_answers, (
            f"{frame.kind}: {len(answers)} answers"
        )
        for answer in answers:
            (correlation_id,) = _SIZE.unpack_from(answer)
            assert correlation_id == 1
        if frame.answer_error is not None:
            assert len(answers) == 1
            _, body = DEFAULT_REGISTRY.decode_response(answers[0], RequestHeader(18, 0, 1))
            assert body["error_code"] == frame.answer_error
        assert_still_serving(good, traffic)

    fuzz()
    assert len(kinds) >= 5, f"too few kinds of bad input were tried: {kinds}"


# ---------------------------------------------------------------------------- corrupt batches


@dataclass(frozen=True)
class Produced:
    """A records payload to produce, what answer it must get, and its records if it is valid."""

    kind: str
    records: bytes
    allowed_errors: frozenset[int]


def reseal(batch: bytearray) -> None:
    """Recompute the CRC-32C of a (mangled) batch in place."""
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c.crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))


def expected_error(records: bytes) -> int:
    """What a broker must answer to a client's single batch: 0 for a valid one, else its code."""
    try:
        check_client_batch(*validate_kafka_batch(records))
    except RafkaError as exc:
        return int(exc.error)
    return 0


@st.composite
def valid_batches(draw: st.DrawFn) -> bytes:
    """A well-formed Kafka batch of a few records, in one of the codecs installed here."""
    records = draw(
        st.lists(
            st.tuples(
                st.none() | st.binary(max_size=8),
                st.none() | st.binary(max_size=32),
                st.integers(NOW_MS - 60_000, NOW_MS + 60_000),
                st.lists(
                    st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=2
                ),
            ),
            min_size=1,
            max_size=5,
        )
    )
    codec = draw(st.sampled_from([Compression.NONE, Compression.GZIP, Compression.LZ4]))
    return native_to_kafka(build_batch(records, codec))


@st.composite
def produced(draw: st.DrawFn) -> Produced:
    """A valid batch, or one with a bad CRC, a wrong length, cut short, of an old magic, with its
    records section changed and the CRC resealed, or followed by a bad one; or plain garbage."""
    kind = draw(
        st.sampled_from(
            [
                "intact",
                "bad-crc",
                "bad-length",
                "truncated",
                "old-magic",
                "resealed",
                "good-then-bad",
                "garbage",
            ]
        )
    )
    batch = draw(valid_batches())
    buf = bytearray(batch)
    corrupt = frozenset({CORRUPT_MESSAGE})
    if kind == "intact":
        return Produced(kind, batch, frozenset({0}))
    if kind in ("bad-crc", "good-then-bad"):
        index = draw(st.integers(ATTRIBUTES_OFFSET, len(buf) - 1))
        buf[index] ^= draw(st.integers(1, 255))
        records = batch + bytes(buf) if kind == "good-then-bad" else bytes(buf)
        return Produced(kind, records, corrupt)
    if kind == "bad-length":
        length = _SIZE.unpack_from(buf, 8)[0]
        delta = draw(st.integers(-length, 2**31 - 1 - length).filter(lambda d: d != 0))
        _SIZE.pack_into(buf, 8, length + delta)
        return Produced(kind, bytes(buf), corrupt)
    if kind == "truncated":
        return Produced(kind, batch[: draw(st.integers(1, len(batch) - 1))], corrupt)
    if kind == "old-magic":
        buf[MAGIC_OFFSET] = draw(st.sampled_from([0, 1]))
        return Produced(kind, bytes(buf), frozenset({UNSUPPORTED_VERSION}))
    if kind == "resealed":
        for _ in range(draw(st.integers(1, 3))):
            index = draw(st.integers(HEADER_SIZE, len(buf) - 1))
            buf[index] = draw(st.integers(0, 255))
        reseal(buf)
        return Produced(kind, bytes(buf), frozenset({expected_error(bytes(buf))}))
    garbage = draw(st.binary(min_size=1, max_size=200))
    return Produced(
        kind, garbage, frozenset({CORRUPT_MESSAGE, UNSUPPORTED_VERSION, INVALID_RECORD})
    )


def end_offset(conn: WireConnection) -> int:
    """The fuzzed partition's high watermark, from a ListOffsets request for the latest offset."""
    answer = conn.request(
        2,
        5,
        {
            "replica_id": -1,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    partition = answer["topics"][0]["partitions"][0]
    assert partition["error_code"] == 0
    offset: int = partition["offset"]
    return offset


def test_corrupt_batches_are_refused_and_never_stored(
    read_topic: Callable[[str, int, int], list[Any]],
    leader: tuple[str, int],
    good: WireConnection,
    traffic: Traffic,
) -> None:
    producer = WireConnection(leader)
    stored: list[tuple[int, bytes | None, bytes | None, tuple[Any, ...], int]] = []
    kinds: dict[str, int] = {}
    start = end_offset(producer)

    @given(produced(), st.integers(RANGES[0].min_version, RANGES[0].max_version))
    @FUZZ
    def fuzz(attempt: Produced, version: int) -> None:
        kinds[attempt.kind] = kinds.get(attempt.kind, 0) + 1
        before = end_offset(producer)
        answer = producer.request(
            0,
            version,
            {
                "acks": -1,
                "timeout_ms": 30_000,
                "topic_data": [
                    {"name": TOPIC, "partition_data": [{"index": 0, "records": attempt.records}]}
                ],
            },
        )
        partition = answer["responses"][0]["partition_responses"][0]
        error = partition["error_code"]
        assert error in attempt.allowed_errors, (
            f"{attempt.kind}: error {error} ({ERROR_NAMES.get(error)})"
        )
        after = end_offset(producer)
        if error:
            assert after == before, f"{attempt.kind}: a refused batch moved the end offset"
        else:
            records = decode_kafka_records(attempt.records)
            assert partition["base_offset"] == before
            assert after == before + len(records)
            stored.extend(
                (before + i, r.key, r.value, tuple(r.headers), r.timestamp)
                for i, r in enumerate(records)
            )
        assert_still_serving(good, traffic)

    try:
        fuzz()
    finally:
        producer.close()
    assert kinds.get("intact") and len(kinds) >= 5, f"too few kinds of batch were tried: {kinds}"

    read = read_topic(TOPIC, 1, start + len(stored))
    assert [
        (r.offset, r.key, r.value, tuple(r.headers), r.timestamp) for r in read if r.offset >= start
    ] == stored


def test_kafka_clients_kept_working_throughout_and_after(
    cluster: LocalCluster, traffic: Traffic
) -> None:
    traffic.finish()
    assert not traffic.errors, f"the kafka-python producer failed: {traffic.errors[0]!r}"
    assert traffic.acknowledged, "the kafka-python producer never got a record acknowledged"

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers(), acks="all")
    last = producer.send(TRAFFIC_TOPIC, value=b"after").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers(),
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    consumer.assign([KafkaTopicPartition(TRAFFIC_TOPIC, 0)])
    expected = [*traffic.acknowledged, (last.offset, b"after")]
    read = []
    for message in consumer:
        read.append((message.offset, message.value))
        if len(read) == len(expected):
            break
    consumer.close()
    assert read == expected

"""Fixtures for the partition log tests: a fake clock and a log harness with a brute-force model."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rafka.log.config import LogConfig
from rafka.log.files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path
from rafka.log.log import Log, LogAppendInfo
from rafka.protocol.records.batch import BatchHeader, decode_records, iter_batches, verify_crc
from rafka.protocol.records.builder import RecordBatchBuilder, build_batch
from rafka.protocol.records.columns import Record
from rafka.protocol.records.kafka_records import native_to_kafka

START_MS = 1_700_000_000_000

RecordSpec = tuple  # (key, value, timestamp_ms[, headers]) as build_batch takes it


class FakeClock:
    """A clock the tests move by hand: ``clock()`` returns ``now`` in milliseconds."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@dataclass(frozen=True)
class ModelBatch:
    """What the model expects of one appended batch."""

    base_offset: int
    last_offset: int
    size: int
    epoch: int
    records: tuple[Record, ...]

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True)
class FileBatch:
    """A batch as found in a segment file: which segment, where, how big."""

    segment_base: int
    position: int
    header: BatchHeader


def decode(data: bytes) -> list[tuple[BatchHeader, list[Record]]]:
    """Decode whole batches, failing the test on a bad CRC or trailing bytes."""
    out = []
    end = 0
    for position, header in iter_batches(data):
        verify_crc(data, position, header)
        out.append((header, decode_records(data, position, header)))
        end = position + header.size_in_bytes
    assert end == len(data), f"read returned {len(data) - end} bytes that are not a whole batch"
    return out


def scan_files(directory: Path) -> list[FileBatch]:
    """Every batch of every segment file in ``directory``, in offset order."""
    found: list[FileBatch] = []
    for path in sorted(directory.glob(f"*{LOG_SUFFIX}")):
        data = path.read_bytes()
        base = int(path.name[:20])
        found.extend(FileBatch(base, position, header) for position, header in iter_batches(data))
    return found


class LogHarness:
    """One partition directory, the log open on it, and a plain-list model of what was appended."""

    def __init__(self, directory: Path, clock: FakeClock) -> None:
        self.directory = directory
        self.clock = clock
        self.config = LogConfig()
        self.log: Log | None = None
        self.batches: list[ModelBatch] = []
        self._opened: list[Log] = []

    # ------------------------------------------------------------------ lifecycle

    def open(self, **overrides: Any) -> Log:
        """Open (or reopen) the log; ``overrides`` change the config kept for later reopens."""
        self.config = dataclasses.replace(self.config, **overrides)
        self.log = Log(self.directory, self.config, clock=self.clock)
        self._opened.append(self.log)
        return self.log

    def reconfigure(self, **overrides: Any) -> Log:
        """Change the open log's config in place, as a topic config update does."""
        assert self.log is not None
        self.config = dataclasses.replace(self.config, **overrides)
        self.log.update_config(self.config)
        return self.log

    def crash(self) -> None:
        """Simulate a crash: no flush, no checkpoint, no clean-shutdown marker."""
        assert self.log is not None
        self.log.abandon()

    def release_all(self) -> None:
        for log in self._opened:
            log.abandon()

    # ------------------------------------------------------------------ writing

    def append(
        self, batches: Sequence[Sequence[RecordSpec]], epoch: int = 0, kafka: bool = False
    ) -> list[LogAppendInfo]:
        """Append each record list as one leader batch and add it to the model; ``kafka`` frames
        the batches in Kafka's record layout, as a Kafka client sends them."""
        assert self.log is not None
        infos = []
        for records in batches:
            data = native_to_kafka(build_batch(records)) if kafka else build_batch(records)
            info = self.log.append_as_leader(data, epoch)
            self.remember(info.first_offset, records, len(data), epoch)
            infos.append(info)
        return infos

    def remember(
        self, base_offset: int, records: Sequence[RecordSpec], size: int, epoch: int
    ) -> None:
        """Add a batch written at ``base_offset`` to the model."""
        decoded = tuple(
            Record(
                base_offset + i,
                spec[2],
                spec[0],
                spec[1],
                tuple(tuple(h) for h in (spec[3] if len(spec) > 3 else ())),
            )
            for i, spec in enumerate(records)
        )
        self.batches.append(
            ModelBatch(base_offset, base_offset + len(records) - 1, size, epoch, decoded)
        )

    def forget_from(self, offset: int) -> None:
        """Drop the model batches a truncation to ``offset`` removes (ending at or after it)."""
        self.batches = [b for b in self.batches if b.last_offset < offset]

    # ------------------------------------------------------------------ model queries

    @property
    def records(self) -> list[Record]:
        return [r for b in self.batches for r in b.records]

    def expected_from(self, offset: int) -> list[Record]:
        """Model records a full read from ``offset`` returns: the batches ending at or after it."""
        return [r for b in self.batches if b.last_offset >= offset for r in b.records]

    def offset_for_timestamp(
        self, timestamp: int, log_start_offset: int = 0
    ) -> tuple[int, int] | None:
        """The model's (offset, timestamp) of the first record from the start at or after it."""
        for record in self.records:
            if record.offset >= log_start_offset and record.timestamp >= timestamp:
                return record.offset, record.timestamp
        return None

    def batch_index(self, offset: int) -> int:
        """Index in the model of the batch holding ``offset``."""
        return next(i for i, b in enumerate(self.batches) if b.last_offset >= offset)

    # ------------------------------------------------------------------ log queries

    def read_all(self, start: int | None = None, max_bytes: int = 1 << 20) -> list[Record]:
        """Every record from ``start`` (default: log start) to the LEO, CRC-checked, in order."""
        assert self.log is not None
        offset = self.log.log_start_offset if start is None else start
        out: list[Record] = []
        while offset < self.log.log_end_offset:
            chunk = decode(self.log.read(offset, max_bytes))
            assert chunk, f"read at {offset} below LEO {self.log.log_end_offset} returned nothing"
            for header, records in chunk:
                out.extend(records)
                offset = header.next_offset
        return out

    def read_headers(self, start: int | None = None) -> list[BatchHeader]:
        """Headers of every batch readable from ``start``."""
        assert self.log is not None
        offset = self.log.log_start_offset if start is None else start
        out: list[BatchHeader] = []
        while offset < self.log.log_end_offset:
            for header, _ in decode(self.log.read(offset)):
                out.append(header)
                offset = header.next_offset
        return out

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the partition directory, to restore the same on-disk state again."""
        return {p.name: p.read_bytes() for p in self.directory.iterdir()}

    def restore(self, files: dict[str, bytes]) -> None:
        """Make the directory hold exactly ``files`` (the log must be closed or abandoned)."""
        for path in self.directory.iterdir():
            path.unlink()
        for name, data in files.items():
            (self.directory / name).write_bytes(data)

    def segment_files(self, suffix: str = LOG_SUFFIX) -> list[str]:
        return sorted(p.name for p in self.directory.glob(f"*{suffix}"))

    def paths(self, base_offset: int) -> tuple[Path, Path, Path]:
        """The .log, .index and .timeindex paths of the segment at ``base_offset``."""
        return (
            segment_path(self.directory, base_offset, LOG_SUFFIX),
            segment_path(self.directory, base_offset, INDEX_SUFFIX),
            segment_path(self.directory, base_offset, TIME_INDEX_SUFFIX),
        )


def random_batches(
    rng: random.Random,
    count: int,
    *,
    max_records: int = 6,
    max_value: int = 300,
    start_ms: int = START_MS,
    step_ms: int = 10,
    jitter_ms: int = 0,
    keys: Sequence[bytes] | None = None,
) -> list[list[RecordSpec]]:
    """``count`` batches of 1..max_records records with varied value sizes and timestamps.

    Timestamps rise by ``step_ms`` per record; ``jitter_ms`` moves each one randomly up or down,
    which makes them non-monotonic (producers set CreateTime, so the log must cope with that).
    """
    batches = []
    ts = start_ms
    serial = 0
    for _ in range(count):
        records = []
        for _ in range(rng.randint(1, max_records)):
            key = rng.choice(keys) if keys else b"k%d" % serial
            value = rng.randbytes(rng.randint(0, max_value))
            records.append(
                (key, value, ts + (rng.randint(-jitter_ms, jitter_ms) if jitter_ms else 0))
            )
            ts += step_ms
            serial += 1
        batches.append(records)
    return batches


def producer_batch(
    pid: int, epoch: int, seq: int, count: int = 1, transactional: bool = False, ts: int = START_MS
) -> bytes:
    """A batch of ``count`` records from producer ``pid`` at ``epoch`` starting at sequence
    ``seq``."""
    builder = RecordBatchBuilder(
        batch_size=1 << 20,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )
    for i in range(count):
        builder.append(ts + i, None, b"value-%d" % i)
    return builder.build()


@pytest.fixture
def pbatch():
    """``producer_batch``: a batch with a producer id, epoch and base sequence."""
    return producer_batch


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def harness(tmp_path: Path, clock: FakeClock):
    """A log harness on ``<tmp>/topic-0``; every log it opened has its descriptors released."""
    h = LogHarness(tmp_path / "topic-0", clock)
    yield h
    h.release_all()


@pytest.fixture
def make_batches():
    """``random_batches`` for tests: random record batches with varied sizes and timestamps."""
    return random_batches


@pytest.fixture
def decode_batches():
    """``decode``: CRC-checked batches and records of bytes returned by ``Log.read``."""
    return decode


@pytest.fixture
def scan_segment_files():
    """``scan_files``: every batch in the segment files of a directory, with its position."""
    return scan_files

"""Storage benchmark: raw disk vs log append, read-back, encode and decode.

Everything runs in one process on the same disk so the ratios are meaningful on a noisy machine:
(a) raw sequential write of N MiB in 1 MiB chunks, (b) log append of 100-byte records in ~1 MiB
batches (pre-built, as a broker receives them), (c) sequential read back by offset, (d) batch
encode and decode of 100-byte records on one core.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from rafka.log.config import LogConfig
from rafka.log.log import Log
from rafka.protocol.records.batch import (
    decode_columns,
    decode_records,
    iter_batches,
    read_header,
)
from rafka.protocol.records.builder import RECORD_OVERHEAD, RecordBatchBuilder

MiB = 1 << 20
RECORD_SIZE = 100


def one_mib_batch() -> tuple[bytes, int]:
    """A ~1 MiB batch of 100-byte records and its record count."""
    builder = RecordBatchBuilder(batch_size=MiB)
    value = b"v" * RECORD_SIZE
    now = int(time.time() * 1000)
    while not builder.is_full():
        builder.append(now, None, value)
    return builder.build(), builder.record_count


def raw_write(directory: Path, total_mib: int) -> float:
    """Seconds to write ``total_mib`` 1 MiB chunks sequentially and fsync once."""
    chunk = os.urandom(MiB)
    path = directory / "raw.bin"
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for _ in range(total_mib):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - started
    path.unlink()
    return elapsed


def log_append(directory: Path, total_mib: int, batch: bytes) -> tuple[float, Log]:
    """Seconds to append ``total_mib`` worth of the batch as leader and flush once."""
    log = Log(directory / "bench-0", LogConfig(segment_bytes=1 << 30, max_message_bytes=2 * MiB))
    count = max(1, total_mib * MiB // len(batch))
    started = time.perf_counter()
    for _ in range(count):
        log.append_as_leader(batch, leader_epoch=0)
    log.flush()
    return time.perf_counter() - started, log


def read_back(log: Log) -> tuple[float, int, int]:
    """Seconds, bytes and records to read the whole log by offset in 1 MiB fetches."""
    started = time.perf_counter()
    offset, total_bytes, records = log.log_start_offset, 0, 0
    end = log.log_end_offset
    while offset < end:
        data = log.read(offset, MiB, max_offset=end)
        total_bytes += len(data)
        for _, header in iter_batches(data):
            records += header.record_count
            offset = header.next_offset
    return time.perf_counter() - started, total_bytes, records


def encode_decode(records: int) -> dict[str, float]:
    """Records/s on one core for each way in and out of ~1 MiB batches of 100-byte records.

    Encode: ``extend`` (whole columns in one call) and ``append`` (one call per record, as
    ``Producer.send`` does); both end with ``build()``. Decode: to columns (every key
    and value as a Python bytes object) and on to one ``Record`` tuple per record.
    """
    value = b"v" * RECORD_SIZE
    now = int(time.time() * 1000)
    per_batch = MiB // (RECORD_SIZE + RECORD_OVERHEAD)
    values = [value] * per_batch
    rates: dict[str, float] = {}
    batches: list[bytes] = []
    started = time.perf_counter()
    while len(batches) * per_batch < records:
        builder = RecordBatchBuilder(batch_size=MiB)
        builder.extend(values, timestamp_ms=now)
        batches.append(builder.build())
    rates["encode columns"] = len(batches) * per_batch / (time.perf_counter() - started)
    started = time.perf_counter()
    appended = 0
    while appended < records:
        builder = RecordBatchBuilder(batch_size=MiB)
        for _ in range(per_batch):
            builder.append(now, None, value)
        builder.build()
        appended += per_batch
    rates["encode records"] = appended / (time.perf_counter() - started)
    headers = [read_header(data) for data in batches]
    started = time.perf_counter()
    decoded = sum(
        len(decode_columns(data, 0, header).values)
        for data, header in zip(batches, headers, strict=True)
    )
    rates["decode columns"] = decoded / (time.perf_counter() - started)
    started = time.perf_counter()
    decoded = sum(
        len(decode_records(data, 0, header)) for data, header in zip(batches, headers, strict=True)
    )
    rates["decode records"] = decoded / (time.perf_counter() - started)
    return rates


CODEC_ROWS = [
    ("(d) batch encode: builder.extend(columns) + build", "encode columns", "target >= 2,000,000"),
    ("(d) encode one append() per record + build", "encode records", "the producer's path"),
    ("(d) batch decode to columns", "decode columns", "target >= 3,000,000"),
    ("(d) decode to one Record tuple per record", "decode records", "the consumer's path"),
]


def _codec_row(what: str, rate: float, note: str) -> tuple[str, str, str, str]:
    return what + " (one core)", f"{rate:,.0f}", f"{rate * RECORD_SIZE / 1e6:,.0f}", note


def run(total_mib: int = 1024, directory: Path | None = None) -> list[tuple[str, str, str, str]]:
    """Run the four measurements; return table rows (what, records/s, MB/s, note)."""
    work = Path(tempfile.mkdtemp(prefix="rafka-bench-", dir=directory))
    try:
        batch, _ = one_mib_batch()
        # Interleave the two writes and keep each one's best run: the disk's write-back cache makes
        # whichever runs first look slower.
        raw_s = append_s = float("inf")
        for attempt in range(2):
            raw_s = min(raw_s, raw_write(work, total_mib))
            seconds, log = log_append(work / str(attempt), total_mib, batch)
            append_s = min(append_s, seconds)
            if attempt == 0:
                log.close()
                shutil.rmtree(work / "0")
        read_s, read_bytes, read_records = read_back(log)
        appended_bytes = log.size_in_bytes
        appended_records = log.log_end_offset
        log.close()
        codec_rates = encode_decode(2_000_000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw_mbs = total_mib * MiB / raw_s / 1e6
    append_mbs = appended_bytes / append_s / 1e6
    return [
        (
            "(a) raw sequential write, 1 MiB chunks + fsync",
            "-",
            f"{raw_mbs:,.0f}",
            f"{total_mib} MiB",
        ),
        (
            "(b) log append, 100 B records in ~1 MiB batches + fsync",
            f"{appended_records / append_s:,.0f}",
            f"{append_mbs:,.0f}",
            f"(b)/(a) = {append_mbs / raw_mbs:.2f}",
        ),
        (
            "(c) sequential read back by offset, 1 MiB fetches",
            f"{read_records / read_s:,.0f}",
            f"{read_bytes / read_s / 1e6:,.0f}",
            f"{read_records:,} records",
        ),
        *(_codec_row(what, codec_rates[key], target) for what, key, target in CODEC_ROWS),
    ]

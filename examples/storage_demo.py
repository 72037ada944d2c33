"""Storage demo: a partition log survives its writer being killed mid-write.

1. A child process appends 1,000,000 records of 100 bytes to a log, fsyncing every 50 batches and
   reporting each flush; the demo SIGKILLs it partway through.
2. A torn write is simulated on top of the crash: half a batch is appended to the active segment,
   as a power loss in the middle of a write would leave it.
3. The log is reopened: recovery verifies every batch after the recovery point, cuts the torn tail,
   and keeps everything that was flushed.
4. Records are read back by offset and by timestamp, and the remaining records are appended.

Run it with ``.venv/bin/python examples/storage_demo.py`` (``make demo`` runs the cluster demo). The
log (about 110 MB) goes to a temporary directory that is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import scratch

from rafka.log.config import LogConfig
from rafka.log.log import Log
from rafka.protocol.records.batch import decode_records, iter_batches
from rafka.protocol.records.builder import RecordBatchBuilder

PER_BATCH = 1_000
BASE_TS = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=32 * 1024 * 1024)


def batch_for(first: int) -> bytes:
    """Records first..first+PER_BATCH-1; record i has timestamp BASE_TS + i and a 100-byte value."""
    builder = RecordBatchBuilder(batch_size=1 << 30)
    for i in range(first, first + PER_BATCH):
        builder.append(BASE_TS + i, b"key-%d" % i, (b"value-%d-" % i).ljust(100, b"."))
    return builder.build()


def writer(directory: Path, total: int) -> None:
    """Append until killed (or ``total`` records are in), fsyncing every 50 batches and reporting
    the flushed offset."""
    log = Log(directory, CONFIG)
    for first in range(log.log_end_offset, total, PER_BATCH):
        log.append_as_leader(batch_for(first), leader_epoch=0)
        if (first // PER_BATCH) % 50 == 49:
            log.flush()
            log.checkpoint()
            print(f"flushed {log.log_end_offset}", flush=True)


def read_all_count(log: Log) -> int:
    """Count records by walking the log with 1 MiB reads."""
    count, offset = 0, log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        for _, header in iter_batches(data):
            count += header.record_count
            offset = header.next_offset
    return count


def main() -> None:
    """Run the crash-and-recover storage demo."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--records", type=int, default=1_000_000, help="records in the log at the end"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="where to put the log (default: a temp dir)"
    )
    parser.add_argument(
        "--kill-after",
        type=int,
        default=None,
        help="SIGKILL the writer once this many records are flushed (default: 60%% of --records)",
    )
    scratch.add_keep_argument(parser)
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.WARNING, format="   [recovery] %(message)s", stream=sys.stdout
    )
    if args.writer:
        writer(args.writer, args.records)
        return
    kill_after = args.kill_after if args.kill_after is not None else args.records * 6 // 10
    with scratch.directory(args.data_dir, args.keep, "rafka-storage-demo-", "the log") as data:
        crash_and_recover(data / "demo-0", args.records, kill_after)


def crash_and_recover(directory: Path, total: int, kill_after: int) -> None:
    """Steps 1 to 5 of the demo on the log in ``directory``."""
    print(f"== storage demo: log at {directory}")
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--writer", str(directory), "--records", str(total)],
        stdout=subprocess.PIPE,
        text=True,
    )
    flushed = 0
    assert child.stdout is not None
    for line in child.stdout:
        flushed = int(line.split()[1])
        print(f"\r   writer flushed {flushed:>9,} records", end="", flush=True)
        if flushed >= kill_after:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    elapsed = time.perf_counter() - started
    print(f"\n1. SIGKILLed the writer after {elapsed:.1f}s; last flushed offset {flushed:,}")

    segments = sorted(directory.glob("*.log"))
    with open(segments[-1], "ab") as handle:
        handle.write(batch_for(total)[:5000])
    print(
        "2. simulated a torn write: 5,000 bytes of a half-written batch appended to "
        f"{segments[-1].name}"
    )

    started = time.perf_counter()
    log = Log(directory, CONFIG)
    print(
        f"3. reopened in {time.perf_counter() - started:.2f}s: recovery cut "
        f"{log.recovered_bytes_cut:,} bytes; "
        f"log end offset {log.log_end_offset:,} (>= flushed {flushed:,}: "
        f"{log.log_end_offset >= flushed}); "
        f"{len(log.segments)} segments"
    )
    assert log.log_end_offset >= flushed, "flushed records were lost"

    target = total * 123 // 1000
    data = log.read(target, 1 << 16)
    record = next(
        r
        for pos, h in iter_batches(data)
        for r in decode_records(data, pos, h)
        if r.offset == target
    )
    print(
        f"4. read by offset {target:,}: key={record.key!r} value={(record.value or b'')[:16]!r}... "
        f"timestamp={record.timestamp}"
    )
    wanted_ts = BASE_TS + total * 424 // 1000
    offset, timestamp = log.offset_for_timestamp(wanted_ts) or (-1, -1)
    print(f"   read by timestamp {wanted_ts}: offset {offset:,} (timestamp {timestamp})")

    started = time.perf_counter()
    for first in range(log.log_end_offset, total, PER_BATCH):
        log.append_as_leader(batch_for(first), leader_epoch=1)
    count = read_all_count(log)
    print(
        f"5. appended the rest in {time.perf_counter() - started:.1f}s; "
        f"the log now holds {count:,} records in offsets "
        f"[{log.log_start_offset}, {log.log_end_offset:,}) over {len(log.segments)} segments"
    )
    assert count == total == log.log_end_offset
    log.close()


if __name__ == "__main__":
    main()

"""A broker's ``server.log``, and the size-rotated files that several processes of a broker share.

Every process of a broker (the broker actor, its controller, its group and transaction coordinators
and its partition replicas) sends its log records at INFO and above to ``<log.dirs>/server.log`` in
Kafka's layout (``protocol/log_layout.py``), and nothing to stderr, which Ray would copy into its
worker logs and onto the terminal of a driver that streams them (``actors/process.py`` sets this up
in each actor's process). The processes append to the one file through
``SharedRotatingFileHandler``, as they do to ``state-change.log``; the file rolls at ``MAX_BYTES``
into ``server.log.1`` .. ``.10``, log4j RollingFileAppender's MaxFileSize with more backups.

The file is read back by ``rafka logs``: ``tail`` gives the last lines and ``read_new`` what was
appended after a ``LogPosition``, following the file across a roll as ``tail -F`` does. A broker
serves both through its actor (``Broker.server_log``) to a ``rafka logs`` on another machine.
"""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
from dataclasses import dataclass
from pathlib import Path

from rafka.protocol.log_layout import KafkaLayout

SERVER_LOG_FILE = "server.log"

MAX_BYTES = 10 * 1024 * 1024
"""Size at which a shared log file rolls over: log4j's RollingFileAppender default MaxFileSize."""

BACKUP_COUNT = 10
"""Rolled files kept (``<file>.1`` .. ``.10``), so a broker keeps about 110 MB of each log; log4j's
default of one backup would keep too little to explain an old failover."""

READ_MAX_BYTES = 1024 * 1024
"""Most bytes ``read_new`` returns at once, so one answer of a broker stays small."""


class SharedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A size-rotated file that several processes append to: every write holds an exclusive lock
    on ``<file>.lock``, and a process whose open file was rolled away by another reopens the new
    one before writing, so no process keeps writing into (or rolls again) a rolled file."""

    def __init__(self, filename: str, max_bytes: int, backup_count: int) -> None:
        super().__init__(filename, maxBytes=max_bytes, backupCount=backup_count, encoding="utf-8")
        self._lock_path = filename + ".lock"

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record under the cross-process lock, rolling the file first if it is full."""
        try:
            with open(self._lock_path, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._follow_rotation()
                super().emit(record)
        except OSError:
            self.handleError(record)

    def shouldRollover(self, record: logging.LogRecord) -> int:
        """Whether the shared file (as long as every process's writes made it) is full."""
        if self.stream is None or self.maxBytes <= 0:
            return 0
        size = os.fstat(self.stream.fileno()).st_size
        return int(size + len(self.format(record)) + 1 >= self.maxBytes)

    def _follow_rotation(self) -> None:
        if self.stream is None:
            return
        try:
            current = os.stat(self.baseFilename)
        except FileNotFoundError:
            current = None
        mine = os.fstat(self.stream.fileno())
        if current is None or (current.st_dev, current.st_ino) != (mine.st_dev, mine.st_ino):
            self.stream.close()
            self.stream = self._open()


def attach_shared_file(
    logger: logging.Logger,
    path: str | os.PathLike[str],
    formatter: logging.Formatter,
    max_bytes: int = MAX_BYTES,
    backup_count: int = BACKUP_COUNT,
) -> None:
    """Append ``logger``'s records to the shared, size-rotated file ``path`` (once per process)."""
    absolute = os.path.abspath(path)
    if any(getattr(h, "baseFilename", None) == absolute for h in logger.handlers):
        return
    Path(absolute).parent.mkdir(parents=True, exist_ok=True)
    handler = SharedRotatingFileHandler(absolute, max_bytes, backup_count)
    handler.setFormatter(formatter)
    logger.addHandler(handler)


def open_server_log(
    log_dir: str | os.PathLike[str],
    max_bytes: int = MAX_BYTES,
    backup_count: int = BACKUP_COUNT,
) -> None:
    """Send this process's records at INFO and above to ``log_dir/server.log`` (idempotent)."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    attach_shared_file(
        root, Path(log_dir) / SERVER_LOG_FILE, KafkaLayout(), max_bytes, backup_count
    )


def log_files(log_dir: str | os.PathLike[str], file_name: str = SERVER_LOG_FILE) -> list[Path]:
    """A log file of ``log_dir`` and its rolled files, oldest first (the live file last)."""
    base = Path(log_dir) / file_name
    rolled = [p for p in Path(log_dir).glob(file_name + ".*") if p.suffix[1:].isdigit()]
    rolled.sort(key=lambda p: int(p.suffix[1:]), reverse=True)
    return [*rolled, *([base] if base.exists() else [])]


HEAD_BYTES = 256
"""How much of a file's first line tells it apart from a later file given the same inode."""


@dataclass(frozen=True)
class LogPosition:
    """Where a reader of a log stopped: the file, by its inode (which a roll keeps) and the start
    of its first line (a file created after another was deleted may get the same inode), and the
    offset in it. The default is before anything was read."""

    inode: int = 0
    head: bytes = b""
    offset: int = 0


@dataclass(frozen=True)
class LogChunk:
    """Text read from a log, and the position after it."""

    text: str
    position: LogPosition


@dataclass(frozen=True)
class _Read:
    """Bytes read from one file: the file's inode and head (0 and empty for a file that is gone),
    and the offset the bytes start at."""

    data: bytes
    inode: int
    head: bytes
    offset: int

    def position(self, kept: int) -> LogPosition:
        """The position after the first ``kept`` bytes read."""
        return LogPosition(self.inode, self.head, self.offset + kept)


def _read(path: Path, offset: int, limit: int) -> _Read:
    """Up to ``limit`` bytes (-1: all) of ``path`` from ``offset``, or from 0 when the file is now
    shorter, as after a truncation."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.readline(HEAD_BYTES)
            offset = offset if offset <= size else 0
            handle.seek(offset)
            return _Read(handle.read(limit), os.fstat(handle.fileno()).st_ino, head, offset)
    except FileNotFoundError:
        return _Read(b"", 0, b"", 0)


def _whole_lines(data: bytes, cut: bool) -> bytes:
    """``data`` up to its last newline: a line still being written (or ``cut`` by a size limit)
    waits for the next read, unless it alone is longer than the limit."""
    whole = data[: data.rfind(b"\n") + 1]
    return data if cut and not whole else whole


def _same_file(position: LogPosition, found: _Read) -> bool:
    """Whether ``found`` is the file ``position`` is in (any file with its inode, before a first
    whole line was read from it)."""
    if not position.inode or position.inode != found.inode:
        return False
    return position.offset == 0 or found.head == position.head


def read_new(
    log_dir: str | os.PathLike[str],
    position: LogPosition,
    file_name: str = SERVER_LOG_FILE,
    max_bytes: int = READ_MAX_BYTES,
) -> LogChunk:
    """What was appended to the log after ``position``, at most ``max_bytes`` of whole lines.

    A file rolled since is found among the rolled files: its rest is read, then the newer files; a
    position whose file is gone (rolled past the last backup) starts over at the live file's
    beginning.
    """
    for _ in range(3):
        chunk = _read_new(log_dir, position, file_name, max_bytes)
        if chunk is not None:
            return chunk
    return LogChunk("", position)


def _read_new(
    log_dir: str | os.PathLike[str], position: LogPosition, file_name: str, max_bytes: int
) -> LogChunk | None:
    """``read_new``'s one attempt; None when a roll moved the files while they were read."""
    files = log_files(log_dir, file_name)
    heads = [_read(path, 0, 0) for path in files]
    found = [i for i, head in enumerate(heads) if _same_file(position, head)]
    start, offset = (found[0], position.offset) if found else (max(len(files) - 1, 0), 0)
    text = b""
    at = position
    for index in range(start, len(files)):
        room = max_bytes - len(text)
        read = _read(files[index], offset, room)
        if (read.inode, read.head) != (heads[index].inode, heads[index].head):
            return None
        full = len(read.data) == room
        live = index == len(files) - 1 and files[index].name == file_name
        data = _whole_lines(read.data, cut=full) if full or live else read.data
        if read.inode:
            at = read.position(len(data))
        text += data
        offset = 0
        if full:
            break
    return LogChunk(text.decode("utf-8", errors="replace"), at)


def tail(
    log_dir: str | os.PathLike[str], lines: int | None = None, file_name: str = SERVER_LOG_FILE
) -> LogChunk:
    """The last ``lines`` lines of the log, reaching into rolled files when the live one holds
    fewer (None: the whole live file), and the position at the end of what was read."""
    files = log_files(log_dir, file_name)
    live = files[-1] if files and files[-1].name == file_name else None
    read = _read(live, 0, -1) if live is not None else _Read(b"", 0, b"", 0)
    data = _whole_lines(read.data, cut=False)
    if lines is None:
        return LogChunk(data.decode("utf-8", errors="replace"), read.position(len(data)))
    kept = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    older = [path for path in files if path != live]
    while len(kept) < lines and older:
        kept[:0] = _read(older.pop(), 0, -1).data.decode("utf-8", errors="replace").splitlines(True)
    return LogChunk("".join(kept[-lines:] if lines > 0 else []), read.position(len(data)))

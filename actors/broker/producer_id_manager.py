"""Producer ids: each broker hands them out from blocks it claims in ZooKeeper (Kafka's
ZkProducerIdManager).

A block is ``PRODUCER_ID_BLOCK_SIZE`` consecutive ids. ``/latest_producer_id_block`` holds the last
block claimed by any broker; a broker claims the next one with a compare-and-set on that znode's
version (or by creating it) and retries when another broker won the race. Ids inside a claimed block
need no ZooKeeper write, so a producer id costs a ZooKeeper round trip only once per block. Blocks
never overlap, so no two brokers ever hand out the same id.

``ProducerIdManager`` holds the decisions and is tested with a fake store;
``ZkProducerIdBlockStore`` is the znode behind it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from rafka.protocol.errors import Errors

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_SIZE = 1000
PRODUCER_ID_BLOCK_VERSION = 1
MAX_PRODUCER_ID = (1 << 63) - 1
NO_VERSION = -1
"""The store's version of a znode that does not exist yet."""


@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids ``first..last`` (inclusive) claimed by ``broker_id``."""

    broker_id: int
    first: int
    last: int

    def encode(self) -> bytes:
        """Kafka's JSON for the znode (ids as strings, as Kafka writes them)."""
        return json.dumps(
            {
                "version": PRODUCER_ID_BLOCK_VERSION,
                "broker": self.broker_id,
                "block_start": str(self.first),
                "block_end": str(self.last),
            },
            separators=(",", ":"),
        ).encode()

    @staticmethod
    def decode(data: bytes) -> ProducerIdBlock:
        """Parse the znode (ids as strings or numbers)."""
        fields = json.loads(data.decode())
        return ProducerIdBlock(
            int(fields["broker"]), int(fields["block_start"]), int(fields["block_end"])
        )


class ProducerIdBlockStore(Protocol):
    """Where the latest claimed block lives, read and written with compare-and-set."""

    def read(self) -> tuple[bytes | None, int]:
        """The stored block and its version; (None, NO_VERSION) if none was ever claimed."""

    def write(self, data: bytes, version: int) -> bool:
        """Store ``data`` if the stored version is still ``version`` (NO_VERSION: create it);
        False if another writer got there first."""


class ProducerIdManager:
    """Hands out this broker's producer ids, claiming a new block whenever one runs out.

    Thread-safe: the broker calls ``next_id`` from executor threads.
    """

    def __init__(
        self,
        broker_id: int,
        store: ProducerIdBlockStore,
        block_size: int = PRODUCER_ID_BLOCK_SIZE,
    ) -> None:
        self.broker_id = broker_id
        self.store = store
        self.block_size = block_size
        self.block: ProducerIdBlock | None = None
        self._next = 0
        self._lock = threading.Lock()

    def next_id(self) -> int:
        """The next unused producer id (claims a block in the store first when none is left)."""
        with self._lock:
            if self.block is None or self._next > self.block.last:
                self.block = self.claim_block()
                self._next = self.block.first
            found = self._next
            self._next += 1
            return found

    def claim_block(self) -> ProducerIdBlock:
        """Claim the block after the latest one in the store, retrying when another broker claims
        one meanwhile. Raises UNKNOWN_SERVER_ERROR if the id space is exhausted."""
        while True:
            data, version = self.store.read()
            first = 0 if data is None else ProducerIdBlock.decode(data).last + 1
            if first > MAX_PRODUCER_ID - self.block_size:
                raise Errors.UNKNOWN_SERVER_ERROR.exception(
                    f"producer ids are exhausted: the latest block ends at {first - 1}"
                )
            block = ProducerIdBlock(self.broker_id, first, first + self.block_size - 1)
            if self.store.write(block.encode(), version):
                return block


class ZkProducerIdBlockStore:
    """``/latest_producer_id_block`` in the cluster's ZooKeeper chroot, over a kazoo client."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk

    def read(self) -> tuple[bytes | None, int]:
        """The znode's data and version; (None, NO_VERSION) if it does not exist."""
        try:
            data, stat = self.zk.get(PRODUCER_ID_BLOCK_PATH)
        except NoNodeError:
            return None, NO_VERSION
        return data, stat.version

    def write(self, data: bytes, version: int) -> bool:
        """Create the znode (``version`` NO_VERSION) or set it at ``version``; False on a race."""
        try:
            if version == NO_VERSION:
                self.zk.create(PRODUCER_ID_BLOCK_PATH, data)
            else:
                self.zk.set(PRODUCER_ID_BLOCK_PATH, data, version=version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            return False
        return True

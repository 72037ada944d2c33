"""Producer id blocks: claimed by compare-and-set in a store, never overlapping between brokers."""

from __future__ import annotations

import json
import threading

import pytest

from rafka.actors.broker.producer_id_manager import (
    MAX_PRODUCER_ID,
    NO_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdBlock,
    ProducerIdManager,
)
from rafka.protocol.errors import UnknownServerError


class FakeStore:
    """The znode in memory: data and a version bumped by every write; ``races`` writes by another
    broker land just before this one's next writes."""

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.version = NO_VERSION
        self.writes = 0
        self.races: list[ProducerIdBlock] = []
        self._lock = threading.Lock()

    def read(self) -> tuple[bytes | None, int]:
        with self._lock:
            return self.data, self.version

    def write(self, data: bytes, version: int) -> bool:
        with self._lock:
            if self.races:
                self.data, self.version = self.races.pop(0).encode(), self.version + 1
            if version != self.version:
                return False
            self.data, self.version = data, self.version + 1
            self.writes += 1
            return True


def test_the_first_block_starts_at_zero_and_ids_follow_each_other() -> None:
    store = FakeStore()
    manager = ProducerIdManager(3, store)
    assert [manager.next_id() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert manager.block == ProducerIdBlock(3, 0, PRODUCER_ID_BLOCK_SIZE - 1)
    assert store.writes == 1


def test_the_znode_holds_kafkas_json() -> None:
    store = FakeStore()
    ProducerIdManager(2, store).next_id()
    assert store.data is not None
    assert json.loads(store.data) == {
        "version": 1,
        "broker": 2,
        "block_start": "0",
        "block_end": str(PRODUCER_ID_BLOCK_SIZE - 1),
    }


def test_a_block_written_with_numbers_is_read_too() -> None:
    data = json.dumps({"version": 1, "broker": 1, "block_start": 5, "block_end": 9}).encode()
    assert ProducerIdBlock.decode(data) == ProducerIdBlock(1, 5, 9)


def test_a_new_block_is_claimed_only_when_the_current_one_runs_out() -> None:
    store = FakeStore()
    manager = ProducerIdManager(0, store, block_size=3)
    assert [manager.next_id() for _ in range(7)] == [0, 1, 2, 3, 4, 5, 6]
    assert store.writes == 3


def test_two_brokers_sharing_a_store_hand_out_disjoint_ids() -> None:
    store = FakeStore()
    first, second = ProducerIdManager(0, store, 10), ProducerIdManager(1, store, 10)
    ids = [manager.next_id() for _ in range(25) for manager in (first, second)]
    assert len(set(ids)) == len(ids)


def test_a_claim_that_loses_a_race_retries_after_the_winners_block() -> None:
    store = FakeStore()
    store.races.append(ProducerIdBlock(7, 0, 999))
    manager = ProducerIdManager(0, store)
    assert manager.next_id() == 1000
    assert manager.block == ProducerIdBlock(0, 1000, 1999)


def test_concurrent_callers_never_get_the_same_id() -> None:
    manager = ProducerIdManager(0, FakeStore(), block_size=7)
    found: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(50):
            producer_id = manager.next_id()
            with lock:
                found.append(producer_id)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(found) == list(range(200))


def test_an_exhausted_id_space_is_an_error() -> None:
    store = FakeStore()
    store.data, store.version = ProducerIdBlock(0, 0, MAX_PRODUCER_ID - 10).encode(), 0
    with pytest.raises(UnknownServerError, match="exhausted"):
        ProducerIdManager(1, store).next_id()

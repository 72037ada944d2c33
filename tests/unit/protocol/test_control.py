"""Transaction markers: built as one control batch, parsed back, refused when malformed."""

from __future__ import annotations

import pytest

from rafka.protocol.errors import CorruptMessageError
from rafka.protocol.records.batch import NO_SEQUENCE, read_header, verify_crc
from rafka.protocol.records.builder import build_batch
from rafka.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_marker,
    parse_marker,
)


@pytest.mark.parametrize("kind", list(ControlRecordType))
def test_a_marker_is_one_transactional_control_record_of_its_producer(
    kind: ControlRecordType,
) -> None:
    data = build_marker(42, 3, kind, 7, 1_000)
    header = read_header(data)
    verify_crc(data, 0, header)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, NO_SEQUENCE)
    assert header.record_count == 1
    assert parse_marker(data, 0, header) == EndTransactionMarker(kind, 7)


def test_a_data_batch_is_not_a_marker() -> None:
    data = build_batch([(b"k", b"v", 1)])
    with pytest.raises(CorruptMessageError, match="not a control batch"):
        parse_marker(data, 0, read_header(data))

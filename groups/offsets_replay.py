"""Replaying one ``__consumer_offsets`` partition's log into groups, committed and pending offsets.

What a coordinator rebuilds when it gains leadership of an offsets partition, as compaction would
leave it: the latest value per key, a tombstone deleting its key, and a group tombstone deleting
the group's offsets too. Transactional batches (TxnOffsetCommit) hold their producer's offsets
pending until that producer's marker: COMMIT installs them unless a later plain commit of the same
partition is already there, ABORT drops them, and with no marker yet they stay pending after the
load, for the marker still to come.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rafka.groups.offsets_codec import (
    GroupValue,
    OffsetKey,
    decode_group,
    decode_key,
    decode_offset,
)
from rafka.groups.pending_offsets import LoggedOffset, PendingOffsets, apply_later
from rafka.protocol.records.batch import BatchHeader, decode_records
from rafka.protocol.records.control import ControlRecordType, parse_marker


@dataclass
class OffsetsReplay:
    """The state of one offsets partition replayed so far."""

    offsets: dict[OffsetKey, LoggedOffset] = field(default_factory=dict)
    groups: dict[str, GroupValue] = field(default_factory=dict)
    pending: PendingOffsets = field(default_factory=PendingOffsets)

    def replay_batch(self, data: bytes, position: int, header: BatchHeader) -> None:
        """Apply the batch at ``position`` of ``data``; ValueError or a RafkaError if corrupt."""
        if header.is_control:
            marker = parse_marker(data, position, header)
            ended = self.pending.complete(header.producer_id, lambda _key: True)
            if marker.control_type is ControlRecordType.COMMIT:
                apply_later(self.offsets, ended)
            return
        for record in decode_records(data, position, header):
            if record.key is None:
                continue
            key = decode_key(record.key)
            if header.is_transactional:
                # Only offsets are committed in transactions; a group record is never in one.
                if isinstance(key, OffsetKey):
                    logged = (
                        None
                        if record.value is None
                        else LoggedOffset(decode_offset(record.value), header.base_offset)
                    )
                    self.pending.add(header.producer_id, key, logged)
            elif isinstance(key, OffsetKey):
                if record.value is None:
                    self.offsets.pop(key, None)
                else:
                    self.offsets[key] = LoggedOffset(
                        decode_offset(record.value), header.base_offset
                    )
            elif record.value is None:
                self._delete_group(key.group)
            else:
                self.groups[key.group] = decode_group(record.value)

    def _delete_group(self, group_id: str) -> None:
        """A group tombstone: the group and every offset of it replayed so far go."""
        self.groups.pop(group_id, None)
        for stale in [k for k in self.offsets if k.group == group_id]:
            del self.offsets[stale]
        self.pending.discard(lambda key: key.group == group_id)

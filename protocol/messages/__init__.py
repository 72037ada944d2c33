"""Requests and responses between rafka's clients and actors, declared once as frozen dataclasses.

One module per area, named as Kafka names the APIs: ``produce``, ``fetch``, ``offsets``
(ListOffsets, OffsetsForLeaderEpoch), ``metadata``, ``control`` (LeaderAndIsr, UpdateMetadata,
StopReplica) and ``groups`` (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offset
commit and fetch, group administration).

May import ``rafka.protocol.errors`` and each other; nothing else of rafka.
"""

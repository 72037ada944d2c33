"""Requests and responses between rafka's clients and actors, declared once as frozen dataclasses.

One module per area, named as Kafka names the APIs: ``produce``, ``fetch``, ``offsets``
(ListOffsets, OffsetsForLeaderEpoch), ``metadata``, ``control`` (LeaderAndIsr, UpdateMetadata,
StopReplica), ``groups`` (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offset
commit and fetch, group administration), ``users`` (SCRAM credentials, KIP-554) and ``acls``
(Kafka ACLs).

May import ``rafka.protocol.errors`` and each other, and ``rafka.security.scram`` and
``rafka.security.acl`` (the SCRAM mechanisms and the ACL model, which need nothing of rafka but
the errors and the principal); nothing else of rafka.
"""

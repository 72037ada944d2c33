"""Consumer groups: the group protocol's rules, the coordinator actor, and ``__consumer_offsets``.

The core has no Ray and is unit-tested directly: ``group_metadata`` (the group state machine),
``membership`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup and expiry, with an injected clock),
``assignors``, ``offsets_codec`` (records of ``__consumer_offsets`` and a group's partition) and
``subscription_codec``. ``coordinator`` is the actor, one per broker, and the group metadata manager
reads and writes the groups' records in ``__consumer_offsets``.

The core may import ``rafka.protocol`` only; the coordinator actor also imports Ray,
``rafka.actors.names`` and ``rafka.actors.broker.config``. Clients may import the core, never the
coordinator, which only ``rafka.actors.spawn`` starts.
"""

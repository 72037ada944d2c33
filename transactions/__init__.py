"""Transactions: the transaction coordinator's rules, its actor, and ``__transaction_state``.

The core has no Ray and is unit-tested directly: the transaction state machine (Kafka's states with
their valid transitions as data), a transactional id's metadata, the records of
``__transaction_state`` and the manager that loads a partition of it and finds transactions past
their timeout. ``coordinator`` is the actor, one per broker, leading the ``__transaction_state``
partitions its broker leads.

The core may import ``rafka.protocol`` and the Ray-free ``rafka.groups`` modules (the partition of
a key, the offsets topic's name); the coordinator actor and its replica log also import Ray,
``rafka.actors.names`` and ``rafka.actors.broker.config``.
"""

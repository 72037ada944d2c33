"""A partition replica: one Ray actor per partition and broker, serving that replica's log.

``partition`` holds the rules, with no Ray: role, leader epoch, high watermark, ISR shrink and
expand, fetch-offset and epoch checks, KIP-101 truncation. ``purgatory`` parks acks=all produces and
long-poll fetches until their condition holds. ``replica`` is the threaded actor: it receives
messages, takes the replica's one lock, calls the partition, and runs the follower fetch loop.

May import ``rafka.log``, ``rafka.protocol``, ``rafka.actors.names``, ``rafka.actors.broker.config``
and ``rafka.actors.zk.data``; only ``replica`` imports Ray.
"""

"""The broker: ZooKeeper registration, replica supervision, control requests and metadata.

``broker`` is the actor: it registers ``/brokers/ids/<id>``, starts its controller, group
coordinator and replica actors, applies LeaderAndIsr, UpdateMetadata and StopReplica one at a time,
restarts replicas that died, and answers Metadata and FindCoordinator. ``config`` declares Kafka's
broker configs (``BrokerConfig``) and ``metadata_cache`` the cache that UpdateMetadata fills.

May import ``rafka.actors`` (``zk``, ``names``, ``spawn``), ``rafka.log.config``,
``rafka.protocol`` and the Ray-free ``rafka.groups`` modules; ``config`` and ``metadata_cache`` have
no Ray or kazoo.
"""

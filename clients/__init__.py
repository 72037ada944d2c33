"""The clients: ``Producer``, ``Consumer`` and ``Admin``, with kafka-python's API.

``producer`` (with ``accumulator`` and ``partitioner``) batches records per partition and sends them
to leader replicas; ``consumer`` (with ``fetcher``, and ``consumer_coordinator`` and
``coordinator_lookup``, the consumer's side of the group protocol) fetches from leader replicas and
takes part in consumer groups; ``admin`` (with ``group_admin``, ``config_admin``,
``reassignment_admin``, ``leader_admin`` and ``log_dir_admin``) creates and describes topics,
manages groups and configs, moves replicas and leaders and describes log directories; ``cluster``
finds actors and keeps metadata; ``records`` holds the client-side value types; ``config`` each
client's settings; ``client_metrics`` what the producer and consumer record for ``metrics()`` and
Prometheus, which ``metrics_reporter`` exports to Ray.

May import ``rafka.protocol``, the Ray-free ``rafka.groups`` modules (assignors, codecs, group id
validation), ``rafka.actors.names`` and ``rafka.metrics.registry`` and ``catalog``; the clients
reach the cluster only through the transport (one interface, a Ray implementation and an in-memory
fake for unit tests), never an actor's code. ``metrics_reporter`` imports
``rafka.metrics.ray_export`` only in a process already connected to Ray.
"""

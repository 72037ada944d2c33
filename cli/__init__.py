"""The ``rafka`` command, with the options of Kafka's own tools.

``main`` parses the command line and dispatches: ``up`` / ``down`` / ``status`` to
``rafka.cluster.launcher``, ``topics`` (kafka-topics.sh), ``configs`` (kafka-configs.sh),
``groups`` (kafka-consumer-groups.sh), ``produce`` / ``consume`` (the console producer and consumer,
in ``console``), ``perf`` (the producer and consumer perf tests), ``reassign-partitions``
(kafka-reassign-partitions.sh, with ``reassignment_json``, ``reassignment_throttle`` and
``reassignment_progress``), ``replica-verification`` and ``state-change-log-merger``.

May import ``rafka.clients``, ``rafka.cluster``, ``rafka.protocol``, ``rafka.actors.names``,
``rafka.actors.state_change`` (the log line format), the Ray-free placement functions of
``rafka.actors.controller.replica_assignment`` and ``rafka.groups.subscription_codec``; it reaches
the cluster only through the clients.
"""

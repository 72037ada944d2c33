"""The ``rafka`` command, with the options of Kafka's own tools.

``main`` parses the command line and dispatches: ``up`` / ``down`` / ``status`` to
``rafka.cluster.launcher``, ``topics`` (kafka-topics.sh), ``groups`` (kafka-consumer-groups.sh),
``produce`` / ``consume`` (the console producer and consumer, in ``console``) and ``perf`` (the
producer and consumer perf tests).

May import ``rafka.clients``, ``rafka.cluster``, ``rafka.protocol``, ``rafka.actors.names`` and
``rafka.groups.subscription_codec``; it reaches the cluster only through the clients.
"""

"""The ``rafka`` command, with the options of Kafka's own tools.

``main`` parses the command line and dispatches: ``up`` / ``down`` / ``status`` to
``rafka.cluster.launcher``, ``topics`` (kafka-topics.sh), ``configs`` (kafka-configs.sh),
``groups`` (kafka-consumer-groups.sh), ``produce`` / ``consume`` (the console producer and consumer,
in ``console``), ``perf`` (the producer and consumer perf tests), ``reassign-partitions``
(kafka-reassign-partitions.sh, with ``reassignment_json``, ``reassignment_throttle`` and
``reassignment_progress``), ``replica-verification``, ``state-change-log-merger``, ``logs`` (a
broker's server.log) and ``console`` (the web console, served by ``web_console``).

May import ``rafka.clients``, ``rafka.cluster``, ``rafka.protocol``, ``rafka.actors.names``,
``rafka.actors.state_change`` and ``rafka.actors.server_log`` (the log files), the Ray-free
placement functions of ``rafka.actors.controller.replica_assignment``,
``rafka.groups.subscription_codec`` and ``rafka.console`` (``web_console``); it reaches the cluster
only through the clients.
"""

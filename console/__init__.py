"""rafka console: a web app showing the cluster, its topics and consumer groups.

``app`` is the aiohttp application (pages, forms, charts' JSON, ``/metrics``); ``source`` is its one
door to the cluster (the admin client, the brokers' metrics, the controller's epoch) and gathers the
answers each page needs, which ``cluster_state`` turns, with no Ray, into the pages' views;
``history`` keeps the samples behind rates and charts, which ``charts`` takes and serves;
``operations`` checks and confirms the operations that change the cluster and ``jobs`` runs them.
``templates/`` and ``static/`` ship with the package.

May import ``rafka.clients``, ``rafka.protocol``, ``rafka.metrics``, ``rafka.actors.names``,
``rafka.groups.subscription_codec``, the Ray-free rules of ``rafka.actors.controller`` (topic names,
placement) and ``rafka.actors.broker.dynamic_config`` (topic configs), and the Ray-free helpers of
``rafka.cli``; only ``source`` imports Ray, and only when it builds the real source.
"""

"""Running a cluster: ``LocalCluster``, ``rafka up`` / ``down`` / ``status`` and embedded ZooKeeper.

``local_cluster`` starts ZooKeeper, a loopback Ray and the brokers in one process's reach, for
notebooks, tests and the demo; ``launcher`` starts or joins a Ray cluster and places one detached
broker per node for the ``rafka`` command; ``zookeeper_server`` runs a ZooKeeper server from the
jars pyspark ships; ``actor_deaths`` turns Ray's crash reports of the brokers' processes into
rafka's one-line notices in the process that started them.

May import ``rafka.actors`` (``spawn``, ``names``, ``broker.config``), ``rafka.clients`` and
``rafka.protocol``; nothing imports it but the package root, ``cli`` and tools.
"""

"""The Ray actors of a rafka cluster, grouped by role.

``broker/`` registers a broker in ZooKeeper, answers metadata and applies the controller's requests;
``controller/`` is the controller, active on one broker at a time; ``replica/`` serves one partition
replica from its broker's disk; ``zk/`` declares the ZooKeeper layout and wraps kazoo. ``names.py``
names every actor and ``spawn.py`` holds their Ray options and placement; ``process.py`` sends each
actor process's log records to its broker's ``server.log`` (``server_log.py``). The group
coordinator actor lives in ``rafka.groups``.

May import ``rafka.log``, ``rafka.protocol``, ``rafka.groups``, Ray and kazoo; never ``clients``,
``cluster``, ``cli`` or ``spark_bridge``. Decisions live in Ray-free modules that a thin actor shell
drives (see ARCHITECTURE.md).
"""

"""ZooKeeper: the layout of Kafka's ZooKeeper mode and the operations brokers and controllers use.

``data`` declares every znode's path and JSON encoding once, with no I/O; ``client`` wraps a kazoo
session under the cluster's chroot, with the controller's writes fenced by the ``/controller_epoch``
version and partition state writes compare-and-set on the znode's own version.

May import ``rafka.protocol`` and kazoo (``client`` only); nothing else of rafka.
"""

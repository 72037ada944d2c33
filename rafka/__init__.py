"""rafka: Apache Kafka's design rebuilt in Python on Ray actors, ZooKeeper and local disks.

The design card's folders install as sub-packages of this one namespace: ``rafka.log`` (the partition
log), ``rafka.protocol`` (record batches, error codes, messages), ``rafka.actors`` (brokers, replicas,
controller), ``rafka.groups`` (group coordinators) and ``rafka.spark_bridge`` (the PySpark data source).
"""

__version__ = "0.1.0"

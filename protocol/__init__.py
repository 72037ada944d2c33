"""What every layer shares: value types, Kafka's error codes, messages and the record batch.

``types`` declares ``TopicPartition``, ``NewTopic``, ``OffsetAndMetadata`` and the clock helper
once; ``errors`` holds Kafka's error codes and exceptions; ``messages`` the requests and responses
between clients and actors; ``records`` the record batch format, its builder and compression;
``log_layout`` Kafka's log line layout, for brokers' log files and rafka's terminal lines.

Imports nothing of rafka outside ``rafka.protocol`` but ``rafka.security.scram`` and
``rafka.security.acl`` (the SCRAM mechanisms and the client's salting, the ACL model, for
``messages.users`` and ``messages.acls``; they import only ``errors`` and the principal); no Ray,
no kazoo.
"""

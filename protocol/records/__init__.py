"""The record batch: the binary layout records keep from producer to disk to consumer.

``batch`` defines Kafka's v2 batch header and rafka's msgpack-column records section, and decodes
and verifies batches; ``builder`` builds them on the producer's side; ``compression`` wraps gzip,
lz4 and zstd; ``arrow_batches`` turns fetched batches into Arrow record batches column by column.

May import ``rafka.protocol.errors`` and each other; nothing else of rafka.
"""

"""The partition log: Kafka's on-disk storage for one partition replica.

``log`` appends, reads, rolls, truncates and recovers a partition directory of ``segment`` files
with sparse offset and time indexes (``offset_index``, ``time_index``, ``index_base``);
``checkpoint`` and ``files`` write its small files atomically; ``leader_epoch_cache`` keeps
(epoch, start offset) pairs for KIP-101 truncation; ``cleaner`` compacts; ``config`` declares
Kafka's topic configs (``LogConfig``). A log is owned by one replica actor and is not thread-safe.

May import ``rafka.protocol`` only; no Ray, no kazoo.
"""

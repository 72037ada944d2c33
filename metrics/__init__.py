"""rafka's metrics: Kafka's broker, topic, partition, controller, group and client metrics.

``registry`` holds the instruments a process updates on its hot path (plain Python numbers, no Ray)
and turns them into snapshots of ``MetricFamily``; ``catalog`` declares every metric once, under
Kafka's name in snake_case with a ``rafka_`` prefix; ``exposition`` renders families in Prometheus'
text format; ``broker_view`` derives a broker's families (partition and leader counts,
under-replicated partitions, consumer lag) from what its replicas and coordinator report;
``ray_export`` mirrors families into ``ray.util.metrics`` so each Ray node's Prometheus endpoint and
Ray's dashboard show them; ``scrape`` gathers every broker's families for rafka's own endpoint and
the console.

May import ``rafka.protocol``; only ``ray_export``, ``scrape`` and ``endpoint`` import Ray.
"""

"""What securing the Kafka listener costs: confluent-kafka producing and consuming through a
PLAINTEXT, an SSL and a SASL_SSL (SCRAM-SHA-256) listener of the same broker, in one run.

One broker with the three listeners (certificates from ``rafka certs``' code, a user made with
``Admin.alter_user_scram_credentials``), a 6-partition RF 1 topic per run, 100-byte records,
acks=1 and 1 MiB batches as in ``kafka_clients``. The listeners take turns, PLAINTEXT first and
last, and each secured run is shown as a ratio of the mean of the PLAINTEXT runs around it, so a
machine that slows down during the run does not pass for the cost of TLS.
Run it alone: ``.venv/bin/python bench/listener_security.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from kafka_clients import (
    PARTITIONS,
    RECORD,
    confluent_consume,
    confluent_produce,
    create_offsets_topic,
)

from rafka.cli.certs import make_certs
from rafka.cluster.local_cluster import LocalCluster
from rafka.protocol.messages.users import UserScramCredentialUpsertion
from rafka.security.scram import ScramMechanism
from rafka.testing import listener_address

NAMESPACE = "rafka-bench-listener-security"
RECORDS = 200_000
HEADER = ("listener", "produce (records/s)", "vs PLAINTEXT", "consume (records/s)", "vs PLAINTEXT")
USER, PASSWORD = "bench", "bench-secret"


def _security(listener: str, ca: Path) -> dict[str, Any]:
    """confluent-kafka's settings for one of the broker's listeners."""
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(ca)}
    return {
        "PLAINTEXT": {},
        "SSL": tls,
        "SASL_SSL": {
            **tls,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
        },
    }[listener]


def run(records: int = RECORDS) -> list[tuple[str, ...]]:
    """Produce and consume through each listener in turn; table rows as ``HEADER``."""
    order = ("PLAINTEXT", "SSL", "PLAINTEXT", "SASL_SSL", "PLAINTEXT")
    measured: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="rafka-bench-security-") as scratch:
        certs = make_certs(Path(scratch) / "certs", ["localhost", "127.0.0.1"], 1)
        config = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "ssl_keystore_location": str(certs.broker),
        }
        with LocalCluster(
            brokers=1, data_dir=Path(scratch) / "data", namespace=NAMESPACE, broker_config=config
        ) as cluster:
            admin = cluster.admin()
            admin.alter_user_scram_credentials(
                [
                    UserScramCredentialUpsertion.from_password(
                        USER, ScramMechanism.SCRAM_SHA_256, PASSWORD
                    )
                ]
            )
            create_offsets_topic(listener_address(admin, "PLAINTEXT"), admin)
            # A first PLAINTEXT turn, not counted, warms up what the first one would pay for.
            for turn, listener in enumerate(("PLAINTEXT", *order)):
                topic = f"security-{turn}"
                admin.create_topic(topic, PARTITIONS, 1)
                bootstrap = listener_address(admin, listener)
                security = _security(listener, certs.ca)
                produced = confluent_produce(bootstrap, topic, records, "1", security)
                consumed = confluent_consume(bootstrap, topic, records, security)
                admin.delete_topics([topic])
                if turn:
                    measured.append((listener, produced, consumed.records_per_s))
    rows: list[tuple[str, ...]] = []
    for turn, (listener, produce_rate, consume_rate) in enumerate(measured):
        if listener == "PLAINTEXT":
            continue
        before, after = measured[turn - 1], measured[turn + 1]
        plain_produce = (before[1] + after[1]) / 2
        plain_consume = (before[2] + after[2]) / 2
        rows.append(
            (
                listener,
                f"{produce_rate:,.0f}",
                f"{produce_rate / plain_produce:.2f}x",
                f"{consume_rate:,.0f}",
                f"{consume_rate / plain_consume:.2f}x",
            )
        )
    plain = [m for m in measured if m[0] == "PLAINTEXT"]
    # The PLAINTEXT runs' spread shows how much of a ratio the machine's noise could be.
    produce_range = f"{min(m[1] for m in plain):,.0f}–{max(m[1] for m in plain):,.0f}"
    consume_range = f"{min(m[2] for m in plain):,.0f}–{max(m[2] for m in plain):,.0f}"
    rows.insert(0, ("PLAINTEXT (3 runs)", produce_range, "1.00x", consume_range, "1.00x"))
    return rows


def title(records: int) -> str:
    """The table's title."""
    return (
        f"Listener security (1 broker, RF 1, confluent-kafka, {records:,} records of "
        f"{len(RECORD)} bytes, acks=1)"
    )


def main() -> None:
    """Print the rows as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="records per run")
    records = parser.parse_args().records
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table(title(records), HEADER, run(records))


if __name__ == "__main__":
    main()

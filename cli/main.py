"""The rafka command: launch a cluster and use it, with the options of Kafka's own tools.

rafka up [--brokers N] [--data-dir DIR] [--zookeeper HOST:PORT[/chroot]]
rafka status | rafka down
rafka topics --create --topic T --partitions 6 --replication-factor 3
rafka topics --alter --topic T --partitions 12
rafka topics --delete --topic 'T|logs-.*'
rafka configs --entity-type topics --entity-name T --alter --add-config retention.ms=60000
rafka configs --entity-type users --entity-name U --alter --add-config 'SCRAM-SHA-256=[password=P]'
rafka acls --add --allow-principal User:U --operation Read --topic T
rafka acls --list [--topic T] [--principal User:U]
rafka log-dirs --describe [--broker-list 0,1] [--topic-list T]
rafka groups --describe --group G
rafka groups --reset-offsets --group G --all-topics --to-earliest --execute
rafka produce --topic T            rafka consume --topic T --from-beginning
rafka perf produce --topic T --num-records 1000000 --record-size 100 --throughput -1
rafka preferred-replica-election [--path-to-json-file partitions.json]
rafka reassign-partitions --generate --topics-to-move-json-file F --broker-list 4,5,6
rafka reassign-partitions --execute --reassignment-json-file F [--throttle 10000000]
rafka reassign-partitions --verify --reassignment-json-file F [--wait]
rafka replica-verification --topic-white-list 'orders.*' [--report-interval-ms 30000]
rafka state-change-log-merger --logs-regex 'rafka-data/.*/state-change.log.*' --topic T
rafka logs --broker 0 [--follow] [--lines 100]
rafka console [--host 127.0.0.1] [--port 9021] [--read-only]
rafka certs --out DIR [--hosts localhost,127.0.0.1] [--days 365] [--client]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rafka.actors.names import DEFAULT_NAMESPACE
from rafka.cli import (
    acls,
    certs,
    configs,
    console,
    groups,
    log_dirs,
    logs,
    perf,
    preferred_replica_election,
    quiet,
    reassign_partitions,
    replica_verification,
    state_change_merger,
    topics,
    web_console,
)
from rafka.cli.errors import OneLineParser, report, usage_exit

CONNECT_TIMEOUT_MS = 5_000
"""How long a command waits for a named cluster address to answer before it says none runs."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = OneLineParser(prog="rafka", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="print a failure's traceback and Ray's warnings"
    )
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help="the cluster's Ray namespace"
    )
    parser.add_argument(
        "--address", default=None, help="Ray cluster address (default: RAY_ADDRESS or auto)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start or join a Ray cluster and start the brokers")
    up.add_argument(
        "--brokers",
        type=int,
        default=None,
        help="number of brokers (default: one per Ray node, or 3 on a single machine)",
    )
    up.add_argument("--data-dir", type=Path, default=Path("rafka-data"))
    up.add_argument(
        "--zookeeper",
        default=None,
        help="HOST:PORT[/chroot]; default: an embedded server in the data dir",
    )
    up.add_argument(
        "--port",
        type=int,
        default=None,
        help="port of the Ray head it starts (default: 6379, or a free one when that is taken)",
    )
    up.add_argument("--cluster-name", default="rafka")
    up.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve every broker's metrics for Prometheus at http://127.0.0.1:PORT/metrics",
    )
    up.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address the metrics endpoint binds (default 127.0.0.1; 0.0.0.0 exposes it)",
    )
    up.add_argument(
        "--broker-config", action="append", default=[], metavar="KEY=VALUE", help="a broker config"
    )
    up.add_argument(
        "--secure",
        action="store_true",
        help="the Ray head it starts requires the token in DATA_DIR/ray-auth-token on every call",
    )
    down = sub.add_parser("down", help="stop what rafka up started")
    down.add_argument("--data-dir", type=Path, default=Path("rafka-data"))
    status = sub.add_parser("status", help="brokers, controller and topics")
    status.add_argument(
        "--data-dir", type=Path, help="the data directory given to rafka up (default: auto)"
    )
    topics.add_arguments(
        sub.add_parser("topics", help="create, grow, delete, list, describe topics")
    )
    configs.add_arguments(
        sub.add_parser(
            "configs", help="describe and alter topic and broker configs and users' credentials"
        )
    )
    acls.add_arguments(sub.add_parser("acls", help="add, remove and list Kafka ACLs"))
    groups.add_arguments(
        sub.add_parser("groups", help="list, describe, reset offsets of, delete consumer groups")
    )
    log_dirs.add_arguments(
        sub.add_parser(
            "log-dirs", help="each broker's log directories: replica sizes and offset lags"
        )
    )
    console.add_produce_arguments(
        sub.add_parser("produce", help="console producer: one record per stdin line")
    )
    console.add_consume_arguments(sub.add_parser("consume", help="console consumer"))
    perf.add_arguments(sub.add_parser("perf", help="producer and consumer performance tests"))
    preferred_replica_election.add_arguments(
        sub.add_parser(
            "preferred-replica-election",
            help="move leadership back to each partition's preferred replica",
        )
    )
    reassign_partitions.add_arguments(
        sub.add_parser(
            "reassign-partitions",
            help="move partition replicas to other brokers: generate, execute and verify a plan",
        )
    )
    replica_verification.add_arguments(
        sub.add_parser(
            "replica-verification",
            help="check that the replicas of each partition hold the same batches",
        )
    )
    state_change_merger.add_arguments(
        sub.add_parser(
            "state-change-log-merger",
            help="merge the brokers' state-change logs into one history, in time order",
        )
    )
    logs.add_arguments(sub.add_parser("logs", help="print (and follow) a broker's server.log"))
    web_console.add_arguments(
        sub.add_parser("console", help="web console: cluster, topics, groups, operations, charts")
    )
    certs.add_arguments(
        sub.add_parser("certs", help="a development CA and certificates for SSL listeners")
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Dispatch a parsed command line."""
    if args.command == "state-change-log-merger":
        # Reads files only: no cluster, no Ray.
        return state_change_merger.run(args)
    if args.command == "certs":
        # Writes files only: no cluster, no Ray.
        return certs.run(args)
    if args.command == "logs":
        # Reads the file where it lies, or through the broker's actor when it is elsewhere.
        return logs.run(args, CONNECT_TIMEOUT_MS)
    from rafka.cluster import launcher

    if args.command == "up":
        config = dict(item.split("=", 1) for item in args.broker_config)
        description = launcher.up(
            args.data_dir,
            args.brokers,
            args.zookeeper,
            args.address,
            args.namespace,
            args.cluster_name,
            config,
            port=args.port,
            metrics_port=args.metrics_port,
            metrics_host=args.metrics_host,
            secure=args.secure,
        )
        print(
            f"rafka cluster {description.cluster_id} is up: brokers "
            f"{[b.broker_id for b in description.brokers]}, controller "
            f"{description.controller_id}, "
            f"namespace {args.namespace!r}, data in {args.data_dir.resolve()}"
        )
        if description.bootstrap_servers:
            print(f"Kafka clients: bootstrap_servers={description.bootstrap_servers}")
        for listener in description.listener_names:
            if listener != "PLAINTEXT":
                servers = description.listener_bootstrap_servers(listener)
                print(f"Kafka clients over {listener}: bootstrap_servers={servers}")
        state = launcher.ClusterState.load(args.data_dir.resolve())
        if state is not None and state.metrics_url:
            print(f"Prometheus metrics: {state.metrics_url}")
        return 0
    if args.command == "down":
        for line in launcher.down(args.data_dir):
            print(line)
        return 0
    if args.address:
        # The clients below connect themselves, to RAY_ADDRESS or else "auto".
        os.environ["RAY_ADDRESS"] = args.address
    # When they go to the cluster `rafka up --secure` started in the default data directory, they
    # need its Ray token as much as `rafka status --data-dir` does.
    launcher.adopt_token(args.address, Path("rafka-data"))
    if args.command == "status":
        found = launcher.status(args.namespace, args.address, args.data_dir, CONNECT_TIMEOUT_MS)
        print(json.dumps(found, indent=2))
        return 0
    if args.command == "topics":
        from rafka.clients.admin import Admin

        topics.check(args)
        return topics.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "configs":
        from rafka.clients.admin import Admin

        configs.check(args)
        return configs.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "acls":
        from rafka.clients.admin import Admin

        acls.check(args)
        return acls.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "groups":
        from rafka.clients.admin import Admin

        groups.check(args)
        return groups.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "log-dirs":
        from rafka.clients.admin import Admin

        return log_dirs.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "preferred-replica-election":
        from rafka.clients.admin import Admin

        preferred_replica_election.check(args)
        return preferred_replica_election.run(
            args, Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        )
    if args.command == "console":
        return web_console.run(args, CONNECT_TIMEOUT_MS)
    if args.command == "produce":
        return console.produce(args, args.namespace)
    if args.command == "consume":
        return console.consume(args, args.namespace)
    if args.command == "reassign-partitions":
        from rafka.clients.admin import Admin

        reassign_partitions.check(args)  # the files too, before connecting
        admin = Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        return reassign_partitions.run(args, admin)
    if args.command == "replica-verification":
        from rafka.cli.replica_reader import RayReplicaSource
        from rafka.clients.admin import Admin

        replica_verification.check(args)
        admin = Admin(namespace=args.namespace, connect_timeout_ms=CONNECT_TIMEOUT_MS)
        return replica_verification.run(args, RayReplicaSource(admin, args.namespace))
    return perf.run(args, args.namespace)


def _ray_log_file(args: argparse.Namespace) -> Path | None:
    """Where Ray's output goes: the command's data directory (``up`` creates it), if it has one."""
    data_dir: Path | None = getattr(args, "data_dir", None)
    if data_dir is not None and (args.command == "up" or data_dir.is_dir()):
        return data_dir / quiet.LOG_FILE
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rafka`` script: a failure prints one line on stderr (a traceback too
    with ``--verbose``) and exits non-zero."""
    verbose = "--verbose" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if not args.verbose:
            quiet.divert_ray_output(_ray_log_file(args))
        return run(args)
    except SystemExit as exc:
        raise usage_exit(exc) from None
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # every failure becomes one line; --verbose shows where
        report(exc, verbose)
        return 1


if __name__ == "__main__":
    sys.exit(main())

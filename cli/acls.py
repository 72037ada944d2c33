"""``rafka acls``: add, remove and list Kafka ACLs with kafka-acls.sh's options and output.

    rafka acls --add --allow-principal User:alice --operation Read --topic orders
    rafka acls --add --allow-principal User:bob --producer --topic orders [--idempotent]
    rafka acls --add --allow-principal User:carol --consumer --topic orders --group shipping
    rafka acls --list [--topic orders --resource-pattern-type match] [--principal User:alice]
    rafka acls --remove --allow-principal User:alice --operation Read --topic orders [--force]

As in kafka-acls, each principal gets each operation from each host (``*`` unless ``--allow-host``
or ``--deny-host`` says otherwise) on each resource named. ``--producer`` stands for WRITE,
DESCRIBE and CREATE on the topics and WRITE and DESCRIBE on the transactional ids, with
IDEMPOTENT_WRITE on the cluster under ``--idempotent``; ``--consumer`` for READ and DESCRIBE on
the topics and READ on the groups. ``--remove`` without a principal removes every ACL of the
resources named, and asks first unless ``--force``. ``--add`` and ``--remove`` then list the
resources' ACLs, as ``--list`` does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from rafka.clients.admin import Admin
from rafka.protocol.errors import Errors
from rafka.protocol.messages.acls import AclCreationResult, AclDeletionResult
from rafka.security.acl import (
    ACL,
    CLUSTER_NAME,
    VALID_OPERATIONS,
    WILDCARD,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from rafka.security.principal import KafkaPrincipal

Entry = tuple[str, str, ACLOperation, ACLPermissionType]
"""Kafka's AccessControlEntry: principal, host, operation and permission, on no resource yet."""
Plan = dict[ResourcePatternFilter, list[Entry]]
"""The entries the command line gives each resource (pattern filter), in order."""

PRODUCER_TOPIC_OPERATIONS = (ACLOperation.WRITE, ACLOperation.DESCRIBE, ACLOperation.CREATE)
PRODUCER_TRANSACTIONAL_ID_OPERATIONS = (ACLOperation.WRITE, ACLOperation.DESCRIBE)
CONSUMER_TOPIC_OPERATIONS = (ACLOperation.READ, ACLOperation.DESCRIBE)
CONSUMER_GROUP_OPERATIONS = (ACLOperation.READ,)
FILTER_PATTERN_TYPES = (ACLResourcePatternType.ANY, ACLResourcePatternType.MATCH)
"""Pattern types that select patterns (for --list and --remove) but no ACL may have."""
ANY_ENTRY = (None, None, ACLOperation.ANY, ACLPermissionType.ANY)
"""Kafka's AccessControlEntryFilter.ANY: principal, host, operation and permission."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka acls`` (kafka-acls.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument(
        "--list", action="store_true", help="list the ACLs of the resources named (all if none)"
    )
    parser.add_argument("--topic", action="append", default=[], help="a topic (* for every one)")
    parser.add_argument(
        "--group", action="append", default=[], help="a consumer group (* for every one)"
    )
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--transactional-id",
        action="append",
        default=[],
        help="a transactional id (* for every one)",
    )
    parser.add_argument(
        "--resource-pattern-type",
        type=pattern_type,
        default=ACLResourcePatternType.LITERAL,
        metavar="{literal,prefixed,any,match}",
        help="how the resource names match (default literal); --list and --remove also take "
        "any (every pattern type, the name exactly) and match (every pattern that applies to "
        "the name)",
    )
    parser.add_argument(
        "--allow-principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="a principal the ACLs allow, e.g. User:alice (User:* is every user)",
    )
    parser.add_argument(
        "--deny-principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="a principal the ACLs deny; a deny wins over any allow",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a host the allowed principals connect from (default *, every host)",
    )
    parser.add_argument(
        "--deny-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a host the denied principals connect from (default *, every host)",
    )
    parser.add_argument(
        "--operation",
        action="append",
        type=operation,
        default=[],
        help="an operation: Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
        "DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All "
        "(the default)",
    )
    parser.add_argument(
        "--principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="with --list: only this principal's ACLs",
    )
    parser.add_argument(
        "--producer",
        action="store_true",
        help="the ACLs of a producer: WRITE, DESCRIBE, CREATE on the topics, WRITE, DESCRIBE on "
        "the transactional ids",
    )
    parser.add_argument(
        "--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster"
    )
    parser.add_argument(
        "--consumer",
        action="store_true",
        help="the ACLs of a consumer: READ, DESCRIBE on the topics, READ on the groups",
    )
    parser.add_argument("--force", action="store_true", help="--remove without asking first")


def pattern_type(text: str) -> ACLResourcePatternType:
    """``--resource-pattern-type``, any case; UNKNOWN is none."""
    try:
        found = ACLResourcePatternType[text.strip().upper()]
    except KeyError:
        found = ACLResourcePatternType.UNKNOWN
    if found is ACLResourcePatternType.UNKNOWN:
        raise argparse.ArgumentTypeError(f"{text!r} is not literal, prefixed, any or match")
    return found


def operation(text: str) -> ACLOperation:
    """``--operation`` by Kafka's name, any case (``IdempotentWrite``, ``idempotent_write``)."""
    try:
        return ACLOperation.from_zk_name(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an operation") from None


def check(args: argparse.Namespace) -> None:
    """Refuse what kafka-acls refuses, before the command connects to a cluster."""
    if args.list:
        _refuse_with(
            "--list",
            {
                "--producer": args.producer,
                "--consumer": args.consumer,
                "--allow-host": args.allow_host,
                "--allow-principal": args.allow_principal,
                "--deny-host": args.deny_host,
                "--deny-principal": args.deny_principal,
            },
        )
    for role, given in (("--producer", args.producer), ("--consumer", args.consumer)):
        if given:
            _refuse_with(
                role,
                {
                    "--operation": args.operation,
                    "--deny-principal": args.deny_principal,
                    "--deny-host": args.deny_host,
                },
            )
    if args.principal and not args.list:
        raise SystemExit("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise SystemExit("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise SystemExit("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic
        or not args.group
        or (not args.producer and (args.cluster or args.transactional_id))
    ):
        raise SystemExit(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )
    if args.add and args.resource_pattern_type in FILTER_PATTERN_TYPES:
        raise SystemExit(
            f"A '--resource-pattern-type' value of '{args.resource_pattern_type.name}' is not "
            "valid when adding acls."
        )
    if args.resource_pattern_type is ACLResourcePatternType.PREFIXED and (
        args.cluster or args.idempotent
    ):
        raise SystemExit("The cluster resource is LITERAL; it takes no PREFIXED pattern")
    for principal in (*args.allow_principal, *args.deny_principal, *args.principal):
        try:
            KafkaPrincipal.parse(principal.strip())
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    if args.add or args.remove:
        found = plan(args)
        if args.add and any(not entries for entries in found.values()):
            raise SystemExit(
                "You must specify one of: --allow-principal, --deny-principal when trying to "
                "add ACLs."
            )


def _refuse_with(option: str, others: dict[str, object]) -> None:
    """SystemExit naming the first of ``others`` given with ``option``."""
    for other, given in others.items():
        if given:
            raise SystemExit(f"{option} cannot be used with {other}")


def resource_filters(args: argparse.Namespace) -> list[ResourcePatternFilter]:
    """The resources named, as pattern filters of the ``--resource-pattern-type``: topics, the
    cluster, groups, then transactional ids."""
    kind = args.resource_pattern_type

    def named(resource_type: ResourceType, names: Iterable[str]) -> list[ResourcePatternFilter]:
        return [ResourcePatternFilter(resource_type, name.strip(), kind) for name in names]

    # The cluster's one pattern is LITERAL, which ANY and MATCH filters select too.
    cluster_kind = kind if kind in FILTER_PATTERN_TYPES else ACLResourcePatternType.LITERAL
    cluster = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, cluster_kind)
    found = [
        *named(ResourceType.TOPIC, args.topic),
        *([cluster] if args.cluster or args.idempotent else []),
        *named(ResourceType.GROUP, args.group),
        *named(ResourceType.TRANSACTIONAL_ID, args.transactional_id),
    ]
    return list(dict.fromkeys(found))


def entries(args: argparse.Namespace, operations: Sequence[ACLOperation]) -> list[Entry]:
    """Each allowed principal's and each denied principal's ``operations`` from each of their
    hosts (``*`` unless given)."""
    found: list[Entry] = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, ACLPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, ACLPermissionType.DENY),
    ):
        for principal in principals:
            for op in operations:
                for host in hosts or [WILDCARD]:
                    found.append((principal.strip(), host.strip(), op, permission))
    return list(dict.fromkeys(found))


def plan(args: argparse.Namespace) -> Plan:
    """What ``--add`` adds to (or ``--remove`` removes from) each resource; SystemExit names a
    missing resource or an operation a resource type does not have."""
    filters = resource_filters(args)
    if not filters:
        raise SystemExit(
            "You must provide at least one resource: --topic <topic> or --cluster or --group "
            "<group> or --transactional-id <transactional-id>"
        )
    found: Plan = {}
    if not (args.producer or args.consumer):
        found = {f: entries(args, args.operation or [ACLOperation.ALL]) for f in filters}
    roles = (
        (args.producer, ResourceType.TOPIC, PRODUCER_TOPIC_OPERATIONS),
        (args.producer, ResourceType.TRANSACTIONAL_ID, PRODUCER_TRANSACTIONAL_ID_OPERATIONS),
        (args.producer and args.idempotent, ResourceType.CLUSTER, (ACLOperation.IDEMPOTENT_WRITE,)),
        (args.consumer, ResourceType.TOPIC, CONSUMER_TOPIC_OPERATIONS),
        (args.consumer, ResourceType.GROUP, CONSUMER_GROUP_OPERATIONS),
    )
    for wanted, resource_type, operations in roles:
        for f in filters:
            if wanted and f.resource_type is resource_type:
                found[f] = list(dict.fromkeys([*found.get(f, []), *entries(args, operations)]))
    for f, planned in found.items():
        valid = VALID_OPERATIONS[f.resource_type] | {ACLOperation.ALL}
        if any(op not in valid for _, _, op, _ in planned):
            names = ", ".join(sorted(op.name for op in valid))
            raise SystemExit(
                f"ResourceType {f.resource_type.name} only supports operations {names}"
            )
    return found


def format_entry(entry: Entry) -> str:
    """An entry as Kafka's AccessControlEntry prints it."""
    principal, host, op, permission = entry
    return (
        f"(principal={principal}, host={host}, operation={op.name}, "
        f"permissionType={permission.name})"
    )


def _block(heading: str, lines: Iterable[Entry]) -> str:
    """kafka-acls' block: the heading, then a tab-indented entry per line."""
    return f"{heading}: \n " + "\n".join(f"\t{format_entry(e)}" for e in lines) + " \n"


def _entry(acl: ACL) -> Entry:
    return (acl.principal, acl.host, acl.operation, acl.permission_type)


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Carry out ``--add``, ``--remove`` or ``--list`` and print what kafka-acls prints."""
    if args.add:
        for pattern_filter, planned in plan(args).items():
            pattern = ResourcePattern(
                pattern_filter.resource_type,
                pattern_filter.resource_name or "",
                pattern_filter.pattern_type,
            )
            print(_block(f"Adding ACLs for resource `{pattern}`", planned))
            _raise_first_failure(admin.create_acls([ACL(*entry, pattern) for entry in planned]))
    elif args.remove:
        for pattern_filter, planned in plan(args).items():
            if _confirmed(args, pattern_filter, planned):
                # No principal named: every ACL of the resource, as kafka-acls removes them.
                selectors = [ACLFilter(*entry, pattern_filter) for entry in planned] or [
                    ACLFilter(*ANY_ENTRY, pattern_filter)
                ]
                _raise_first_failure(admin.delete_acls(selectors))
    list_acls(args, admin)
    return 0


def _confirmed(
    args: argparse.Namespace, pattern_filter: ResourcePatternFilter, planned: list[Entry]
) -> bool:
    """``--force``, or a ``y`` (any case) on stdin to kafka-acls' question."""
    if args.force:
        return True
    if planned:
        body = _block("Are you sure you want to remove ACLs", planned)
        print(f"{body} from resource filter `{pattern_filter}`? (y/n)")
    else:
        question = "Are you sure you want to delete all ACLs for resource filter"
        print(f"{question} `{pattern_filter}`? (y/n)")
    return sys.stdin.readline().strip().lower() == "y"


def list_acls(args: argparse.Namespace, admin: Admin) -> None:
    """Print the ACLs of each resource named (of every resource when none is), grouped by
    resource pattern; with ``--principal``, only each principal's, under its own heading."""
    selectors = resource_filters(args) or [
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)
    ]
    by_pattern: dict[ResourcePattern, list[Entry]] = {}
    for selector in selectors:
        for acl in admin.describe_acls(ACLFilter(*ANY_ENTRY, selector)):
            listed = by_pattern.setdefault(acl.resource_pattern, [])
            if _entry(acl) not in listed:
                listed.append(_entry(acl))
    if not args.principal:
        _print_resources(by_pattern)
    for principal in dict.fromkeys(str(KafkaPrincipal.parse(p.strip())) for p in args.principal):
        print(f"ACLs for principal `{principal}`")
        _print_resources(
            {
                pattern: [e for e in found if e[0] == principal]
                for pattern, found in by_pattern.items()
            }
        )


def _print_resources(by_pattern: dict[ResourcePattern, list[Entry]]) -> None:
    for pattern, found in by_pattern.items():
        if found:
            print(_block(f"Current ACLs for resource `{pattern}`", found))


def _raise_first_failure(results: Sequence[AclCreationResult | AclDeletionResult]) -> None:
    """Raise the first failed ACL's or filter's Kafka error, naming its resource."""
    for result in results:
        if result.error is not Errors.NONE:
            what = result.acl if isinstance(result, AclCreationResult) else result.acl_filter
            raise result.error.exception(
                f"`{what.resource_pattern}`: {result.message or result.error.message}"
            )

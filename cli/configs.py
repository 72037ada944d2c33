"""``rafka configs``: describe and alter dynamic topic and broker configs, with kafka-configs.sh's
options and output."""

from __future__ import annotations

import argparse

from rafka.clients.admin import Admin
from rafka.protocol.configs import (
    DEFAULT_BROKER,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)

ENTITY_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka configs`` (kafka-configs.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the configs of an entity")
    action.add_argument("--alter", action="store_true", help="add or delete config overrides")
    parser.add_argument("--entity-type", required=True, choices=sorted(ENTITY_TYPES))
    parser.add_argument("--entity-name", help="the topic name or broker id")
    parser.add_argument(
        "--entity-default", action="store_true", help="the cluster-wide broker default"
    )
    parser.add_argument(
        "--add-config",
        default="",
        metavar="K=V,K2=V2",
        help="overrides to set; a list value goes in brackets: cleanup.policy=[compact,delete]",
    )
    parser.add_argument("--delete-config", default="", metavar="K,K2", help="overrides to remove")
    parser.add_argument(
        "--all", action="store_true", help="describe every config, not only the overrides"
    )


def parse_add_config(text: str) -> dict[str, str]:
    """``k=v,k2=[a,b]`` as a mapping (kafka-configs' syntax: brackets group a list value)."""
    configs: dict[str, str] = {}
    depth, item = 0, ""
    for char in text + ",":
        if char == "," and depth == 0:
            if item.strip():
                key, equals, value = item.partition("=")
                if not equals or not key.strip():
                    raise SystemExit(f"--add-config: {item.strip()!r} is not KEY=VALUE")
                configs[key.strip()] = value.strip().removeprefix("[").removesuffix("]")
            item = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        item += char
    return configs


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot run, before the command connects to a cluster."""
    if args.entity_default and args.entity_type != "brokers":
        raise SystemExit("--entity-default applies to --entity-type brokers only")
    if args.entity_default == bool(args.entity_name):
        raise SystemExit("give exactly one of --entity-name and --entity-default")
    if args.alter and not (args.add_config or args.delete_config):
        raise SystemExit("--alter needs --add-config or --delete-config")


def _resource(args: argparse.Namespace, configs: dict[str, object] | None = None) -> ConfigResource:
    name = DEFAULT_BROKER if args.entity_default else args.entity_name
    return ConfigResource(ENTITY_TYPES[args.entity_type], name, configs)


def format_entry(entry: ConfigEntry) -> str:
    """One config as kafka-configs --describe prints it, with every level that sets it (a
    sensitive one's values as ``null``)."""

    def shown(value: str | None) -> str:
        return "null" if value is None else value

    synonyms = ", ".join(f"{s.source.name}:{s.name}={shown(s.value)}" for s in entry.synonyms)
    sensitive = str(entry.is_sensitive).lower()
    return f"  {entry.name}={shown(entry.value)} sensitive={sensitive} synonyms={{{synonyms}}}"


def is_overridden(entry: ConfigEntry, resource: ConfigResource) -> bool:
    """Whether ``entry`` is set at the resource's own level (listed without --all): a topic
    override, or a dynamic override of that broker (or of the default, for the default)."""
    if resource.resource_type is ConfigResourceType.TOPIC:
        return entry.source is ConfigSource.TOPIC_CONFIG
    own = (
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if resource.is_default_broker
        else ConfigSource.DYNAMIC_BROKER_CONFIG
    )
    return any(s.source is own for s in entry.synonyms)


def describe(args: argparse.Namespace, admin: Admin) -> str:
    """kafka-configs --describe output for one entity."""
    resource = _resource(args)
    (result,) = admin.describe_configs([resource])
    entries = [e for e in result.entries if args.all or is_overridden(e, resource)]
    if resource.is_default_broker:
        heading = "Default configs for brokers in the cluster are:"
    else:
        heading = f"{'All' if args.all else 'Dynamic'} configs for {resource.describe()} are:"
    return "\n".join([heading, *(format_entry(e) for e in entries)])


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Execute ``rafka configs``."""
    check(args)
    if args.describe:
        print(describe(args, admin))
        return 0
    ops: dict[str, object] = {
        k: AlterConfigOp(AlterConfigOpType.SET, v)
        for k, v in parse_add_config(args.add_config).items()
    }
    for key in (k.strip() for k in args.delete_config.split(",")):
        if key:
            ops[key] = AlterConfigOp(AlterConfigOpType.DELETE)
    resource = _resource(args, ops)
    admin.incremental_alter_configs([resource])
    print(f"Completed updating config for {resource.describe()}.")
    return 0

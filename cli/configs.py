"""``rafka configs``: describe and alter dynamic topic and broker configs, and users' SCRAM
credentials, with kafka-configs.sh's options and output.

A user's credentials are added as kafka-configs adds them,
``--add-config 'SCRAM-SHA-256=[iterations=8192,password=secret]'`` (4096 iterations unless given),
and removed by mechanism, ``--delete-config SCRAM-SHA-512``. The password is salted here; only
the salt and the salted password reach the broker.
"""

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
from rafka.protocol.errors import RafkaError
from rafka.protocol.messages.users import (
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import DEFAULT_ITERATIONS, ScramMechanism, check_iterations

ENTITY_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}
USERS = "users"
"""The entity type of users, whose configs are their SCRAM credentials."""
SCRAM_FIELDS = ("iterations", "password")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka configs`` (kafka-configs.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the configs of an entity")
    action.add_argument("--alter", action="store_true", help="add or delete config overrides")
    parser.add_argument("--entity-type", required=True, choices=sorted([*ENTITY_TYPES, USERS]))
    parser.add_argument(
        "--entity-name",
        help="the topic name, broker id or user name (users: every user if left out)",
    )
    parser.add_argument(
        "--entity-default", action="store_true", help="the cluster-wide broker default"
    )
    parser.add_argument(
        "--add-config",
        default="",
        metavar="K=V,K2=V2",
        help="overrides to set; a list value goes in brackets: cleanup.policy=[compact,delete]; "
        "a user's credential: SCRAM-SHA-256=[iterations=8192,password=secret]",
    )
    parser.add_argument(
        "--delete-config",
        default="",
        metavar="K,K2",
        help="overrides to remove; a user's credentials by mechanism: SCRAM-SHA-512",
    )
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


def parse_scram_config(text: str) -> dict[ScramMechanism, tuple[str, int]]:
    """A user's ``--add-config`` (``SCRAM-SHA-256=[iterations=8192,password=secret]``) as each
    mechanism's password and iteration count; a key that is not a SCRAM mechanism, a field other
    than iterations and password, a missing password or an iteration count Kafka refuses is a
    usage error naming it."""
    found: dict[ScramMechanism, tuple[str, int]] = {}
    for name, value in parse_add_config(text).items():
        mechanism = _mechanism(name, "--add-config")
        fields: dict[str, str] = {}
        for part in value.split(","):
            key, equals, field_value = part.partition("=")
            if not equals or key.strip() not in SCRAM_FIELDS:
                raise SystemExit(
                    f"--add-config: {name} takes iterations=N and password=P, not {part.strip()!r}"
                )
            fields[key.strip()] = field_value
        if not fields.get("password"):
            raise SystemExit(f"--add-config: {name} needs a password: {name}=[password=...]")
        found[mechanism] = (fields["password"], _iterations(mechanism, fields.get("iterations")))
    return found


def parse_scram_deletions(text: str) -> list[ScramMechanism]:
    """A user's ``--delete-config`` (``SCRAM-SHA-256,SCRAM-SHA-512``) as the mechanisms whose
    credentials to delete."""
    return [_mechanism(n.strip(), "--delete-config") for n in text.split(",") if n.strip()]


def _mechanism(name: str, option: str) -> ScramMechanism:
    try:
        return ScramMechanism.named(name)
    except RafkaError as exc:
        raise SystemExit(f"{option}: users take SCRAM credentials only: {exc.message}") from None


def _iterations(mechanism: ScramMechanism, text: str | None) -> int:
    if text is None:
        return DEFAULT_ITERATIONS
    try:
        iterations = int(text)
        check_iterations(mechanism, iterations)
    except ValueError:
        raise SystemExit(
            f"--add-config: {mechanism.value} iterations must be a number, not {text!r}"
        ) from None
    except RafkaError as exc:
        raise SystemExit(f"--add-config: {exc.message}") from None
    return iterations


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot run, before the command connects to a cluster."""
    if args.entity_default and args.entity_type != "brokers":
        raise SystemExit("--entity-default applies to --entity-type brokers only")
    if args.entity_type == USERS:
        # Without a name --describe lists every user with a credential; --alter needs one.
        if args.alter and not args.entity_name:
            raise SystemExit("--alter --entity-type users needs --entity-name")
    elif args.entity_default == bool(args.entity_name):
        raise SystemExit("give exactly one of --entity-name and --entity-default")
    if args.alter and not (args.add_config or args.delete_config):
        raise SystemExit("--alter needs --add-config or --delete-config")
    if args.alter and args.entity_type == USERS:
        parse_scram_config(args.add_config)
        parse_scram_deletions(args.delete_config)


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


def format_user(description: UserScramCredentialsDescription) -> str:
    """A user's credentials as kafka-configs --describe prints them: each mechanism with its
    iteration count."""
    mechanisms = ", ".join(
        f"{i.mechanism.value}=iterations={i.iterations}" for i in description.credential_infos
    )
    return f"SCRAM credential configs for user-principal '{description.user}' are {mechanisms}"


def user_alterations(args: argparse.Namespace) -> list[UserScramCredentialAlteration]:
    """The deletions and upsertions of ``--alter --entity-type users``, each password salted."""
    user = args.entity_name
    alterations: list[UserScramCredentialAlteration] = [
        UserScramCredentialDeletion(user, m) for m in parse_scram_deletions(args.delete_config)
    ]
    for mechanism, (password, iterations) in parse_scram_config(args.add_config).items():
        alterations.append(
            UserScramCredentialUpsertion.from_password(user, mechanism, password, iterations)
        )
    return alterations


def run(args: argparse.Namespace, admin: Admin) -> int:
    """Execute ``rafka configs``."""
    check(args)
    if args.entity_type == USERS:
        if args.describe:
            users = None if args.entity_name is None else [args.entity_name]
            for description in admin.describe_user_scram_credentials(users):
                print(format_user(description))
            return 0
        admin.alter_user_scram_credentials(user_alterations(args))
        print(f"Completed updating config for user {args.entity_name}.")
        return 0
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

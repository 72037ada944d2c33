"""``rafka configs``: describe and alter dynamic topic and broker configs, users' SCRAM
credentials and client quotas, with kafka-configs.sh's options and output.

A user's credentials are added as kafka-configs adds them,
``--add-config 'SCRAM-SHA-256=[iterations=8192,password=secret]'`` (4096 iterations unless given),
and removed by mechanism, ``--delete-config SCRAM-SHA-512``. The password is salted here; only
the salt and the salted password reach the broker. Quotas (``producer_byte_rate``,
``consumer_byte_rate``) are configs of users, clients and a user's clients
(``--entity-type users --entity-name alice --entity-type clients --entity-name app-1``), and
``--entity-default`` names a type's default (``rafka.cli.client_quotas``).
"""

from __future__ import annotations

import argparse

from rafka.cli.client_quotas import (
    CLIENTS,
    QUOTA_ENTITY_TYPES,
    USERS,
    EntityArgs,
    completed,
    format_quotas,
    quota_entity,
    quota_filter,
    quota_ops,
)
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
from rafka.protocol.errors import Errors, RafkaError
from rafka.protocol.messages.quotas import ClientQuotaAlteration, ClientQuotaAlterationOp
from rafka.protocol.messages.users import (
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from rafka.security.scram import DEFAULT_ITERATIONS, ScramMechanism, check_iterations

ENTITY_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}
SCRAM_FIELDS = ("iterations", "password")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka configs`` (kafka-configs.sh's names)."""
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the configs of an entity")
    action.add_argument("--alter", action="store_true", help="add or delete config overrides")
    # Types and names pair up in the order given, as kafka-configs pairs them: users and clients
    # together name a user's client id, and --entity-default stands in for a name.
    parser.add_argument(
        "--entity-type",
        dest="entity_types",
        action="append",
        required=True,
        choices=sorted([*ENTITY_TYPES, *QUOTA_ENTITY_TYPES]),
        help="what to describe or alter; users and clients may be given together",
    )
    parser.add_argument(
        "--entity-name",
        dest="entity_names",
        action="append",
        help="the topic name, broker id, user name or client id (users, clients: every one of "
        "that type with --describe if left out)",
    )
    parser.add_argument(
        "--entity-default",
        dest="entity_names",
        action="append_const",
        const="",
        help="the cluster-wide default of brokers, users or client ids",
    )
    parser.add_argument(
        "--add-config",
        default="",
        metavar="K=V,K2=V2",
        help="overrides to set; a list value goes in brackets: cleanup.policy=[compact,delete]; "
        "a user's credential: SCRAM-SHA-256=[iterations=8192,password=secret]; quotas of users "
        "and clients: producer_byte_rate=1048576,consumer_byte_rate=2097152",
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


def is_scram(key: str) -> bool:
    """Whether a user's config key names a SCRAM credential (a quota's does not)."""
    return key.strip().upper().startswith("SCRAM-")


def parse_scram_config(text: str) -> dict[ScramMechanism, tuple[str, int]]:
    """The SCRAM keys of a user's ``--add-config``
    (``SCRAM-SHA-256=[iterations=8192,password=secret]``) as each mechanism's password and
    iteration count; a SCRAM key that is no mechanism, a field other than iterations and
    password, a missing password or an iteration count Kafka refuses is a usage error naming
    it."""
    found: dict[ScramMechanism, tuple[str, int]] = {}
    for name, value in parse_add_config(text).items():
        if not is_scram(name):
            continue
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
    """The SCRAM keys of a user's ``--delete-config`` (``SCRAM-SHA-256,SCRAM-SHA-512``) as the
    mechanisms whose credentials to delete."""
    return [_mechanism(n.strip(), "--delete-config") for n in _keys(text) if is_scram(n)]


def _keys(text: str) -> list[str]:
    """The keys of ``--delete-config``."""
    return [key.strip() for key in text.split(",") if key.strip()]


def parse_quota_changes(args: argparse.Namespace) -> tuple[ClientQuotaAlterationOp, ...]:
    """The quota keys of ``--add-config`` and ``--delete-config`` of users or clients (every key
    but a user's SCRAM credentials) as quota changes; a usage error names a bad one."""
    added = {k: v for k, v in parse_add_config(args.add_config).items() if not is_scram(k)}
    return quota_ops(added, [key for key in _keys(args.delete_config) if not is_scram(key)])


def _mechanism(name: str, option: str) -> ScramMechanism:
    try:
        return ScramMechanism.named(name)
    except RafkaError as exc:
        raise SystemExit(
            f"{option}: users take SCRAM credentials and quotas: {exc.message}"
        ) from None


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
    pairs = entities(args)
    kinds = [kind for kind, _ in pairs]
    if len(set(kinds)) < len(kinds):
        raise SystemExit(f"an --entity-type is given twice: {', '.join(kinds)}")
    if len(kinds) > 1 and set(kinds) != {USERS, CLIENTS}:
        raise SystemExit("only --entity-type users and clients may be given together")
    if args.alter and not (args.add_config or args.delete_config):
        raise SystemExit("--alter needs --add-config or --delete-config")
    kind, name = pairs[0]
    if kind in ENTITY_TYPES:
        if name == "" and kind != "brokers":
            raise SystemExit(
                "--entity-default applies to --entity-type brokers, users and clients only"
            )
        if name is None:
            raise SystemExit("give exactly one of --entity-name and --entity-default")
        return
    # Without a name --describe lists every entity of the type; --alter needs one.
    if args.alter and any(name is None for _, name in pairs):
        raise SystemExit(f"--alter --entity-type {kind} needs --entity-name or --entity-default")
    if args.alter:
        parse_quota_changes(args)
        scram = parse_scram_config(args.add_config) or parse_scram_deletions(args.delete_config)
        if scram and (kinds != [USERS] or not name):
            raise SystemExit("SCRAM credentials are a named user's, not a default's or a client's")


def entities(args: argparse.Namespace) -> EntityArgs:
    """Each ``--entity-type`` with the ``--entity-name`` (or "" for ``--entity-default``) given in
    the same position, as kafka-configs pairs them; None where no name was given."""
    names = args.entity_names or []
    if len(names) > len(args.entity_types):
        raise SystemExit("more --entity-name and --entity-default than --entity-type")
    return [
        (kind, names[i] if i < len(names) else None) for i, kind in enumerate(args.entity_types)
    ]


def _resource(args: argparse.Namespace, configs: dict[str, object] | None = None) -> ConfigResource:
    ((kind, name),) = entities(args)
    return ConfigResource(ENTITY_TYPES[kind], name or DEFAULT_BROKER, configs)


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


def describe_users_and_clients(pairs: EntityArgs, admin: Admin) -> None:
    """Print the quotas of the users, clients or users' clients named (each of a type left
    without a name), then, for users alone, their SCRAM credentials, as kafka-configs does; a
    user named with neither is RESOURCE_NOT_FOUND."""
    quotas = admin.describe_client_quotas(quota_filter(pairs), strict=True)
    for entity, values in sorted(quotas.items(), key=lambda item: str(item[0])):
        print(format_quotas(entity, values))
    name = pairs[0][1]
    if [kind for kind, _ in pairs] != [USERS] or name == "":
        return
    try:
        descriptions = admin.describe_user_scram_credentials(None if name is None else [name])
    except RafkaError as exc:
        if exc.error is Errors.RESOURCE_NOT_FOUND and quotas:
            return  # a user with quotas only
        raise
    for description in descriptions:
        print(format_user(description))


def user_alterations(args: argparse.Namespace, user: str) -> list[UserScramCredentialAlteration]:
    """The credential deletions and upsertions of ``--alter --entity-type users`` for ``user``,
    each password salted."""
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
    pairs = entities(args)
    if pairs[0][0] in QUOTA_ENTITY_TYPES:
        if args.describe:
            describe_users_and_clients(pairs, admin)
            return 0
        quota_changes = parse_quota_changes(args)
        if quota_changes:
            admin.alter_client_quotas([ClientQuotaAlteration(quota_entity(pairs), quota_changes)])
        user = pairs[0][1]
        if user and (
            parse_scram_config(args.add_config) or parse_scram_deletions(args.delete_config)
        ):
            admin.alter_user_scram_credentials(user_alterations(args, user))
        print(completed(pairs))
        return 0
    if args.describe:
        print(describe(args, admin))
        return 0
    ops: dict[str, object] = {
        k: AlterConfigOp(AlterConfigOpType.SET, v)
        for k, v in parse_add_config(args.add_config).items()
    }
    for key in _keys(args.delete_config):
        ops[key] = AlterConfigOp(AlterConfigOpType.DELETE)
    resource = _resource(args, ops)
    admin.incremental_alter_configs([resource])
    print(f"Completed updating config for {resource.describe()}.")
    return 0

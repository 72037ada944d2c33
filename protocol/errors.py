"""Kafka's protocol error codes and the exceptions that stand for them.

Two representations of one failure, for two places:

* ``Errors`` -- what travels. Every response carries a per-partition or
  per-request error code, an ``int`` on the wire, with Apache Kafka's numbers so
  that logs, tools and habits carry over. Responses are plain data (msgpack'd,
  shipped between Ray actors), so they hold the code, never a Python exception.
* ``RafkaError`` and its subclasses -- what is raised. A client turns a code
  into an exception with ``Errors.X.exception()`` or ``raise_for(code)`` once it
  decides to fail, and the exception stays inside that process.

Retriability follows Kafka: a code is retriable when Java's exception for it
extends ``RetriableException`` (``InvalidMetadataException`` subclasses
included), meaning the same request may succeed later, usually after a
metadata refresh. Retriable exceptions also inherit from ``RetriableError`` so
retry loops can catch just those.
"""

from __future__ import annotations

import logging
import re
from enum import IntEnum
from typing import ClassVar

_log = logging.getLogger(__name__)


class Errors(IntEnum):
    """Kafka's error codes; each member knows its message, retriability and exception.

    The member table below is the single source of truth: every row is
    ``NAME = (code, retriable, default message)``. The exception classes and
    ``__all__`` are generated from it, or checked against it at import.
    """

    message: str
    retriable: bool

    UNKNOWN_SERVER_ERROR = (-1, False, "The broker failed unexpectedly while handling the request.")
    NONE = (0, False, "No error.")
    OFFSET_OUT_OF_RANGE = (1, False, "The requested offset is outside the partition's log.")
    CORRUPT_MESSAGE = (
        2,
        True,
        "A record failed its CRC check, has an invalid size, lacks the key "
        "a compacted topic needs, or is otherwise malformed.",
    )
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This broker does not host the topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "The fetch size in the request is not valid.")
    LEADER_NOT_AVAILABLE = (
        5,
        True,
        "The partition has no leader right now, most likely because a "
        "leader election is under way.",
    )
    NOT_LEADER_OR_FOLLOWER = (
        6,
        True,
        "This broker is not the partition's current leader, or not "
        "a replica of it at all; refresh metadata and retry.",
    )
    REQUEST_TIMED_OUT = (7, True, "The broker could not complete the request within its timeout.")
    BROKER_NOT_AVAILABLE = (8, False, "The requested broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "This broker holds no replica of the requested partition.")
    MESSAGE_TOO_LARGE = (10, False, "A record is larger than the broker's maximum message size.")
    STALE_CONTROLLER_EPOCH = (
        11,
        False,
        "The request came from a controller with an outdated "
        "epoch; control has moved to another broker.",
    )
    OFFSET_METADATA_TOO_LARGE = (12, False, "The offset commit's metadata string is too long.")
    NETWORK_EXCEPTION = (13, True, "The connection closed before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (
        14,
        True,
        "The coordinator is still loading its state and cannot serve requests yet.",
    )
    COORDINATOR_NOT_AVAILABLE = (15, True, "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "This broker is not the coordinator for the group or transaction.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The topic is not valid for this operation.")
    RECORD_LIST_TOO_LARGE = (18, False, "The record batch is larger than the topic's segment size.")
    NOT_ENOUGH_REPLICAS = (
        19,
        True,
        "The write was rejected: fewer replicas are in sync than min.insync.replicas requires.",
    )
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20,
        True,
        "The records were appended, but fewer replicas were in sync than required.",
    )
    INVALID_REQUIRED_ACKS = (21, False, "The produce request's acks value is not allowed.")
    ILLEGAL_GENERATION = (22, False, "The group generation id is not the current one.")
    INCONSISTENT_GROUP_PROTOCOL = (
        23,
        False,
        "The member's protocols have nothing in common with those of the group's current members.",
    )
    INVALID_GROUP_ID = (24, False, "The group id is not valid.")
    UNKNOWN_MEMBER_ID = (25, False, "The coordinator does not know this member id.")
    INVALID_SESSION_TIMEOUT = (
        26,
        False,
        "The session timeout is outside the range the broker "
        "allows (group.min.session.timeout.ms to "
        "group.max.session.timeout.ms).",
    )
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "The offset commit carries data of an invalid size.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Not authorized to perform this cluster operation.")
    INVALID_TIMESTAMP = (32, False, "A record's timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The broker does not offer this SASL mechanism.")
    ILLEGAL_SASL_STATE = (34, False, "The request is not allowed in this SASL handshake state.")
    UNSUPPORTED_VERSION = (35, False, "The broker does not support this version of the API.")
    TOPIC_ALREADY_EXISTS = (36, False, "A topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "The requested number of partitions is not valid.")
    INVALID_REPLICATION_FACTOR = (
        38,
        False,
        "The replication factor is below 1 or above the number of available brokers.",
    )
    INVALID_REPLICA_ASSIGNMENT = (39, False, "The replica assignment is not valid.")
    INVALID_CONFIG = (40, False, "The configuration is not valid.")
    NOT_CONTROLLER = (41, True, "This broker is not the cluster's active controller.")
    INVALID_REQUEST = (
        42,
        False,
        "The request is malformed or breaks the protocol; the broker log has details.",
    )
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (
        43,
        False,
        "The broker's message format version cannot serve this request.",
    )
    POLICY_VIOLATION = (44, False, "The request parameters break the configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (
        45,
        False,
        "The broker received a producer sequence number out of order.",
    )
    DUPLICATE_SEQUENCE_NUMBER = (
        46,
        False,
        "The broker already has a batch with this producer sequence number.",
    )
    INVALID_PRODUCER_EPOCH = (47, False, "The producer's epoch is older than the current one.")
    INVALID_TXN_STATE = (48, False, "The transaction's state does not allow this operation.")
    INVALID_PRODUCER_ID_MAPPING = (
        49,
        False,
        "The producer id is not the one currently assigned to this transactional id.",
    )
    INVALID_TRANSACTION_TIMEOUT = (
        50,
        False,
        "The transaction timeout exceeds the broker's transaction.max.timeout.ms.",
    )
    CONCURRENT_TRANSACTIONS = (51, True, "The producer's last transaction is still completing.")
    TRANSACTION_COORDINATOR_FENCED = (
        52,
        False,
        "The transaction coordinator that sent the marker is no longer the current one.",
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Not allowed to use the transactional id.")
    SECURITY_DISABLED = (54, False, "Security features are disabled on the broker.")
    OPERATION_NOT_ATTEMPTED = (
        55,
        False,
        "The broker skipped this operation, usually because another part of the same batch failed.",
    )
    KAFKA_STORAGE_ERROR = (56, True, "The broker hit a disk error while accessing the log.")
    LOG_DIR_NOT_FOUND = (57, False, "The log directory is not in the broker's configuration.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (
        59,
        False,
        "The broker has no state for this producer id, usually "
        "because retention deleted all of its records.",
    )
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is already in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are not enabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "The delegation token does not exist on the broker.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "The principal is not the token's owner/renewer.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64,
        False,
        "Delegation token requests are not allowed "
        "on plaintext, one-way SSL or "
        "token-authenticated channels.",
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "Not allowed to use the delegation token.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "The principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "No group with this id exists.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The broker has no fetch session with this id.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch is not the expected one.")
    LISTENER_NOT_FOUND = (72, True, "No leader listener matches the one this request used.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is disabled on the broker.")
    FENCED_LEADER_EPOCH = (74, True, "The request's leader epoch is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The request's leader epoch is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "The client cannot decode this compression type.")
    STALE_BROKER_EPOCH = (77, False, "The broker's epoch has changed since the request was issued.")
    OFFSET_NOT_AVAILABLE = (
        78,
        True,
        "The new leader's high watermark has not caught up yet, so the offset cannot be served.",
    )
    MEMBER_ID_REQUIRED = (79, False, "The member must obtain a member id before joining the group.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "The preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "The group already has its maximum number of members.")
    FENCED_INSTANCE_ID = (
        82,
        False,
        "A newer member with the same group.instance.id replaced this static member.",
    )
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No eligible leader is available.")
    ELECTION_NOT_NEEDED = (84, True, "The partition does not need a leader election.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86,
        False,
        "Cannot delete offsets of a topic the group is still subscribed to.",
    )
    INVALID_RECORD = (87, False, "The broker's validation rejected the record.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "Pending transactional offsets must be resolved first.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "The request exceeded the throttling quota.")
    PRODUCER_FENCED = (90, False, "A newer producer with this transactional id fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "The request refers to a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "The request refers to the same resource more than once.")
    UNACCEPTABLE_CREDENTIAL = (
        93,
        False,
        "The requested credential does not meet the acceptance criteria.",
    )
    INCONSISTENT_VOTER_SET = (94, False, "The sender or receiver is not in the current voter set.")
    INVALID_UPDATE_VERSION = (95, False, "The update version is not valid.")
    FEATURE_UPDATE_FAILED = (
        96,
        False,
        "The finalized features could not be updated because of an unexpected broker error.",
    )
    PRINCIPAL_DESERIALIZATION_FAILURE = (
        97,
        False,
        "The forwarded request's principal could not "
        "be deserialized; the cluster's security setup "
        "disagrees.",
    )
    SNAPSHOT_NOT_FOUND = (98, False, "The requested snapshot does not exist.")
    POSITION_OUT_OF_RANGE = (
        99,
        False,
        "The requested position is negative or past the end of the snapshot.",
    )
    UNKNOWN_TOPIC_ID = (100, True, "This broker does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "Another broker already registered with this id.")
    BROKER_ID_NOT_REGISTERED = (102, False, "No broker is registered with this id.")
    INCONSISTENT_TOPIC_ID = (103, True, "The request's topic id differs from the one in the log.")
    INCONSISTENT_CLUSTER_ID = (104, False, "The request's cluster id differs from the server's.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactional id does not exist.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA = (107, False, "The proposed ISR contains a replica that is not eligible.")
    NEW_LEADER_ELECTED = (108, False, "The update succeeded, but a new leader has been elected.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "The requested offset is in tiered storage.")
    FENCED_MEMBER_EPOCH = (
        110,
        False,
        "The coordinator fenced the member epoch; the member must "
        "give up its partitions and rejoin.",
    )
    UNRELEASED_INSTANCE_ID = (
        111,
        False,
        "Another member still holds this instance id and must leave first.",
    )
    UNSUPPORTED_ASSIGNOR = (112, False, "The group does not support this assignor or its version.")
    STALE_MEMBER_EPOCH = (
        113,
        False,
        "The member epoch is stale; retry once the heartbeat returns the current epoch.",
    )
    MISMATCHED_ENDPOINT_TYPE = (114, False, "The request reached an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "This endpoint type is not supported yet.")
    UNKNOWN_CONTROLLER_ID = (116, False, "No controller with this id is known.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "The telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE = (118, False, "The pushed telemetry exceeds the broker's size limit.")
    INVALID_REGISTRATION = (119, False, "The controller considers this registration invalid.")
    TRANSACTION_ABORTABLE = (
        120,
        False,
        "The transaction hit an error; abort it to keep using this transactional id.",
    )
    INVALID_RECORD_STATE = (
        121,
        False,
        "The record's delivery state does not allow this acknowledgement.",
    )
    SHARE_SESSION_NOT_FOUND = (122, True, "The share session does not exist.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "The share session epoch is not valid.")
    FENCED_STATE_EPOCH = (
        124,
        False,
        "The share-group state epoch does not match the share coordinator's.",
    )
    INVALID_VOTER_KEY = (125, False, "The voter key does not match the receiving replica's key.")
    DUPLICATE_VOTER = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "The regular expression is not valid.")

    def __new__(cls, code: int, retriable: bool, message: str) -> Errors:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """Map a wire code to its member; codes from newer brokers become UNKNOWN_SERVER_ERROR."""
        member = _BY_CODE.get(code)
        if member is None:
            _log.warning("unknown Kafka error code %d; treating it as UNKNOWN_SERVER_ERROR", code)
            return cls.UNKNOWN_SERVER_ERROR
        return member

    @property
    def exception_class(self) -> type[RafkaError]:
        """The ``RafkaError`` subclass raised for this code (NONE has none)."""
        if self is Errors.NONE:
            raise ValueError("Errors.NONE is success and has no exception class")
        return _EXCEPTION_CLASSES[self]

    def exception(self, message: str | None = None) -> RafkaError:
        """Build (not raise) the exception for this code, with an optional specific message."""
        return self.exception_class(message)


_BY_CODE: dict[int, Errors] = {member.value: member for member in Errors}


class RafkaError(Exception):
    """Base of every rafka exception: carries the Kafka code it stands for.

    Subclasses set ``error``; ``retriable`` is True exactly for subclasses of
    ``RetriableError``, whose bases are chosen from ``Errors.retriable``.
    """

    error: ClassVar[Errors] = Errors.UNKNOWN_SERVER_ERROR
    retriable: ClassVar[bool] = False

    def __init__(self, message: str | None = None) -> None:
        self.message = message if message is not None else self.error.message
        # Passing the message on keeps ``args`` so pickling (Ray ships
        # exceptions between processes) rebuilds the instance.
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.error.name} ({self.error.value}): {self.message}"


class RetriableError(RafkaError):
    """Mixin base for failures that may succeed if the request is retried later."""

    retriable: ClassVar[bool] = True


class KafkaTimeoutError(RetriableError):
    """The client got no answer in time (producer futures, cluster lookups).

    Raised by the client itself, unlike ``RequestTimedOutError`` which relays a
    broker that answered with REQUEST_TIMED_OUT.
    """

    error = Errors.REQUEST_TIMED_OUT


# The codes callers catch by name get explicit classes so readers and type
# checkers can see them; the remaining codes get generated classes below.
# Each base must agree with the table, which ``_build_exception_classes`` checks.


class UnknownServerError(RafkaError):
    """The broker failed unexpectedly; the request itself may have been fine."""

    error = Errors.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(RafkaError):
    """The fetch position is outside the log; the consumer must reset its offset."""

    error = Errors.OFFSET_OUT_OF_RANGE


class CorruptMessageError(RetriableError):
    """A record failed validation, e.g. its CRC; resending an intact copy may succeed."""

    error = Errors.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(RetriableError):
    """The broker does not host the partition; metadata may be stale or the topic new."""

    error = Errors.UNKNOWN_TOPIC_OR_PARTITION


class LeaderNotAvailableError(RetriableError):
    """The partition has no leader during an election; retry after a metadata refresh."""

    error = Errors.LEADER_NOT_AVAILABLE


class NotLeaderOrFollowerError(RetriableError):
    """The request went to the wrong broker; refresh metadata and retry."""

    error = Errors.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(RetriableError):
    """The broker answered that the request timed out (e.g. waiting for acks=all)."""

    error = Errors.REQUEST_TIMED_OUT


class MessageTooLargeError(RafkaError):
    """A record exceeds the broker's size limit; retrying the same record cannot help."""

    error = Errors.MESSAGE_TOO_LARGE


class StaleControllerEpochError(RafkaError):
    """A request from a deposed controller was rejected, protecting against split brain."""

    error = Errors.STALE_CONTROLLER_EPOCH


class NetworkError(RetriableError):
    """The connection dropped before the response; the request may or may not have applied."""

    error = Errors.NETWORK_EXCEPTION


class CoordinatorLoadInProgressError(RetriableError):
    """The coordinator is still loading group or transaction state; retry shortly."""

    error = Errors.COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailableError(RetriableError):
    """No coordinator is currently available for the group or transaction."""

    error = Errors.COORDINATOR_NOT_AVAILABLE


class NotCoordinatorError(RetriableError):
    """The broker is not the coordinator; look the coordinator up again and retry."""

    error = Errors.NOT_COORDINATOR


class InvalidTopicError(RafkaError):
    """The topic name is illegal or the topic may not be used this way."""

    error = Errors.INVALID_TOPIC_EXCEPTION


class RecordListTooLargeError(RafkaError):
    """A batch exceeds the segment size, so the log can never hold it."""

    error = Errors.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(RetriableError):
    """Too few in-sync replicas to accept an acks=all write; nothing was appended."""

    error = Errors.NOT_ENOUGH_REPLICAS


class NotEnoughReplicasAfterAppendError(RetriableError):
    """Appended on the leader but the ISR shrank below the minimum before acknowledging."""

    error = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


class IllegalGenerationError(RafkaError):
    """The member's generation is outdated; it must rejoin the group."""

    error = Errors.ILLEGAL_GENERATION


class InconsistentGroupProtocolError(RafkaError):
    """The member's protocols share nothing with those of the group's other members."""

    error = Errors.INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupIdError(RafkaError):
    """The group id is empty or otherwise not allowed."""

    error = Errors.INVALID_GROUP_ID


class UnknownMemberIdError(RafkaError):
    """The coordinator forgot this member (e.g. session expired); it must rejoin."""

    error = Errors.UNKNOWN_MEMBER_ID


class RebalanceInProgressError(RafkaError):
    """The group is rebalancing; the member must rejoin before it can commit or sync."""

    error = Errors.REBALANCE_IN_PROGRESS


class UnsupportedVersionError(RafkaError):
    """The broker does not speak the requested API version."""

    error = Errors.UNSUPPORTED_VERSION


class TopicAlreadyExistsError(RafkaError):
    """Topic creation failed because the name is taken."""

    error = Errors.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(RafkaError):
    """The requested partition count is not allowed."""

    error = Errors.INVALID_PARTITIONS


class InvalidReplicationFactorError(RafkaError):
    """The replication factor cannot be met by the live brokers."""

    error = Errors.INVALID_REPLICATION_FACTOR


class InvalidConfigError(RafkaError):
    """A topic or broker configuration value was rejected."""

    error = Errors.INVALID_CONFIG


class NotControllerError(RetriableError):
    """The request reached a broker that is not the active controller; find it and retry."""

    error = Errors.NOT_CONTROLLER


class InvalidRequestError(RafkaError):
    """The request is malformed; a client bug rather than a cluster condition."""

    error = Errors.INVALID_REQUEST


class KafkaStorageError(RetriableError):
    """A log directory failed on the broker; leadership should move elsewhere, then retry."""

    error = Errors.KAFKA_STORAGE_ERROR


class NonEmptyGroupError(RafkaError):
    """The group still has members, so it cannot be deleted or have its offsets reset."""

    error = Errors.NON_EMPTY_GROUP


class GroupIdNotFoundError(RafkaError):
    """No group with this id exists."""

    error = Errors.GROUP_ID_NOT_FOUND


class FencedLeaderEpochError(RetriableError):
    """The sender's leader epoch is stale; refresh metadata and retry."""

    error = Errors.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(RetriableError):
    """The broker has not yet learned the sender's newer leader epoch; retry shortly."""

    error = Errors.UNKNOWN_LEADER_EPOCH


class UnsupportedCompressionTypeError(RafkaError):
    """The batch uses a compression codec this process cannot decode."""

    error = Errors.UNSUPPORTED_COMPRESSION_TYPE


class InvalidRecordError(RafkaError):
    """The broker's validation rejected a record, e.g. a null key on a compacted topic."""

    error = Errors.INVALID_RECORD


def _class_name(member: Errors) -> str:
    """CamelCase of the member name plus ``Error``, dropping a trailing _ERROR/_EXCEPTION."""
    stem = re.sub(r"_(ERROR|EXCEPTION)$", "", member.name)
    return "".join(word.capitalize() for word in stem.split("_")) + "Error"


def _build_exception_classes() -> dict[Errors, type[RafkaError]]:
    """Pick up the explicit classes above and generate the rest, one per code except NONE."""
    classes: dict[Errors, type[RafkaError]] = {}
    for member in Errors:
        if member is Errors.NONE:
            continue
        name = _class_name(member)
        cls = globals().get(name)
        if cls is None:
            base = RetriableError if member.retriable else RafkaError
            cls = type(
                name,
                (base,),
                {
                    "__doc__": f"Error for {member.name} ({member.value}): {member.message}",
                    "__module__": __name__,
                    "error": member,
                },
            )
            globals()[name] = cls
        elif cls.error is not member or cls.retriable is not member.retriable:
            raise TypeError(f"{name} disagrees with the Errors table entry for {member.name}")
        classes[member] = cls
    return classes


_EXCEPTION_CLASSES = _build_exception_classes()


def raise_for(code: int | Errors, message: str | None = None) -> None:
    """Raise the exception for ``code`` unless it is NONE; the usual response check."""
    error = Errors.for_code(code)
    if error is Errors.NONE:
        return
    # Keep an unrecognised number visible; UNKNOWN_SERVER_ERROR alone would hide it.
    if message is None and error.value != code:
        message = f"{error.message} (unknown error code {int(code)})"
    raise error.exception(message)


__all__ = [
    "Errors",
    "KafkaTimeoutError",
    "RafkaError",
    "RetriableError",
    "raise_for",
    *sorted(cls.__name__ for cls in _EXCEPTION_CLASSES.values()),
]

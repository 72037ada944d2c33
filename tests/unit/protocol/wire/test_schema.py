"""Tests for rafka.protocol.wire.schema: encoding and decoding derived from declarations."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rafka.protocol.errors import RafkaError
from rafka.protocol.wire.primitives import Reader, WireFormatError, Writer
from rafka.protocol.wire.schema import (
    BOOL,
    BYTES,
    INT16,
    INT32,
    INT64,
    STRING,
    UUID,
    Api,
    ArrayOf,
    Field,
    Message,
    Struct,
    Versions,
)

_PART = Struct(
    "Part",
    (
        Field("index", INT32),
        Field("epoch", INT32, "1+", default=-1),
        Field("note", STRING, "2+", nullable_versions="2+", default=None),
    ),
)
_LEADER = Struct("Leader", (Field("id", INT32, default=-1), Field("epoch", INT32, default=-1)))

# A toy message exercising each rule: version-gated, nullable, tagged and nested fields.
DEMO = Message(
    api_key=99,
    name="DemoRequest",
    valid_versions="0-3",
    flexible_versions="2+",
    fields=(
        Field("name", STRING),
        Field("id", UUID, "1+"),
        Field("parts", ArrayOf(_PART), nullable_versions="1+"),
        Field("flag", BOOL, "0-1", default=True),
        Field("blob", BYTES, "3+"),
        Field(
            "trace", STRING, "2+", nullable_versions="2+", tagged_versions="2+", tag=0, default=None
        ),
        Field("leader", _LEADER, "2+", tagged_versions="2+", tag=5),
        Field("ids", ArrayOf(INT64), "2+"),
    ),
)


def test_version_ranges_parse_kafkas_syntax() -> None:
    assert 7 in Versions.parse("3+")
    assert 2 not in Versions.parse("3+")
    assert [v for v in range(6) if v in Versions.parse("1-3")] == [1, 2, 3]
    assert [v for v in range(6) if v in Versions.parse("4")] == [4]
    assert [v for v in range(6) if v in Versions.parse("none")] == []
    assert Versions.parse("0-12").max == 12


def test_classic_version_encodes_only_the_fields_present() -> None:
    body = {"name": "ab", "parts": [{"index": 3, "epoch": 9}], "flag": False}
    assert DEMO.encode(body, 0) == bytes.fromhex(
        "0002 6162"  # name
        "00000001 00000003"  # parts: one element, index only (epoch is v1+)
        "00"  # flag
    )


def test_flexible_version_uses_compact_forms_and_tagged_sections() -> None:
    body = {"name": "ab", "id": uuid.UUID(int=1), "parts": None, "ids": [5]}
    assert DEMO.encode(body, 2) == bytes.fromhex(
        "03 6162"  # compact name
        "00000000000000000000000000000001"  # id
        "00"  # null compact array
        "02 0000000000000005"  # ids: compact count 1 + 1, one int64
        "00"  # empty tagged section: trace and leader hold their defaults
    )


def test_decoding_fills_absent_fields_with_defaults() -> None:
    decoded = DEMO.decode(DEMO.encode({"name": "x", "parts": [{"index": 1}]}, 0), 0)
    assert decoded == {
        "name": "x",
        "id": uuid.UUID(int=0),
        "parts": [{"index": 1, "epoch": -1, "note": None}],
        "flag": True,
        "blob": b"",
        "trace": None,
        "leader": {"id": -1, "epoch": -1},
        "ids": [],
    }


_PARTS = st.lists(
    st.fixed_dictionaries(
        {
            "index": st.integers(-(2**31), 2**31 - 1),
            "epoch": st.integers(-(2**31), 2**31 - 1),
            "note": st.none() | st.text(max_size=5),
        }
    ),
    max_size=3,
)


@given(
    name=st.text(max_size=10),
    parts=st.none() | _PARTS,
    trace=st.none() | st.text(max_size=10),
    leader=st.fixed_dictionaries({"id": st.integers(-5, 5), "epoch": st.integers(-5, 5)}),
    ids=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3),
)
def test_flexible_bodies_round_trip(
    name: str,
    parts: list[dict[str, object]] | None,
    trace: str | None,
    leader: dict[str, int],
    ids: list[int],
) -> None:
    body = {
        "name": name,
        "id": uuid.uuid4(),
        "parts": parts,
        "flag": True,
        "blob": b"\x01",
        "trace": trace,
        "leader": leader,
        "ids": ids,
    }
    assert DEMO.decode(DEMO.encode(body, 3), 3) == body


def test_tagged_field_is_written_only_when_it_differs_from_its_default() -> None:
    plain = DEMO.encode({"name": "", "parts": []}, 2)
    tagged = DEMO.encode({"name": "", "parts": [], "trace": "t", "leader": {"id": 4}}, 2)
    assert plain.endswith(b"\x00")
    # Section: two fields; tag 0 holds compact "t", tag 5 the struct (4, -1) and its own tags.
    assert tagged.endswith(bytes.fromhex("02 00 02 0274 05 09 00000004 ffffffff 00"))
    decoded = DEMO.decode(tagged, 2)
    assert decoded["trace"] == "t"
    assert decoded["leader"] == {"id": 4, "epoch": -1}


def test_unknown_tagged_fields_are_skipped_on_decode() -> None:
    known = DEMO.encode({"name": "n", "parts": [], "trace": "t"}, 2)
    # Replace the final section (one field: tag 0 holding "t") with tag 0 plus an unknown tag 7.
    section = bytes.fromhex("01 00 02 0274")
    assert known.endswith(section)
    extended = known[: -len(section)] + bytes.fromhex("02 00 02 0274 07 02 beef")
    decoded = DEMO.decode(extended, 2)
    assert decoded["trace"] == "t"
    assert decoded["name"] == "n"


def test_null_where_the_version_forbids_it_names_the_field() -> None:
    with pytest.raises(WireFormatError) as caught:
        DEMO.encode({"name": "n", "parts": None}, 0)
    assert caught.value.field == "parts"


def test_undeclared_field_is_refused_on_encode() -> None:
    with pytest.raises(WireFormatError, match="no field nmae"):
        DEMO.encode({"nmae": "n"}, 0)


def test_value_out_of_range_names_the_nested_field() -> None:
    with pytest.raises(WireFormatError) as caught:
        DEMO.encode({"parts": [{"index": 0}, {"index": 2**40}]}, 1)
    assert caught.value.field == "parts[1].index"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": 5}, "name"),
        ({"id": "not-a-uuid"}, "id"),
        ({"flag": "x"}, "flag"),
        ({"parts": "ab"}, "parts"),
        ({"parts": [{"index": "1"}]}, "parts[0].index"),
    ],
)
def test_value_of_the_wrong_type_names_the_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(WireFormatError) as caught:
        DEMO.encode({"parts": [], **body}, 1)
    assert caught.value.field == field


def test_truncated_body_names_the_field_that_failed() -> None:
    data = DEMO.encode({"name": "n", "parts": [{"index": 1, "epoch": 2}]}, 1)
    with pytest.raises(WireFormatError) as caught:
        DEMO.decode(data[:-2], 1)
    assert caught.value.field == "parts[0].epoch"
    assert "truncated" in caught.value.reason


def test_truncated_tagged_payload_names_the_tagged_field() -> None:
    # Empty name, zero id, empty parts and ids, then tag 0 whose string claims 4 bytes but has 1.
    bad = bytes.fromhex("01" + "00" * 16 + "01 01 01 00 02 0561")
    with pytest.raises(WireFormatError) as caught:
        DEMO.decode(bad, 2)
    assert caught.value.field == "trace"


def test_versions_outside_the_declaration_are_unsupported() -> None:
    with pytest.raises(RafkaError, match="UNSUPPORTED_VERSION"):
        DEMO.encode({}, 4)
    with pytest.raises(RafkaError, match="UNSUPPORTED_VERSION"):
        DEMO.decode(b"", 4)


def test_nullable_struct_carries_a_presence_byte() -> None:
    message = Message(1, "M", "0", "none", (Field("s", _LEADER, nullable_versions="0+"),))
    assert message.encode({"s": None}, 0) == b"\xff"
    assert message.decode(b"\xff", 0) == {"s": None}
    present = message.encode({"s": {"id": 1, "epoch": 2}}, 0)
    assert present == bytes.fromhex("01 00000001 00000002")
    assert message.decode(present, 0) == {"s": {"id": 1, "epoch": 2}}


def test_read_leaves_trailing_bytes_for_the_caller() -> None:
    message = Message(1, "M", "0", "none", (Field("a", INT16),))
    reader = Reader(b"\x00\x01\x02")
    assert message.read(reader, 0) == {"a": 1}
    assert reader.remaining == 1


def test_write_appends_to_an_existing_writer() -> None:
    message = Message(1, "M", "0", "none", (Field("a", INT16),))
    writer = Writer()
    writer.write_int8(7)
    message.write(writer, {"a": 2}, 0)
    assert writer.getvalue() == b"\x07\x00\x02"


def test_declarations_refuse_inconsistent_tags_and_duplicates() -> None:
    with pytest.raises(ValueError, match="tag"):
        Field("a", INT32, tag=1)
    with pytest.raises(ValueError, match="tag"):
        Field("a", INT32, tagged_versions="1+")
    with pytest.raises(ValueError, match="unique"):
        Struct("S", (Field("a", INT32), Field("a", INT16)))
    with pytest.raises(ValueError, match="unique"):
        Struct(
            "S",
            (
                Field("a", INT32, tagged_versions="0+", tag=1),
                Field("b", INT32, tagged_versions="0+", tag=1),
            ),
        )


def test_api_pairs_request_and_response_with_the_same_key_and_versions() -> None:
    response = Message(99, "DemoResponse", "0-3", "2+", ())
    api = Api(DEMO, response)
    assert (api.key, api.name, api.min_version, api.max_version) == (99, "Demo", 0, 3)
    with pytest.raises(ValueError, match="disagree"):
        Api(DEMO, Message(99, "DemoResponse", "0-2", "2+", ()))

"""Kafka principals: their ``Type:name`` text and the principal of a client certificate."""

from __future__ import annotations

import pytest

from rafka.security.principal import ANONYMOUS, KafkaPrincipal, certificate_principal


def test_a_principal_is_written_type_colon_name() -> None:
    assert str(KafkaPrincipal.user("alice")) == "User:alice"
    assert str(KafkaPrincipal("Group", "admins")) == "Group:admins"
    assert str(ANONYMOUS) == "User:ANONYMOUS"


def test_parse_reads_the_written_form_back_and_keeps_colons_in_the_name() -> None:
    assert KafkaPrincipal.parse("User:alice") == KafkaPrincipal.user("alice")
    assert KafkaPrincipal.parse("User:CN=a:b,O=x") == KafkaPrincipal("User", "CN=a:b,O=x")
    assert KafkaPrincipal.parse(str(ANONYMOUS)) == ANONYMOUS


@pytest.mark.parametrize("text", ["", "alice", "User:", ":alice", ":"])
def test_parse_refuses_text_that_is_not_type_colon_name(text: str) -> None:
    with pytest.raises(ValueError, match="Type:name"):
        KafkaPrincipal.parse(text)


def test_principals_compare_by_type_and_name() -> None:
    assert KafkaPrincipal.user("alice") == KafkaPrincipal("User", "alice")
    assert KafkaPrincipal.user("alice") != KafkaPrincipal("Group", "alice")
    assert len({KafkaPrincipal.user("a"), KafkaPrincipal.user("a")}) == 1


def test_a_certificate_subject_is_its_distinguished_name_most_specific_first() -> None:
    # As ssl.SSLSocket.getpeercert()["subject"] gives it: least specific RDN first.
    subject = (
        (("countryName", "GB"),),
        (("stateOrProvinceName", "London"),),
        (("localityName", "London"),),
        (("organizationName", "Example"),),
        (("organizationalUnitName", "Streams"),),
        (("commonName", "alice"),),
    )
    assert certificate_principal(subject) == KafkaPrincipal.user(
        "CN=alice,OU=Streams,O=Example,L=London,ST=London,C=GB"
    )


def test_an_attribute_without_a_short_name_keeps_its_long_one() -> None:
    subject = ((("organizationName", "Example"),), (("emailAddress", "a@example.com"),))
    assert str(certificate_principal(subject)) == "User:emailAddress=a@example.com,O=Example"

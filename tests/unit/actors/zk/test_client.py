"""Tests for rafka.actors.zk.client's Ray-free parts: reading a multi-op's answer."""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, RolledBackError

from rafka.actors.zk.client import ControllerMovedError, transaction_error


def test_a_transaction_whose_ops_all_applied_has_no_error() -> None:
    assert transaction_error([True, "/t/state"], "/t/state", fenced=True) is None


def test_a_failed_epoch_check_means_another_controller_took_over() -> None:
    error = transaction_error([BadVersionError(), RolledBackError()], "/t/state", fenced=True)
    assert isinstance(error, ControllerMovedError)
    assert "/t/state" in str(error)


def test_an_unfenced_version_conflict_is_the_ops_own_error() -> None:
    conflict = BadVersionError()
    assert transaction_error([conflict], "/t/state", fenced=False) is conflict


def test_the_failing_op_is_named_not_the_rolled_back_ones() -> None:
    exists = NodeExistsError()
    error = transaction_error([RolledBackError(), exists], "/t/state", fenced=True)
    assert error is exists

"""The Redis Streams benchmark's pure parts: its redis.conf, ratios, targets and rows."""

from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import redis_streams
from redis_streams import RafkaFigures, RedisFigures, RedisUnavailable

RAFKA = RafkaFigures(produce_rf1=600_000, produce_rf3_all=500_000, consume=1_500_000)
REDIS = RedisFigures(xadd=200_000, xrange=750_000, xread=250_000)


def _settings(config: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in config.splitlines())


def test_config_binds_loopback_with_aof_fsynced_every_second(tmp_path: Path) -> None:
    settings = _settings(redis_streams.redis_config(6399, tmp_path))
    assert settings["bind"] == "127.0.0.1"
    assert settings["port"] == "6399"
    assert settings["dir"] == f'"{tmp_path}"'
    assert settings["appendonly"] == "yes"
    assert settings["appendfsync"] == "everysec"
    assert settings["save"] == '""'


def test_ratio_is_rafka_over_redis_and_dash_without_redis() -> None:
    assert redis_streams.ratio(600_000, 200_000) == "3.00×"
    assert redis_streams.ratio(600_000, None) == "-"
    assert redis_streams.ratio(600_000, 0.0) == "-"


def test_target_says_whether_the_run_met_it() -> None:
    assert redis_streams.target(3.0, 600_000, 200_000) == ">= 3× (met)"
    assert redis_streams.target(5.0, 1_500_000, 750_000) == ">= 5× (not met)"
    assert redis_streams.target(5.0, 1_500_000, None) == ">= 5×"


def test_rows_pair_each_redis_figure_with_rafkas() -> None:
    table = redis_streams.rows(REDIS, RAFKA)
    assert [row[1:4] for row in table] == [
        ("200,000", "600,000", "3.00×"),
        ("200,000", "500,000", "2.50×"),
        ("750,000", "1,500,000", "2.00×"),
        ("250,000", "1,500,000", "6.00×"),
    ]
    assert [row[4] for row in table] == [
        ">= 3× (met)",
        "- (3 copies, stricter than Redis)",
        ">= 5× (not met)",
        ">= 5× (met)",
    ]
    assert all(len(row) == len(redis_streams.HEADER) for row in table)


def test_rows_without_redis_keep_rafkas_figures() -> None:
    table = redis_streams.rows(None, RAFKA)
    assert [row[1:4] for row in table] == [
        ("-", "600,000", "-"),
        ("-", "500,000", "-"),
        ("-", "1,500,000", "-"),
        ("-", "1,500,000", "-"),
    ]


def test_frozen_heap_freezes_only_while_measuring() -> None:
    assert gc.get_freeze_count() == 0
    with redis_streams.frozen_heap():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_missing_server_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(redis_streams.shutil, "which", lambda _name: None)
    with pytest.raises(RedisUnavailable, match="not on PATH"):
        with redis_streams.redis_server(tmp_path):
            pass


def test_server_that_exits_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text(f'#!/bin/sh\necho "bad config line" > "{tmp_path}/redis.log"\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setattr(redis_streams.shutil, "which", lambda _name: str(fake))
    with pytest.raises(RedisUnavailable, match="exited with 3: bad config line"):
        with redis_streams.redis_server(tmp_path):
            pass


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_real_server_runs_the_written_config(tmp_path: Path) -> None:
    with redis_streams.redis_server(tmp_path) as client:
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("bind") == {"bind": "127.0.0.1"}

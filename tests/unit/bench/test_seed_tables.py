"""Seed 000's benchmark tables, pure parts: record counts, the seed column, tables and charts."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import seed_tables
from seed_charts import Chart, draw
from seed_tables import Measurements

from rafka.cli.perf import ProducerPerf

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _measurements() -> Measurements:
    """Made-up runs of 100,000 × x records/s, so every figure is easy to predict."""

    def run(x: int) -> ProducerPerf:
        return ProducerPerf(100_000 * x, 1.0, 100, [])

    return Measurements(
        records=1_000,
        repeats=3,
        producers={n: run(n) for n in seed_tables.PRODUCERS},
        sizes={size: ProducerPerf(1_000, 0.01, size, []) for size in seed_tables.SIZES},
        partitions={n: run(n) for n in seed_tables.PARTITIONS},
        replicas={acks: {rf: run(rf) for rf in seed_tables.REPLICAS} for acks in seed_tables.ACKS},
        consumers={1: ProducerPerf(3_000_000, 2.0, 100, [])},
    )


def test_large_messages_send_fewer_records_but_never_too_few() -> None:
    assert seed_tables.records_for(100, 300_000) == 300_000
    assert seed_tables.records_for(1_000, 300_000) == seed_tables.BYTES_PER_POINT // 1_000
    assert seed_tables.records_for(10**9, 300_000) == seed_tables.MIN_RECORDS


def test_seed_producers_quotes_the_stated_figures_and_the_shape_elsewhere() -> None:
    assert seed_tables.seed_producers(1) == "~1,280,000"
    assert seed_tables.seed_producers(2) == "linear growth (no figure stated)"
    assert seed_tables.seed_producers(3) == "~3,500,000 (2.73×)"


def test_seed_partitions_shape_by_partition_count() -> None:
    assert [seed_tables.seed_partitions(n).split()[0] for n in range(1, 10)] == [
        "rises",
        "rises",
        "rises",
        "no",
        "no",
        "higher",
        "no",
        "no",
        "higher",
    ]


def test_tables_have_one_row_per_point_and_the_seed_column_last() -> None:
    producers, sizes, partitions, replicas, consumers = seed_tables.tables(_measurements())
    assert [t.chart for t in (producers, sizes, partitions, replicas, consumers)] == [
        "producers",
        "message_size",
        "partitions",
        "replicas",
        "",
    ]
    for table in (producers, sizes, partitions, replicas, consumers):
        assert all(len(row) == len(table.header) for row in table.rows)
        assert table.header[-1].startswith("seed 000")
    assert "best of 3 runs of 1,000 records" in producers.title
    assert producers.rows[2] == ("3", "300,000", "30.0", "3.00×", "~3,500,000 (2.73×)")
    assert [row[0] for row in sizes.rows] == [f"{s:,}" for s in seed_tables.SIZES]
    assert sizes.rows[0][-1] == seed_tables.SEED_SIZE_SHAPE
    assert sizes.rows[-1][3] == "1000.0"  # 100,000 records/s of 10,000 B
    assert partitions.rows[8][3] == "9.00×"
    assert len(replicas.rows) == len(seed_tables.REPLICAS) * len(seed_tables.ACKS)
    assert replicas.rows[4][:2] == ("2", "all")
    assert replicas.rows[4][4] == "2.00×"
    assert replicas.rows[4][5] == seed_tables.SEED_REPLICAS_SHAPE
    assert consumers.rows == [("1", "1,500,000", "150.0", "~3,060,000")]


def test_charts_mark_the_seed_figures_only_where_stated() -> None:
    charts = seed_tables.charts(_measurements())
    assert set(charts) == {"producers", "message_size", "partitions", "replicas"}
    assert list(charts["producers"].seed_points) == [(1, 1_280_000.0), (3, 3_500_000.0)]
    assert charts["message_size"].right is not None
    assert all(not charts[name].seed_points for name in ("message_size", "partitions"))
    assert set(charts["replicas"].lines) == {"rafka acks=1", "rafka acks=all"}


def test_write_charts_writes_one_png_per_table(tmp_path: Path) -> None:
    paths = seed_tables.write_charts(_measurements(), tmp_path / "results")
    assert sorted(p.name for p in paths) == [
        "message_size.png",
        "partitions.png",
        "producers.png",
        "replicas.png",
    ]
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE)
        assert len(data) > 10_000


def test_draw_without_seed_points_or_second_axis(tmp_path: Path) -> None:
    chart = Chart("t", "x", "y", {"line": [(1, 1.0), (2, 4.0)]})
    path = draw(chart, tmp_path / "one.png")
    assert path.read_bytes().startswith(PNG_SIGNATURE)

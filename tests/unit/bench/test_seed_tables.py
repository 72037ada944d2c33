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
        consumers={n: ProducerPerf(3_000_000 * n, 2.0, 100, []) for n in seed_tables.CONSUMERS},
    )


def test_large_messages_send_fewer_records_but_never_too_few() -> None:
    assert seed_tables.records_for(100, 300_000) == 300_000
    assert seed_tables.records_for(1_000, 300_000) == seed_tables.BYTES_PER_POINT // 1_000
    assert seed_tables.records_for(10**9, 300_000) == seed_tables.MIN_RECORDS


def test_seed_scaling_quotes_the_stated_figures_and_the_shape_elsewhere() -> None:
    producers, consumers = seed_tables.SEED_PRODUCERS, seed_tables.SEED_CONSUMERS
    assert seed_tables.seed_scaling(producers, 1) == "~1,280,000"
    assert seed_tables.seed_scaling(producers, 2) == "linear growth (no figure stated)"
    assert seed_tables.seed_scaling(producers, 3) == "~3,500,000 (2.73×)"
    assert seed_tables.seed_scaling(consumers, 1) == "~3,060,000"
    assert seed_tables.seed_scaling(consumers, 3) == "linear growth (no figure stated)"


def test_partitions_are_dealt_round_robin_to_every_consumer() -> None:
    assert seed_tables.deal(range(6), 1) == [[0, 1, 2, 3, 4, 5]]
    assert seed_tables.deal(range(6), 2) == [[0, 2, 4], [1, 3, 5]]
    assert seed_tables.deal(range(6), 3) == [[0, 3], [1, 4], [2, 5]]
    assert seed_tables.deal(range(2), 3) == [[0], [1], []]


def test_a_run_spans_the_first_start_to_the_last_end() -> None:
    windows = [seed_tables.Window(10.0, 12.5, 5), seed_tables.Window(9.5, 12.0, 5)]
    assert seed_tables.span(windows) == 3.0


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
        "consumers",
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
    assert "reading the producers' 3,000,000 records" in consumers.title
    assert consumers.header[3] == "× 1 consumer"
    assert consumers.rows == [
        ("1", "1,500,000", "150.0", "1.00×", "~3,060,000"),
        ("2", "3,000,000", "300.0", "2.00×", "linear growth (no figure stated)"),
        ("3", "4,500,000", "450.0", "3.00×", "linear growth (no figure stated)"),
    ]


def test_charts_mark_the_seed_figures_only_where_stated() -> None:
    charts = seed_tables.charts(_measurements())
    assert set(charts) == {"producers", "message_size", "partitions", "replicas", "consumers"}
    assert list(charts["producers"].seed_points) == [(1, 1_280_000.0), (3, 3_500_000.0)]
    consumers = charts["consumers"]
    assert consumers.title.startswith("Consumers vs throughput")
    assert consumers.x_label == "consumers"
    assert list(consumers.seed_points) == [(1, 3_060_000.0)]
    assert list(consumers.lines["rafka, 2 cores"]) == [
        (1, 1_500_000.0),
        (2, 3_000_000.0),
        (3, 4_500_000.0),
    ]
    assert tuple(consumers.x_ticks) == seed_tables.CONSUMERS
    assert charts["message_size"].right is not None
    assert all(not charts[name].seed_points for name in ("message_size", "partitions"))
    assert set(charts["replicas"].lines) == {"rafka acks=1", "rafka acks=all"}


def test_write_charts_writes_one_png_per_table(tmp_path: Path) -> None:
    paths = seed_tables.write_charts(_measurements(), tmp_path / "results")
    assert sorted(p.name for p in paths) == [
        "consumers.png",
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

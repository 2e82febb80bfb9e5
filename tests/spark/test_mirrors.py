"""spark/mirrors.py on a hand-built replicated record (RECORD.md, "Mirrors"): every count worked
out by hand below, and the stretched counts still the source cluster's alone."""

import json

import pytest

from dcdrill import exits
from dcdrill.spark import mirrors, report_files, verify
from tests import records
from tests.records import TOPIC, verified

REMOTE = "east." + TOPIC


def row(topic, offset, seq, ts, cluster, origin="east"):
    return {
        "topic": topic,
        "partition": 0,
        "offset": offset,
        "producer_id": "p1",
        "seq": seq,
        "timestamp_ms": ts,
        "cluster": cluster,
        "origin": origin,
    }


def consumed(cid, cluster, topic, offset, seq):
    return {**records.c(0, offset, "p1", seq, cid), "group": "g", "topic": topic, "cluster": cluster}


def replicated(run):
    """east's p1 writes seqs 0..9 (acked at 1000 + 100 s, appended at the same time) to t; MM2 copies
    0..7 into west's east.t, 50 ms later each: seq 3 twice, seq 5 before seq 4; 8 and 9 never.
    dc-a is killed at 1850 and healed at 2800; the group fails over to west at 1900. Its members
    processed 0..4 on east, and on west, from offset 6 on, 4, 6 and 7: seq 5 (west offset 5) skipped."""
    P = [{**records.p("p1", i, "ok", 0, i, 1000 + 100 * i), "cluster": "east"} for i in range(10)]
    east = [row(TOPIC, i, i, 1000 + 100 * i, "east") for i in range(10)]
    order = [0, 1, 2, 3, 3, 5, 4, 6, 7]
    west = [row(REMOTE, off, seq, 1050 + 100 * seq, "west") for off, seq in enumerate(order)]
    west.append({**row("west." + REMOTE, 0, 0, 2000, "west", origin="west")})  # west's own back in west: a loop
    # east's own record back in east under a name that does not say so: its origin header does
    east.append(row("mirrored-back", 0, 0, 2100, "east"))
    C = [consumed("c1", "east", TOPIC, i, i) for i in range(5)]
    C += [consumed("c3", "west", REMOTE, off, seq) for off, seq in ((6, 4), (7, 6), (8, 7))]
    topo = {
        **records.topology(),
        "cluster": "east",
        "clusters": {"east": {"datacenters": [{"name": "dc-a"}]}, "west": {"datacenters": [{"name": "dc-b"}]}},
        "mirrors": {
            "east->west": {
                "source": "east",
                "target": "west",
                "remote_topic_prefix": "east.",
                "host": "mm1.dc-b.lab",
                "predictions": {
                    # seq 9 is acknowledged after dc-a's loss began: writes continued
                    "source-dc-loss": {"source_writable": True, "target_writable": True, "acked_loss_possible": True},
                    "link-cut": {"source_writable": True, "target_writable": True, "acked_loss_possible": False},
                },
            }
        },
    }
    fault = {"fault": "kill-dc", "target": "dc-a", "start_ms": 1850, "end_ms": 2800}  # p1 silent 0.9 s: no outage
    records.write(run, P, [], C, faults=[fault], topo=topo)
    (run / "audit").mkdir(exist_ok=True)
    for name, rows in (("east", east), ("west", west)):
        (run / "audit" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "failovers.jsonl").write_text(
        json.dumps({"group": "g", "from": "east", "to": "west", "at_ms": 1900, "topic": REMOTE, "offsets": {"0": 6}})
        + "\n"
    )
    # MM2 rebalanced once before the fault (not the fault's), then started again and rebalanced twice.
    events = [("rebalance", 1200), ("start", 2000), ("rebalance", 2100), ("rebalance", 2200)]
    (run / "mirror-events.jsonl").write_text(
        "".join(
            json.dumps({"host": "mm1.dc-b.lab", "flows": ["east->west"], "event": e, "at_ms": at}) + "\n"
            for e, at in events
        )
    )
    return run


def test_every_mirror_count_exactly(tmp_path, spark):
    code, s = verified(str(replicated(tmp_path / "run")), spark=spark)
    m = s["mirrors"]["east->west"]
    assert m["counts"] == {
        "acked": 10,
        "mirrored": 8,
        "not_mirrored": 2,
        "not_mirrored_by_phase": {"before": 1, "during": 1},
        "acked_absent_from_source": 0,
        "replication_duplicates": 1,
        "target_phantoms": 0,
        "target_order_violations": 1,
    }
    # at the failover (1900) west lacked seqs 8 (acked 1800) and 9 (acked 1900): 2 records, 0.1 s
    assert m["rpo"] == {"at_ms": 1900, "records": 2, "seconds": 0.1}
    assert m["lag_ms"]["p50"] == 50 and m["lag_ms"]["max"] == 50
    assert m["catch_up_ms"] == 0  # everything west got, it got before the heal
    assert m["mm2"] == {"restarts": 1, "rebalances": 2}
    assert s["mirror_loops"] == {"east": 1, "west": 1}
    fo = s["failovers"][0]
    assert (fo["failover_skipped"], fo["failover_redelivered"], fo["processed_before"], fo["processed_after"]) == (
        1,
        1,
        5,
        3,
    )
    # The stretched counts are east's own: its log holds every acked record; west's consumers are not east's.
    assert s["counts"]["acked_lost"] == 0 and s["counts"]["phantoms"] == 0 and s["counts"]["divergent_offsets"] == 0
    assert code == exits.EXIT_FAIL
    assert sorted(v["rule"] for v in s["violations"]) == [
        "failover-skips-nothing",
        "mirror-complete",
        "no-mirror-loops",
        "no-mirror-loops",
    ]  # one per cluster
    page = (tmp_path / "run" / "report" / "index.html").read_text()
    assert "Mirrors (MirrorMaker 2)" in page and 'alt="mirror lag"' in page
    assert "RPO 2 records / 0.1 s" in report_files.one_screen(
        s
    ) and "MM2 restarts 1, rebalances 2" in report_files.one_screen(s)
    assert "MM2 restarts / rebalances" in page
    # dc-a's loss is east's: the model said the copy may lack acknowledged records, and it lacked 2
    [check] = s["mirror_prediction_checks"]
    assert (check["flow"], check["prediction"], check["observed"]["acked_missing"], check["as_predicted"]) == (
        "east->west",
        "source-dc-loss",
        2,
        True,
    ), check
    assert check["observed"]["source_writable"] is True
    assert (
        "east->west under kill-dc dc-a (source-dc-loss): acknowledged records missing from the target 2"
        in report_files.one_screen(s)
    )


def as_parquet(spark, run, dictionary: bool) -> None:
    """The record's ledgers as Parquet of RECORD.md's types, each file's rows as they were, with
    the replicated stack's own columns (cluster, origin) kept."""
    from pyspark.sql import types as T

    from dcdrill.spark.ledgers import SCHEMAS

    extra = {"produced": ["cluster"], "consumed": ["cluster"], "audit": ["cluster", "origin"]}
    for kind in ("produced", "consumed", "audit"):
        for f in sorted((run / kind).glob("*.jsonl")):
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
            schema = T.StructType(
                [T.StructField(c, t) for c, t in SCHEMAS[kind].items()]
                + [T.StructField(c, T.StringType()) for c in extra[kind]]
            )
            out = run / f"{kind}-{f.stem}.tmp"
            spark.createDataFrame([tuple(r.get(c) for c in schema.names) for r in rows], schema).coalesce(
                1
            ).write.option("parquet.enable.dictionary", str(dictionary).lower()).parquet(str(out))
            [part] = out.glob("part-*.parquet")
            part.rename(run / kind / f"{f.stem}.parquet")
            f.unlink()
            for leftover in out.iterdir():
                leftover.unlink()
            out.rmdir()


@pytest.mark.parametrize("dictionary", [True, False])
def test_plain_parquet_ledgers_read_batch_by_batch_give_the_hand_counts(tmp_path, spark, dictionary):
    """MirrorBatches reads a flow's sides from plain Parquet (its string tests and hashes per
    dictionary entry, or per row without one); Spark's narrowing is the reference: both give the
    counts worked out by hand above."""
    from dcdrill.record import DrillRecord
    from dcdrill.spark import identities
    from dcdrill.spark.ledgers import load

    run = replicated(tmp_path / "run")
    # west's own producer, which the home (east) counts must leave out, as they leave out c3's rows
    with open(run / "produced" / "p9.jsonl", "w") as f:
        f.writelines(
            json.dumps({**records.p("p9", i, "ok", 0, i, 1000 + 100 * i, dc="dc-b"), "cluster": "west"}) + "\n"
            for i in range(4)
        )
    as_parquet(spark, run, dictionary)
    # the home cluster's rows of both ledgers are read batch by batch, the other cluster's left out as they are read
    for kind in ("produced", "consumed"):
        info = load(spark, DrillRecord(str(run)), kind, "east")[1]
        assert info["plain"] is not None and info["where"] == {"cluster": [None, "east"]}, kind
    plain = load(spark, DrillRecord(str(run)), "consumed")[1]["plain"]
    side = spark._jvm.dcdrill.MirrorBatches.side(plain._jdf, "consumed_before", None, {"group": ["g"]}, 3)
    # the failed-over group's two sides in one read, and the loops: batch by batch too
    both = mirrors.consumed_sides(plain, {"group": "g", "from": "east", "to": "west"}, 3)
    audit = load(spark, DrillRecord(str(run)), "audit", "west")[1]["plain"]
    loops = spark._jvm.dcdrill.MirrorBatches.loops(audit._jdf, 0, "west", REMOTE)
    # each read ran batch by batch (None: Spark's narrowing instead) and packed the group's rows
    assert side is not None and side.count() >= 1 and both is not None and both.chunks().count() >= 1
    assert sum(found for _, found in loops.collect()) == 1  # west's own record back in west
    summaries = []
    for batchwise in ("true", "false"):
        spark.conf.set(identities.COLUMNAR_SCAN, batchwise)
        try:
            summaries.append(verified(str(run), spark=spark)[1])
        finally:
            spark.conf.unset(identities.COLUMNAR_SCAN)
    for s in summaries:
        m = s["mirrors"]["east->west"]
        assert m["counts"] == {
            "acked": 10,
            "mirrored": 8,
            "not_mirrored": 2,
            "not_mirrored_by_phase": {"before": 1, "during": 1},
            "acked_absent_from_source": 0,
            "replication_duplicates": 1,
            "target_phantoms": 0,
            "target_order_violations": 1,
        }
        assert m["rpo"] == {"at_ms": 1900, "records": 2, "seconds": 0.1} and m["lag_ms"]["p50"] == 50
        fo = s["failovers"][0]
        assert (fo["failover_skipped"], fo["failover_redelivered"], fo["processed_before"], fo["processed_after"]) == (
            1,
            1,
            5,
            3,
        )
        assert s["mirror_loops"] == {"east": 1, "west": 1}
        # east's own: its producer's 10 records, every one in its log; c1 read 0..4 (c3's reads on west are not east's)
        assert (s["counts"]["produced"], s["counts"]["acked_lost"], s["counts"]["phantoms"]) == (10, 0, 0)
    assert summaries[0]["mirrors"] == summaries[1]["mirrors"] and summaries[0]["failovers"] == summaries[1]["failovers"]
    for key in ("counts", "by_partition", "by_dc", "phases", "examples"):
        assert summaries[0][key] == summaries[1][key], key


def test_bad_mirror_event_lines_are_named(tmp_path, spark):
    """mirror-events.jsonl as chaos/mirror/events.py's lines become (tests/chaos/mirror/test_events.py)."""
    from dcdrill.record.contents import parse_mirror_events

    with pytest.raises(ValueError, match=r"mirror-events.jsonl:1: event must be one of start, rebalance"):
        parse_mirror_events(
            b'{"host": "mm1", "flows": ["a->b"], "event": "crash", "at_ms": 1}\n', "mirror-events.jsonl"
        )
    run = replicated(tmp_path / "run")
    (run / "mirror-events.jsonl").write_text('{"host": "mm1", "flows": "east->west", "event": "start", "at_ms": 1}\n')
    with pytest.raises(verify.BadInput, match="flows must be a list of flow names"):
        verify.verify(str(run), spark=spark)


def test_order_across_blocks_is_joined_end_to_end_and_sorted_when_runs_overlap(spark):
    """MirrorFold folds 4096 seqs per block: an inversion at a block's edge is counted when the
    blocks' runs of R follow each other, and overlapping runs make it hand the order to a sort."""
    from dcdrill.spark.mirrors import _inversions_by_sort, fold_sides, packed_side

    def fold(src_off, dst_off):
        n = len(src_off)
        src = spark.createDataFrame(
            [("p1", s, 0, src_off[s], 1000 + s) for s in range(n)],
            "producer_id string, seq long, partition int, offset long, timestamp_ms long",
        )
        dst = spark.createDataFrame(
            [("p1", s, 0, dst_off[s], 1050 + s) for s in range(n)],
            "producer_id string, seq long, partition int, offset long, timestamp_ms long",
        )
        acked = spark.createDataFrame(
            [("p1", s, 1000 + s) for s in range(n)], "producer_id string, seq long, ack_ms long"
        )
        sides = [
            packed_side(acked, None, "acked", "ack_ms", {}, 3),
            packed_side(src, None, "source", "timestamp_ms", {}, 3),
            packed_side(dst, None, "target", "timestamp_ms", {}, 3),
        ]
        out = fold_sides(spark, sides, {k: None for k in ("start", "end", "at", "steady_from", "steady_to")}, None, 3)
        return out, _inversions_by_sort(src, dst)

    # RECORD.md: records R holds after one whose source offset is higher. A record copied six
    # places early puts six behind it (the immediately preceding copy would blame one).
    out, by_sort = fold(list(range(9)), [0, 1, 3, 4, 5, 6, 7, 8, 2])  # R: seqs 0, 1, 8, 2, ..., 7
    assert out["inversions"] == by_sort == 6
    n = 9000
    # seqs 4094 and 4095 swapped in the source, inside the first block: one violation, and the
    # second block's run starts above every source offset before it, so the runs join exactly
    src_off = list(range(n))
    src_off[4094], src_off[4095] = 4095, 4094
    out, by_sort = fold(src_off, list(range(n)))
    assert out["inversions"] == by_sort == 1
    assert out["counts"]["mirrored"] == n and out["lag"] == {"p50": 50, "p99": 50, "max": 50, "n": n}
    # the source holds seq 4095 far ahead (its producer's retry): every later record of the
    # partition comes after it in R, across the block edge, so the fold hands the count to the sort
    src_off = [1_000_000 if s == 4095 else s for s in range(n)]
    out, by_sort = fold(src_off, list(range(n)))
    assert out["inversions"] is None and by_sort == n - 4096
    # R swapped seqs 4095 and 4096 (two blocks): the runs overlap in R's offsets, so no joined count
    dst_off = list(range(n))
    dst_off[4095], dst_off[4096] = 4096, 4095
    out, by_sort = fold(list(range(n)), dst_off)
    assert out["inversions"] is None and by_sort == 1


def test_rows_too_large_to_pack_tightly_give_the_same_counts(spark):
    """MirrorFold shuffles most rows in one to four 32-bit words (a seq below 2^43, a time within
    2^31 ms of its chunk's first, an offset below 2^32 - 1) and any other in eleven: a flow
    shifted out of those ranges gives the same counts, lags and failover as the same flow
    inside them."""
    from dcdrill.spark.mirrors import fold_sides, packed_side

    def fold(seq0, ts0, partition, off0=0):
        n = 6000
        logged = "producer_id string, seq long, partition int, offset long, timestamp_ms long"
        src = spark.createDataFrame([(f"p{s % 3}", seq0 + s, partition, off0 + s, ts0 + s) for s in range(n)], logged)
        dst = spark.createDataFrame(
            [
                (f"p{s % 3}", seq0 + s, partition, off0 + s + (s % 7 == 0), ts0 + s + 40 + s % 5)
                for s in range(n)
                if s % 1000 != 1
            ]
            + [("p1", seq0 + 4, partition, off0 + 9_000, ts0 + 900)],
            logged,
        )
        acked = spark.createDataFrame(
            [(f"p{s % 3}", seq0 + s, ts0 + s) for s in range(n)], "producer_id string, seq long, ack_ms long"
        )
        before = spark.createDataFrame(
            [(f"p{s % 3}", seq0 + s) for s in range(0, n, 2)], "producer_id string, seq long"
        )
        after = spark.createDataFrame([(f"p{s % 3}", seq0 + s) for s in range(1, n, 4)], "producer_id string, seq long")
        instants = {
            "start": ts0 + 3000,
            "end": ts0 + 4000,
            "at": ts0 + 3500,
            "steady_from": ts0,
            "steady_to": ts0 + 2000,
        }
        sides = [
            packed_side(acked, None, "acked", "ack_ms", {}, 3),
            packed_side(src, None, "source", "timestamp_ms", {}, 3),
            packed_side(dst, None, "target", "timestamp_ms", {}, 3),
            packed_side(before, None, "consumed_before", None, {}, 3),
            packed_side(after, None, "consumed_after", None, {}, 3),
        ]
        return fold_sides(spark, sides, instants, {partition: off0 + 5000}, 3)

    packed = fold(0, 1_700_000_000_000, 3)
    assert packed["counts"]["not_mirrored"] == 6 and packed["counts"]["dups"] == 1 and packed["failover"]["skipped"] > 0
    # tight still: a large seq, a time before 1970, a large partition; wide: a seq from 2^44 on,
    # offsets from 2^33 on
    for other in (
        fold(1 << 41, 1_700_000_000_000, 3),
        fold(0, -1_000, 3),
        fold(0, 1_700_000_000_000, 1 << 20),
        fold(1 << 44, 1_700_000_000_000, 3),
        fold(0, 1_700_000_000_000, 3, off0=1 << 33),
    ):
        assert {k: other[k] for k in ("lag", "steady", "failover")} == {
            k: packed[k] for k in ("lag", "steady", "failover")
        }
        assert other["inversions"] in (
            packed["inversions"],
            None,
        )  # None: a partition too large for the order's sort key
        assert {k: v for k, v in other["counts"].items() if k not in ("rpo_oldest", "last_ack", "caught")} == {
            k: v for k, v in packed["counts"].items() if k not in ("rpo_oldest", "last_ack", "caught")
        }


def test_a_fold_with_nothing_to_read_still_counts_its_failover(tmp_path, spark):
    """MirrorFold.foldReaching runs its shuffle's map stage before the fold (the group's reach is
    known only then); with no partition to read there is no map stage to run, and the fold
    gives zeros, not an error."""
    from dcdrill.record import DrillRecord
    from dcdrill.spark.ledgers import load

    run = replicated(tmp_path / "run")
    as_parquet(spark, run, True)
    plain = load(spark, DrillRecord(str(run)), "consumed")[1]["plain"]
    consumed = mirrors.consumed_sides(plain, {"group": "g", "from": "east", "to": "west"}, 3)
    instants = dict.fromkeys(spark._jvm.dcdrill.MirrorFold.INSTANTS)
    r = mirrors.fold_sides(spark, [spark.sparkContext._jsc.emptyRDD()], instants, None, 3, consumed)
    assert r["counts"]["acked"] == 0 and r["failover"] == {
        "processed_before": 0,
        "processed_after": 0,
        "redelivered": 0,
        "skipped": 0,
        "unread": 0,
    }


def test_a_second_failover_into_the_same_copy_is_counted_the_same_way_outside_the_fold(tmp_path, spark):
    """The flow's fold takes its first failover; another into the same copy goes through Spark's
    own aggregation (check_failover), and the same rows give the same counts."""
    run = replicated(tmp_path / "run")
    line = json.loads((run / "failovers.jsonl").read_text())
    (run / "failovers.jsonl").write_text(json.dumps(line) + "\n" + json.dumps({**line, "at_ms": 1901}) + "\n")
    s = verify.verify(str(run), spark=spark)
    folded, sparked = s["failovers"]
    assert folded["at_ms"] == 1900 and sparked["at_ms"] == 1901
    assert {k: v for k, v in folded.items() if k != "at_ms"} == {k: v for k, v in sparked.items() if k != "at_ms"}
    assert (folded["failover_skipped"], folded["failover_redelivered"], folded["unread_at_end"]) == (
        1,
        1,
        0,
    )  # the group read R to its end (offset 8)


def test_a_mirror_to_a_cluster_the_record_does_not_define_is_refused(tmp_path, spark):
    run = replicated(tmp_path / "r")
    topo = json.loads((run / "topology.json").read_text())
    topo["mirrors"]["east->west"]["target"] = "north"
    (run / "topology.json").write_text(json.dumps(topo))
    with pytest.raises(
        verify.BadInput,
        match=r"topology.json: mirrors.east->west.target: cluster 'north' is not one "
        r"of the record's clusters \(east, west\)",
    ):
        verify.verify(str(run), spark=spark)


def test_spark_is_let_go_once_its_last_job_is_done_and_before_the_report_is_written(tmp_path, spark):
    """verify's when_spark_done (a command ends its JVM there): called once, after every Spark job
    (the summary's counts are final), while the report is still to be drawn and written."""
    run = replicated(tmp_path / "run")
    calls = []
    code, s = verified(
        str(run), spark=spark, when_spark_done=lambda: calls.append((run / "report" / "index.html").exists())
    )
    assert calls == [False]
    assert s["mirrors"]["east->west"]["counts"]["mirrored"] == 8 and s["examples"]
    assert 'alt="mirror lag"' in (run / "report" / "index.html").read_text()


def test_the_command_ends_its_jvm_while_the_report_is_drawn_and_says_nothing_more(tmp_path):
    """`dcdrill verify` on a replicated record: the report (its mirror plot drawn after the JVM was
    told to end) and the one-screen summary are whole, and nothing else reaches stderr."""
    import subprocess
    import sys

    run = replicated(tmp_path / "run")
    done = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", str(run), "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == exits.EXIT_FAIL, done.stderr[-3000:]
    assert done.stderr == ""
    assert "mirror east->west: mirrored 8 of 10 acked" in done.stdout
    assert 'alt="mirror lag"' in (run / "report" / "index.html").read_text()
    assert json.loads((run / "report" / "summary.json").read_text())["spark"]["version"]

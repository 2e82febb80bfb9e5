"""The verifier on drill records with known anomalies: every count, exactly; bad input exits 2."""

import json

import pytest

from dcdrill import exits
from dcdrill.record import DrillRecord
from dcdrill.spark import ledgers, verify
from dcdrill.spark.ledgers import BadInput
from tests import records
from tests.records import a, c, p, verified


def test_every_anomaly_counted_exactly(tmp_path, spark):
    code, s = verified(str(records.anomalies(tmp_path / "run")), spark=spark)
    assert s["counts"] == {
        "produced": 23,
        "acked": 19,
        "failed": 2,
        "indeterminate": 2,
        "acked_lost": 3,  # p1/7..9, truncated by the unclean election
        "acked_unseen": 3,  # p2/0..2 never reached a consumer
        "failed_present": 1,  # p4/2
        "indeterminate_present": 1,  # p3/1
        "duplicates_in_log": 1,  # p3/1 written twice (producer retry)
        "duplicates_delivered": 2,  # p3/0 redelivered after a rebalance; p3/1 read at both offsets
        "phantoms": 1,  # ghost/0
        "ack_offset_mismatch": 1,  # p3/3 acked at offset 5, which holds p3/4
        "divergent_offsets": 3,  # partition 0 offsets 7..9: consumers saw the truncated log
        "reordered": 1,  # p4/0 after p4/1
        "max_ack_gap_ms": 1100,  # partition 0: 1900 -> 3000
        "torn_lines": 1,  # consumed/c1.jsonl's last line
    }
    # consistency-first with unclean election on: offsets may move, but nothing acked may be lost.
    assert code == exits.EXIT_FAIL and s["verdict"] == "fail"
    assert {v["rule"] for v in s["violations"]} == {"no-phantoms", "no-failed-present", "no-acked-loss"}
    assert s["data_loss_window"]["first_relative_to_fault_ms"] == 190
    assert s["data_loss_window"]["last_relative_to_fault_ms"] == 390
    phases = {ph["phase"]: ph for ph in s["phases"]}
    assert phases["during kill-dc dc-a"]["acked_lost"] == 3
    assert sum(ph["produced"] for ph in s["phases"]) == 23


def test_the_first_lost_and_duplicated_records_are_named_in_the_report(tmp_path, spark):
    """The report lists them by send time with producer, seq, partition, acknowledged offset and
    where the log holds them: p3/0 delivered twice, p3/1 in the log twice, p1/7..9 lost."""
    code, s = verified(str(records.anomalies(tmp_path / "run")), spark=spark)
    named = [
        (e["kind"], e["producer"], e["seq"], e["partition"], e["acked_offset"], e["log_offsets"], e["send_ms"])
        for e in s["examples"]
    ]
    assert named == [
        ("duplicated_delivered", "p3", 0, 1, 0, ["1:0"], 990),
        ("duplicated_in_log", "p3", 1, 1, None, ["1:1", "1:2"], 1040),
        ("lost", "p1", 7, 0, 7, [], 1690),
        ("lost", "p1", 8, 0, 8, [], 1790),
        ("lost", "p1", 9, 0, 9, [], 1890),
    ]
    page = (tmp_path / "run" / "report" / "index.html").read_text()
    assert "Lost or duplicated records" in page and "acknowledged, lost" in page and "1:1, 1:2" in page


def test_the_report_lists_the_first_hundred_lost_records_of_many(tmp_path, spark):
    P = [records.p("p1", i, "ok", i % 3, i // 3, 1000 + i) for i in range(400)]
    kept = [r for r in P if r["seq"] % 2 == 0]  # every odd seq lost: 200 of them
    code, s = verified(
        str(
            records.write(
                tmp_path / "run", P, [records.a(r["partition"], r["offset"], "p1", r["seq"]) for r in kept], []
            )
        ),
        spark=spark,
    )
    assert s["counts"]["acked_lost"] == 200 and code == exits.EXIT_FAIL
    assert [e["seq"] for e in s["examples"]] == list(range(1, 200, 2))  # the first 100, by send time
    assert (
        "The first 100 by send time; in all, 200 acknowledged records lost"
        in (tmp_path / "run" / "report" / "index.html").read_text()
    )


def test_offsets_rules_apply_without_unclean_election(tmp_path, spark):
    s = verify.verify(str(records.anomalies(tmp_path / "run", unclean=False)), spark=spark)
    assert {"acked-offsets-match", "no-divergent-offsets"} <= {v["rule"] for v in s["violations"]}


def test_report_files(tmp_path, spark):
    run = records.anomalies(tmp_path / "run")
    verify.verify(str(run), spark=spark)
    summary = json.loads((run / "report" / "summary.json").read_text())
    assert summary["verdict"] == "fail"
    junit = (run / "report" / "junit.xml").read_text()
    assert junit.count("<testcase") == len(summary["rules"]) and junit.count("<failure") == 3
    html = (run / "report" / "index.html").read_text()
    assert "Verdict: FAIL" in html and html.count("data:image/png;base64,") >= 3
    assert f"Verified by Spark {summary['spark']['version']} (local[2]" in html
    # Clock times and seconds for a reader; summary.json keeps the epoch milliseconds.
    assert "<td>1970&#8209;01&#8209;01 00:00:01.500</td><td>1.0 s</td>" in html  # a date never breaks
    w = summary["data_loss_window"]
    assert (
        f"{w['span_ms'] / 1000:.3f} s wide, from 1970-01-01" in html
        and "+0.190 s to +0.390 s from the first fault" in html
    )


def test_clean_record_passes(tmp_path, spark):
    P = [p("p1", i, "ok", 0, i, 1000 + i) for i in range(5)]
    A = [a(0, i, "p1", i) for i in range(5)]
    C = [c(0, i, "p1", i) for i in range(5)]
    run = records.write(tmp_path / "r", P, A, C)
    code, s = verified(str(run), spark=spark)
    assert code == exits.EXIT_PASS and s["counts"]["acked_lost"] == 0 and s["violations"] == []
    code, s = verified(f"file://{run}", spark=spark)  # the same folder as a URI
    assert code == exits.EXIT_PASS and s["run"] == "r"


def test_parquet_ledgers_give_the_same_counts(tmp_path, spark):
    run = records.anomalies(tmp_path / "json")
    from_json = verify.verify(str(run), spark=spark)
    pq = tmp_path / "parquet"
    for kind in ("produced", "audit", "consumed"):
        df, _ = ledgers.load(spark, DrillRecord(run), kind)
        df.filter(df["_corrupt_record"].isNull()).drop("_corrupt_record").coalesce(1).write.parquet(
            str(pq / f"{kind}-tmp")
        )
        (pq / kind).mkdir(parents=True)
        for i, f in enumerate(sorted((pq / f"{kind}-tmp").glob("*.parquet"))):
            f.rename(pq / kind / f"part{i}.parquet")
    (pq / "topology.json").write_text((run / "topology.json").read_text())
    (pq / "faults.jsonl").write_text((run / "faults.jsonl").read_text())
    from_parquet = verify.verify(str(pq), spark=spark)
    assert from_parquet["counts"] == {**from_json["counts"], "torn_lines": 0}


@pytest.mark.parametrize(
    "tail,expect",
    [
        (
            '{"broken json\n{"consumer_id": "c1", "group": "g", "topic": "t", "partition": 0, "offset": 9}\n',
            "c1.jsonl:6: malformed line",
        ),
    ],
)
def test_malformed_middle_line_names_file_and_line(tmp_path, spark, tail, expect):
    P = [p("p1", i, "ok", 0, i, 1000 + i) for i in range(5)]
    run = records.write(
        tmp_path / "r",
        P,
        [a(0, i, "p1", i) for i in range(5)],
        [c(0, i, "p1", i) for i in range(5)],
        tails={"consumed/c1.jsonl": tail},
    )
    with pytest.raises(BadInput, match=expect):
        verify.verify(str(run), spark=spark)


def test_missing_and_mistyped_columns_are_named(tmp_path, spark):
    bad = p("p1", 1, "ok", 0, 1, 1001)
    del bad["status"]
    run = records.write(tmp_path / "a", [p("p1", 0, "ok", 0, 0, 1000), bad], [], [])
    with pytest.raises(BadInput, match="column 'status' missing"):
        verify.verify(str(run), spark=spark)
    wrong = p("p1", 1, "ok", 0, 1, 1001) | {"seq": "one"}
    run = records.write(tmp_path / "b", [p("p1", 0, "ok", 0, 0, 1000), wrong], [], [])
    with pytest.raises(BadInput, match="column 'seq' has the wrong type"):
        verify.verify(str(run), spark=spark)


def test_empty_or_missing_input_is_bad_input(tmp_path, spark):
    with pytest.raises(BadInput, match="missing"):
        verify.verify(str(tmp_path / "nowhere"), spark=spark)
    run = records.write(tmp_path / "empty", [], [], [])
    with pytest.raises(BadInput, match="empty"):
        verify.verify(str(run), spark=spark)
    (tmp_path / "noaudit").mkdir()
    run = records.write(tmp_path / "noaudit", [p("p1", 0, "ok", 0, 0, 1000)], [], [])
    (run / "audit").rmdir()
    with pytest.raises(BadInput, match="audit: ledger folder missing"):
        verify.verify(str(run), spark=spark)


def test_records_written_three_times_and_read_at_several_positions(tmp_path, spark):
    """The identity pass is exact for one or two audit copies and checks three or more again."""
    P = [p("p1", 0, "ok", 0, 1, 1000), p("p1", 1, "ok", 0, 7, 1010), p("p1", 2, "ok", 0, 5, 1020)]
    # p1/0 at 0, 1, 2: acked at 1, the middle copy (fine); p1/1 at 3, 4, 6: acked at 7 (mismatch);
    # p1/2 once, at 5.
    A = [
        a(0, 0, "p1", 0),
        a(0, 1, "p1", 0),
        a(0, 2, "p1", 0),
        a(0, 3, "p1", 1),
        a(0, 4, "p1", 1),
        a(0, 5, "p1", 2),
        a(0, 6, "p1", 1),
    ]
    # consumers read p1/0 at 1 and 2 (both hold it), and p1/2 at 5 and at 7 (the audit has nothing at 7).
    C = [c(0, 1, "p1", 0), c(0, 2, "p1", 0), c(0, 3, "p1", 1), c(0, 5, "p1", 2), c(0, 7, "p1", 2)]
    s = verify.verify(str(records.write(tmp_path / "r", P, A, C)), spark=spark)
    counts = s["counts"]
    assert counts["ack_offset_mismatch"] == 1
    assert counts["duplicates_in_log"] == 4 and counts["duplicates_delivered"] == 2
    assert counts["divergent_offsets"] == 1 and counts["acked_lost"] == 0


def test_unknown_status_and_double_produced_rows_are_bad_input(tmp_path, spark):
    run = records.write(tmp_path / "a", [p("p1", 0, "ok", 0, 0, 1000), p("p1", 1, "maybe", 0, 1, 1001)], [], [])
    with pytest.raises(BadInput, match="p1.jsonl:2: status must be ok, fail or info, got 'maybe'"):
        verify.verify(str(run), spark=spark)
    run = records.write(tmp_path / "b", [p("p1", 0, "ok", 0, 0, 1000), p("p1", 0, "fail", 0)], [], [])
    with pytest.raises(BadInput, match="more than one produced row"):
        verify.verify(str(run), spark=spark)


def test_screen_passes_clean_buckets_and_catches_what_the_sets_hide(tmp_path, spark):
    """300 records per producer are five buckets for the screen. Each anomaly below leaves the
    ok, audit and consumed *sets* equal, so only the position certificates can catch it; the
    clean buckets around them must add nothing."""
    n = 300
    P = [p(pid, i, "ok", k, i, 1000 + i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    A = [a(k, i, pid, i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    C = [c(k, i, pid, i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    # p1/70 and p1/71 swapped places in the log (and consumers saw the log as it is):
    A[70], A[71] = a(0, 70, "p1", 71), a(0, 71, "p1", 70)
    C[70], C[71] = c(0, 70, "p1", 71), c(0, 71, "p1", 70)
    # p2/200 was read by a consumer at an offset where the log holds p2/201 (and p2/201 too).
    C[n + 200] = c(1, 201, "p2", 200)
    s = verify.verify(str(records.write(tmp_path / "r", P, A, C)), spark=spark)
    counts = s["counts"]
    assert counts["ack_offset_mismatch"] == 2  # p1/70 and p1/71: acked where the other one lives
    assert counts["reordered"] == 1  # p1/70 after p1/71
    assert counts["divergent_offsets"] == 1  # partition 1 offset 201 seen holding p2/200
    assert counts["duplicates_delivered"] == 0 and counts["acked_lost"] == 0 and counts["acked_unseen"] == 0
    assert counts["produced"] == 2 * n and counts["phantoms"] == 0


def test_flagged_records_do_not_hide_a_misplaced_one_in_their_bucket(tmp_path, spark, capsys):
    """The identity pass looks only at the seqs the sets flag, and checks the rest of their bucket
    by the certificates less the flagged seqs' shares. Here each bucket with a misplaced record
    (set-equal, as above) also holds a flagged one, so only that check can send the pass back."""
    n = 300
    P = [p(pid, i, "ok", k, i, 1000 + i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    A = [a(k, i, pid, i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    C = [c(k, i, pid, i) for k, pid in enumerate(("p1", "p2")) for i in range(n)]
    A[70], A[71] = a(0, 70, "p1", 71), a(0, 71, "p1", 70)  # swapped in the log, consumers saw it so
    C[70], C[71] = c(0, 70, "p1", 71), c(0, 71, "p1", 70)
    A[75] = C[75] = None  # p1/75 lost, in the same bucket (64-127)
    C[n + 200] = c(1, 201, "p2", 200)  # p2/200 read where the log holds p2/201
    A.append(a(1, 900, "p2", 210))  # p2/210 written twice, same bucket (192-255)
    A, C = [r for r in A if r], [r for r in C if r]
    s = verify.verify(str(records.write(tmp_path / "r", P, A, C)), spark=spark, quiet=False)
    counts = s["counts"]
    assert counts["ack_offset_mismatch"] == 2 and counts["divergent_offsets"] == 1
    assert counts["reordered"] == 2  # p1/70 after p1/71; p2/210's second copy, after p2/299
    assert counts["acked_lost"] == 1 and counts["acked_unseen"] == 1 and counts["duplicates_in_log"] == 1
    assert counts["duplicates_delivered"] == 0 and counts["phantoms"] == 0 and counts["produced"] == 2 * n
    assert "screen (2 buckets of 64 records to look at" in capsys.readouterr().err


def test_clean_buckets_alone_need_no_identity_pass(tmp_path, spark, capsys):
    P = [p("p1", i, "ok", 0, i, 1000 + i) for i in range(200)] + [p("p1", 200, "fail", 0)]
    A = [a(0, i, "p1", i) for i in range(200)]
    C = [c(0, i, "p1", i) for i in range(200)]
    code, s = verified(str(records.write(tmp_path / "r", P, A, C)), spark=spark, quiet=False)
    assert code == exits.EXIT_PASS
    assert s["counts"]["failed"] == 1 and s["counts"]["produced"] == 201
    assert sum(v for k, v in s["counts"].items() if k not in ("produced", "acked", "failed", "max_ack_gap_ms")) == 0
    assert "screen (0 buckets" in capsys.readouterr().err


def test_consumers_that_saw_the_log_as_it_is_are_not_read_again(tmp_path, spark, capsys):
    """Where the consumed rows of a suspicious bucket are the audit rows, the identity pass lets
    each audit row stand for its consumed twin instead of reading the consumed ledger again: the
    counts on the consumed side must come out as if it had been read."""
    P = [p("p1", i, "ok", 0, i, 1000 + i) for i in range(200)]
    A = [a(0, i, "p1", i) for i in range(200) if i != 5]  # p1/5 lost
    A += [a(0, 500, "p1", 70), a(0, 501, "ghost", 1)]  # p1/70 written twice, a phantom
    C = [c(0, r["offset"], r["producer_id"], r["seq"]) for r in A]  # consumers saw the log as it is
    C += [c(0, 502, "p1", 150)]  # ... and one position the log lacks
    s = verify.verify(str(records.write(tmp_path / "r", P, A, C)), spark=spark, quiet=False)
    counts = s["counts"]
    assert counts["acked_lost"] == counts["acked_unseen"] == 1
    assert counts["duplicates_in_log"] == 1 and counts["duplicates_delivered"] == 2  # p1/70; p1/70 and p1/150
    assert counts["phantoms"] == 1 and counts["divergent_offsets"] == 1 and counts["reordered"] == 1
    assert counts["ack_offset_mismatch"] == 0
    # p1/0-63 (the lost record) and the phantom's bucket mirror the log; p1/128-191 holds the
    # consumed row at offset 502 that the log lacks, and p1/64-127 the duplicate (mirrored too).
    assert "screen (4 buckets of 64 records to look at, 1 whose consumed rows differ" in capsys.readouterr().err


def test_reordering_streams_an_audit_in_log_order_across_tasks_and_sorts_any_other(spark):
    """Two producers' rows in one partition, in log order over three tasks, with seqs swapped near
    the task boundaries: a task's rows below an earlier task's largest seq count as reordered.
    The same rows in rising runs read out of order (files of one log, as Spark packs them) are
    counted from the runs; out of log order they take the sorting path, and so does one producer's
    alone when only its rows are out of order; every way agrees with a plain count."""
    import random

    from dcdrill.spark import checker, identities
    from dcdrill.spark.ledgers import CORRUPT, SCHEMAS

    rng = random.Random(7)
    seqs = {pid: list(range(150)) for pid in ("p1", "p2")}
    for s in seqs.values():
        for at in (48, 49, 50, 74, 75, 76, 99, 100, 120):
            j = min(149, at + rng.randint(1, 6))
            s[at], s[j] = s[j], s[at]
    rows = [
        ("t", 0, off, pid, seqs[pid][off // 2], None) for off, pid in ((o, ("p1", "p2")[o % 2]) for o in range(300))
    ]
    expected = 0
    for pid in ("p1", "p2"):
        top = -1
        for seq in seqs[pid]:
            expected += seq < top
            top = max(top, seq)
    assert expected > 9
    schema = "topic string, partition int, offset long, producer_id string, seq long, _corrupt_record string"
    p2_slots = [i for i, r in enumerate(rows) if r[3] == "p2"]
    mixed = list(rows)  # p1 in log order, p2's rows shuffled among their places
    for i, j in zip(p2_slots, rng.sample(p2_slots, len(p2_slots))):
        mixed[i] = rows[j]
    in_order = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), schema)
    shuffled = spark.createDataFrame(spark.sparkContext.parallelize(rng.sample(rows, len(rows)), 3), schema)
    one_shuffled = spark.createDataFrame(spark.sparkContext.parallelize(mixed, 3), schema)
    # Each task's 100 rows as three runs, the last first: rows 66-99, 33-65, then 0-32 of its share.
    runs = [
        r
        for task in range(3)
        for lo, hi in ((66, 100), (33, 66), (0, 33))
        for r in rows[100 * task + lo : 100 * task + hi]
    ]
    in_runs = spark.createDataFrame(spark.sparkContext.parallelize(runs, 3), schema)

    def empty(kind):
        return spark.createDataFrame(
            [], ", ".join(f"{c} {t.simpleString()}" for c, t in SCHEMAS[kind].items()) + f", {CORRUPT} string"
        )

    for audit, sorted_groups in ((in_order, 0), (in_runs, 0), (shuffled, 2), (one_shuffled, 1)):
        scanned = identities.scan(empty("produced"), audit, empty("consumed"), 4, [])
        assert len(scanned.reordering().unordered()) == sorted_groups  # their rows are sorted instead
        assert list(checker.reordering(scanned, audit).values()) == [expected]
        scanned.release()

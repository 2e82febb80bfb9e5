"""spark/transactions.py: each transaction anomaly from a hand-built record that has exactly it,
and a whole record that has none; the verdict's rules read them (consistency-first)."""

import json

import pytest

from dcdrill.spark import verify
from tests.records import a, c, p, write

SIZE = 4  # records per transaction: seqs 0-3 are txn 0, 4-7 txn 1, 8-11 txn 2


def _txn(txn, outcome, meant="commit"):
    return {
        "producer_id": "p1",
        "txn": txn,
        "first_seq": txn * SIZE,
        "records": SIZE,
        "outcome": outcome,
        "meant": meant,
        "error": None,
        "begin_ms": 900,
        "end_ms": 990,
        "dc": "dc-a",
    }


STATUS = {"committed": "ok", "aborted": "fail", "unknown": "info"}


def record(run, outcomes, in_log, consumed=()):
    """p1's transactions with `outcomes`, their records' rows as the producer writes them, and
    the committed log holding the seqs `in_log` (one partition, in seq order)."""
    produced = [
        p("p1", s, STATUS[o], 0, offset=s if o == "committed" else None, ack_ms=1000 + s)
        for t, o in enumerate(outcomes)
        for s in range(t * SIZE, (t + 1) * SIZE)
    ]
    log = sorted(in_log)
    write(
        run,
        produced,
        [a(0, n, "p1", s) for n, s in enumerate(log)],
        [c(0, log.index(s) if s in log else 99, "p1", s) for s in consumed],
    )
    (run / "transactions").mkdir()
    rows = [_txn(t, o, "abort" if o == "aborted" else "commit") for t, o in enumerate(outcomes)]
    (run / "transactions" / "p1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


WHOLE = range(0, 4)  # txn 0's records


@pytest.mark.parametrize(
    ("case", "outcomes", "in_log", "consumed", "counts"),
    [
        ("all well", ["committed", "aborted", "unknown"], [*WHOLE], [0, 1], {}),
        ("an unknown one committed whole", ["committed", "aborted", "unknown"], [*WHOLE, 8, 9, 10, 11], [], {}),
        ("a lost commit", ["committed", "committed"], [*WHOLE], [], {"lost_commits": 1}),
        ("a torn commit", ["committed", "committed"], [*WHOLE, 4, 5], [], {"torn_transactions": 1}),
        ("a torn unknown", ["committed", "unknown"], [*WHOLE, 6], [], {"unknown_torn": 1}),
        ("aborted records in the log", ["committed", "aborted"], [*WHOLE, 4, 7], [], {"aborted_in_log": 2}),
        ("an aborted read", ["committed", "aborted"], [*WHOLE], [5], {"aborted_reads": 1}),
        ("an unknown one read though absent", ["committed", "unknown"], [*WHOLE], [4, 6], {"aborted_reads": 2}),
    ],
)
def test_each_transaction_anomaly_is_counted_exactly_and_fails_consistency_first(
    tmp_path, spark, case, outcomes, in_log, consumed, counts
):
    summary = verify.verify(str(record(tmp_path / "run", outcomes, in_log, consumed)), spark=spark)
    tx = summary["transactions"]
    assert tx["counts"] == {k: counts.get(k, 0) for k in tx["counts"]}, case
    assert tx["outcomes"] == {o: outcomes.count(o) for o in ("committed", "aborted", "unknown")}
    failed = {r["rule"] for r in summary["rules"] if not r["passed"]}
    named = {"lost_commits": "no-lost-commits", "torn_transactions": "no-torn-transactions"}
    named |= {"unknown_torn": "unknown-all-or-nothing", "aborted_in_log": "no-aborted-in-log"}
    named |= {"aborted_reads": "no-aborted-reads"}
    assert {r for r in failed if r in named.values()} == {named[k] for k in counts}, (case, failed)
    if counts:
        assert summary["verdict"] == "fail" and {e["kind"] for e in tx["examples"]} == set(counts)
    run = tmp_path / "run"
    assert "<h2>Transactions</h2>" in (run / "report" / "index.html").read_text()
    from dcdrill.spark.report_files import one_screen

    assert f"  transactions {len(outcomes)}: " in one_screen(summary)
    junit = (run / "report" / "junit.xml").read_text()
    assert all(f'name="{rule}"' in junit for rule in named.values()), junit[:2000]


def test_a_record_without_transactions_has_no_transactions_section(tmp_path, spark):
    run = write(tmp_path / "run", [p("p1", 0, "ok", 0, offset=0, ack_ms=1000)], [a(0, 0, "p1", 0)], [])
    summary = verify.verify(str(run), spark=spark)
    assert summary["transactions"] is None and summary["verdict"] == "pass"
    assert "<h2>Transactions</h2>" not in (run / "report" / "index.html").read_text()
    assert "no-torn-transactions" not in (run / "report" / "junit.xml").read_text()


def test_transactions_that_do_not_follow_each_other_are_refused(tmp_path, spark):
    from dcdrill.spark.ledgers import BadInput

    run = record(tmp_path / "run", ["committed"], [*WHOLE])
    (run / "transactions" / "p1.jsonl").write_text(json.dumps(_txn(1, "committed")) + "\n")
    with pytest.raises(BadInput, match="transactions/p1.jsonl: transaction 1 .* breaks the run"):
        verify.verify(str(run), spark=spark)


def test_the_drill_verifies_its_own_record_with_transactions(tmp_path, spark):
    """`dcdrill drill` hands verify its DrillRecord (the writer), not a RecordReader: both read
    the transactions (a writer's method of the same name once shadowed the reader's)."""
    from dcdrill.record import DrillRecord

    run = record(tmp_path / "run", ["committed", "aborted"], [*WHOLE])
    summary = verify.verify(DrillRecord(run), spark=spark)
    assert summary["transactions"]["outcomes"] == {"committed": 1, "aborted": 1, "unknown": 0}
    assert DrillRecord(run).transaction_log("p1") == run / "transactions" / "p1.jsonl"

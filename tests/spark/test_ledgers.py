"""Malformed drill records: each exits 2 naming its file (and line, for a ledger or faults.jsonl),
never a traceback and never a verdict; a torn last line is tolerated and counted; one bad record
does not stop the others of the same `dcdrill verify` call."""

import json
import os
import shutil

from dcdrill import exits, verify_command
from tests import records
from tests.records import a, c, p, verified

GOOD_P = [p("p1", i, "ok", 0, i, 1000 + i) for i in range(3)]
GOOD_A = [a(0, i, "p1", i) for i in range(3)]
GOOD_C = [c(0, i, "p1", i) for i in range(3)]


def good(run, **kw):
    return records.write(run, kw.pop("P", GOOD_P), kw.pop("A", GOOD_A), kw.pop("C", GOOD_C), **kw)


def topo(**change):
    t = records.topology()
    t.update(change)
    return t


def with_file(name, text):
    def make(run):
        good(run)
        (run / name).write_text(text)

    return make


def row(kind, change, index=1):
    """The good record with one row of one ledger changed."""

    def make(run):
        rows = {"P": [dict(r) for r in GOOD_P], "A": [dict(r) for r in GOOD_A], "C": [dict(r) for r in GOOD_C]}
        rows[kind][index].update(change)
        good(run, **rows)

    return make


def symlinked_ledger(run):
    good(run)
    outside = run.parent / f"{run.name}-outside.jsonl"
    shutil.move(run / "audit" / "audit.jsonl", outside)
    os.symlink(outside, run / "audit" / "audit.jsonl")


def audit_partition_typed_bigint(run, second="partition::BIGINT AS partition"):
    """The ledgers as Parquet of RECORD.md's types, but the audit's second file holds `partition`
    as a 64-bit column: the first file's schema passes, the second's footer is refused (spark/ledgers.py)."""
    import duckdb

    from dcdrill.spark import ledgers

    duck = {"string": "VARCHAR", "int": "INTEGER", "bigint": "BIGINT", "boolean": "BOOLEAN", "double": "DOUBLE"}
    good(run)
    for ledger in ("produced", "audit", "consumed"):
        [src] = (run / ledger).glob("*.jsonl")
        types = {c: duck[t.simpleString()] for c, t in ledgers.SCHEMAS[ledger].items()}
        read = f"read_json('{src}', columns={types!r})"
        halves = [("0", "*")] if ledger != "audit" else [("0", "*"), ("1", f"* REPLACE ({second})")]
        for half, columns in halves:
            rows = "" if ledger != "audit" else f'WHERE {"" if half == "1" else "NOT "}("offset" % 2 = 1)'
            duckdb.sql(
                f"COPY (SELECT {columns} FROM {read} {rows}) "
                f"TO '{src.parent / f'part-{half}.parquet'}' (FORMAT parquet)"
            )
        src.unlink()


def symlinked_report(run):
    good(run)
    (run.parent / f"{run.name}-elsewhere").mkdir()
    os.symlink(run.parent / f"{run.name}-elsewhere", run / "report")


def report_is_a_file(run):
    good(run)
    (run / "report").write_text("x")


def gap_in_seqs(run):
    good(run, P=GOOD_P[:1] + GOOD_P[2:], A=GOOD_A[:1] + GOOD_A[2:], C=GOOD_C[:1] + GOOD_C[2:])


def cut_audit(run):
    """A complete drill whose audit ledger lost its last rows afterwards (at a line boundary)."""
    good(run)
    audit = run / "audit" / "audit.jsonl"
    (run / "journal.json").write_text(json.dumps({"status": "completed"}))
    (run / "audit-end.json").write_text(json.dumps({"audit.jsonl": {"rows": 3, "bytes": audit.stat().st_size}}))
    audit.write_text(audit.read_text().splitlines(keepends=True)[0])


def key_twice_in_a_produced_row(run):
    """Spark keeps the second seq (5), so p1 reads 0, 5, 2: a gap the slow path blames on line 2."""
    good(run)
    ledger = run / "produced" / "p1.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"seq": 1', '"seq": 1, "seq": 5')
    ledger.write_text("".join(lines))


def edit_line(ledger, index, old, new):
    """The good record with one line of one ledger edited as text (what a tamperer or a bad disk does)."""

    def make(run):
        good(run)
        path = run / ledger
        lines = path.read_text().splitlines(keepends=True)
        assert old in lines[index], (old, lines[index])
        lines[index] = lines[index].replace(old, new, 1)
        path.write_text("".join(lines))

    return make


FAULT_RAN = {
    "activity": {"name": "kill-dc", "provider": {"module": "dcdrill.chaos.faults.actions", "func": "kill_dc"}},
    "status": "succeeded",
}


def whole_drill(run, agents=("p1", "c1", "a"), drop=(), journal_run=(FAULT_RAN,), intents=None):
    """A whole drill as `dcdrill drill` leaves it: its experiment and journal, the processes it
    started (agents.jsonl), its fault and that fault's end, the audit's end; then `drop` deleted."""
    good(run, faults=[kill_dc()])
    (run / "experiment.json").write_text(json.dumps({"title": "kill-dc", "method": []}))
    (run / "journal.json").write_text(json.dumps({"status": "completed", "run": list(journal_run)}))
    audit = run / "audit" / "audit.jsonl"
    (run / "audit-end.json").write_text(json.dumps({"audit.jsonl": {"rows": 3, "bytes": audit.stat().st_size}}))
    rows = [{"name": n, "pid": 7, "host": None, "folder": None, "cluster": None, "started_ms": 1} for n in agents]
    (run / "agents.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    records.note_plan(run)
    if intents is not None:
        (run / "intents").mkdir()
        (run / "intents" / "p1.jsonl").write_text("".join(json.dumps(m) + "\n" for m in intents))
    for rel in drop:
        (run / rel).unlink()
    return run


HEADER = {"producer_id": "p1", "topic": records.TOPIC, "keys": ["k0", "k1"], "partitions": [0, 0], "dc": "dc-a"}


def kill_dc(**change):
    return {"fault": "kill-dc", "target": "dc-a", "start_ms": 1000, "end_ms": 2000, **change}


# (case, record builder, what stderr must name)
BAD = [
    (
        "no profile",
        lambda r: good(r, topo={k: v for k, v in records.topology().items() if k != "profile"}),
        "topology.json: profile must be one of consistency-first, availability-first: "
        "without it there is no promise, got nothing",
    ),
    (
        "misspelled profile",
        lambda r: good(r, topo=topo(profile="consistency-frist")),
        "topology.json: profile must be one of consistency-first, availability-first: "
        "without it there is no promise, got 'consistency-frist'",
    ),
    ("topology is a list", with_file("topology.json", "[1, 2]"), "topology.json: must be a JSON object, got list"),
    ("topology not JSON", with_file("topology.json", "{"), "topology.json: not valid JSON"),
    (
        "predictions a list",
        lambda r: good(r, topo=topo(predictions=[])),
        "topology.json: predictions must be an object of DCs, each with quorum_survives, writable and "
        "acked_loss_possible as true/false, got []",
    ),
    (
        "prediction shape",
        lambda r: good(r, topo=topo(predictions={"dc-a": {"writable": "yes"}})),
        "topology.json: predictions must be an object of DCs, each with quorum_survives, writable and "
        "acked_loss_possible as true/false (dc-a.quorum_survives: field required)",
    ),
    (
        "unclean as text",
        lambda r: good(r, topo=topo(unclean_leader_election="false")),
        "topology.json: unclean_leader_election must be bool",
    ),
    (
        "fault line a number",
        with_file("faults.jsonl", json.dumps(kill_dc()) + "\n7\n"),
        "faults.jsonl:2: a fault line must be a JSON object, got int",
    ),
    (
        "start_ms null",
        with_file("faults.jsonl", json.dumps(kill_dc(start_ms=None)) + "\n"),
        "faults.jsonl:1: start_ms must be a whole number of ms >= 0, got None",
    ),
    (
        "end before start",
        with_file("faults.jsonl", json.dumps(kill_dc(end_ms=500)) + "\n"),
        "faults.jsonl:1: end_ms must be null or a whole number >= start_ms (1000), got 500",
    ),
    (
        "took effect before it was asked for",
        with_file("faults.jsonl", json.dumps(kill_dc(end_ms=None, acted_ms=900)) + "\n"),
        "faults.jsonl:1: acted_ms must be null or a whole number >= start_ms (1000), got 900",
    ),
    (
        "took effect after it ended",
        with_file(
            "faults.jsonl",
            json.dumps(kill_dc(end_ms=None)) + "\n" + json.dumps(kill_dc(acted_ms=9000)) + "\n",
        ),
        "faults.jsonl: kill-dc dc-a took effect (acted_ms 9000) after it ended (end_ms 2000)",
    ),
    (
        "unknown fault",
        with_file("faults.jsonl", json.dumps(kill_dc(fault="meteor")) + "\n"),
        "faults.jsonl:1: fault must be one of kill-dc, stop-dc, isolate-dc, kill-tiebreaker, degrade-link, "
        "rolling-restart, kill-mirror, power-loss, got 'meteor'",
    ),
    (
        "malformed fault line",
        with_file("faults.jsonl", "{oops\n" + json.dumps(kill_dc()) + "\n"),
        "faults.jsonl:1: malformed ledger line",
    ),
    (
        "isr in_sync over partitions",
        with_file("faults.jsonl", json.dumps(kill_dc(isr_at_start={"partitions": 2, "in_sync": 3})) + "\n"),
        "faults.jsonl:1: isr_at_start must be",
    ),
    ("negative offset", row("P", {"offset": -4}), "produced/p1.jsonl:2: column 'offset' is negative (-4)"),
    ("negative audit offset", row("A", {"offset": -1}), "audit/audit.jsonl:2: column 'offset' is negative (-1)"),
    ("negative seq", row("C", {"seq": -2}), "consumed/c1.jsonl:2: column 'seq' is negative (-2)"),
    ("negative partition", row("P", {"partition": -1}), "produced/p1.jsonl:2: column 'partition' is negative (-1)"),
    (
        "ok without offset",
        row("P", {"offset": None}),
        "produced/p1.jsonl:2: offset must be set if and only if status is ok (status 'ok', offset None)",
    ),
    (
        "fail with offset",
        row("P", {"status": "fail"}),
        "produced/p1.jsonl:2: offset must be set if and only if status is ok (status 'fail', offset 1)",
    ),
    ("seq as text", row("P", {"seq": "1"}), "produced/p1.jsonl:2: column 'seq' has the wrong type (str)"),
    ("gap in seqs", gap_in_seqs, "produced/p1.jsonl:2: producer 'p1' has no row for seqs 1 to 1"),
    (
        "a produced row twice",
        lambda r: good(r, P=GOOD_P + GOOD_P[1:2]),
        "produced/p1.jsonl:4: producer 'p1' seq 1 has a second produced row (the first: ",
    ),
    (
        "an offset beyond 64 bits",
        row("A", {"offset": 2**70}),
        f"audit/audit.jsonl:2: column 'offset' is {2**70}, beyond a 64-bit integer",
    ),
    (
        "a partition beyond 32 bits",
        row("P", {"partition": 2**40}),
        f"produced/p1.jsonl:2: column 'partition' is {2**40}, beyond a 32-bit integer",
    ),
    (
        "a key twice in a produced row",
        key_twice_in_a_produced_row,
        "produced/p1.jsonl:2: key 'seq' appears twice in one object",
    ),
    (
        "a key twice in a fault line",
        with_file("faults.jsonl", json.dumps(kill_dc())[:-1] + ', "target": "dc-b"}\n'),
        "faults.jsonl:1: key 'target' appears twice in one object",
    ),
    (
        "a key twice in topology.json",
        with_file("topology.json", json.dumps(records.topology())[:-1] + ', "profile": "availability-first"}'),
        "topology.json: not valid JSON (key 'profile' appears twice in one object)",
    ),
    (
        "malformed middle line",
        lambda r: good(r, tails={"produced/p1.jsonl": "{nope\n"}),
        "produced/p1.jsonl:4: malformed line",
    ),
    (
        "a line holding an array",
        lambda r: good(r, tails={"consumed/c1.jsonl": json.dumps([c(0, 1, "p1", 1)] * 2) + "\n"}),
        "consumed/c1.jsonl:4: a row must be a JSON object",
    ),
    ("ledger symlinked from outside", symlinked_ledger, "audit/audit.jsonl: a symlink leading outside the record"),
    (
        "a Parquet column of another type",
        audit_partition_typed_bigint,
        "audit/part-1.parquet: column 'partition' is bigint where the first file of the audit ledger "
        "(part-0.parquet) has int",
    ),
    (
        "a second Parquet file typing a column as text",
        lambda r: audit_partition_typed_bigint(r, second="NULL::VARCHAR AS timestamp_ms"),
        "audit/part-1.parquet: column 'timestamp_ms' is string, expected bigint",
    ),
    ("report a symlink", symlinked_report, "report: is a symlink; the report is written only inside the record"),
    ("report a file", report_is_a_file, "report: exists and is not a folder"),
    ("no topology", lambda r: (good(r), (r / "topology.json").unlink()), "topology.json: missing"),
    ("no produced folder", lambda r: (good(r), shutil.rmtree(r / "produced")), "produced: ledger folder missing"),
    ("empty produced", lambda r: good(r, P=[]), "the produced ledger is empty"),
    (
        "mixed formats",
        lambda r: (good(r), (r / "audit" / "x.parquet").write_bytes(b"PAR1")),
        "mixes .parquet and .jsonl",
    ),
    # A drill that crashed halfway (issue: crash-safe drills): refused, never a verdict.
    (
        "an open fault",
        lambda r: good(r, faults=[kill_dc(end_ms=None)]),
        "an incomplete drill record: faults.jsonl: kill-dc dc-a has no end (never healed",
    ),
    (
        "a fault state still active",
        with_file("chaos-state.json", json.dumps({"active": [kill_dc(end_ms=None, undo={})]})),
        "chaos-state.json: still lists 1 fault(s) as active",
    ),
    (  # an empty-looking state is no proof of a healed fault: held to its model, not read for "active"
        "a fault state its model does not hold",
        with_file("chaos-state.json", json.dumps({"active": [], "undo": {"restart": []}})),
        "chaos-state.json: unknown key 'undo'",
    ),
    (
        "an experiment without its journal",
        with_file("experiment.json", "{}"),
        "experiment.json is there and journal.json is not: chaos run never finished",
    ),
    (
        "an interrupted journal",
        with_file("journal.json", json.dumps({"status": "interrupted"})),
        "journal.json: the experiment was interrupted",
    ),
    (
        "a journal and no audit end",
        with_file("journal.json", json.dumps({"status": "completed"})),
        "audit-end.json is missing: the audit never finished",
    ),
    ("an audit cut short", cut_audit, "audit/audit.jsonl: 94 bytes, 282 when the audit finished"),
    (
        "a bad audit end",
        with_file("audit-end.json", json.dumps({"audit.jsonl": {"rows": 3}})),
        "audit-end.json: audit.jsonl must be {rows, bytes}",
    ),
    # What Spark's JSON source would let through: a key twice (the last value kept), text after the
    # object, a line that is no object. Each ledger, and a key spelled with an escape.
    (
        "a status twice, the last one ok",
        edit_line("produced/p1.jsonl", 1, '"status": "ok"', '"status": "fail", "status": "ok"'),
        "produced/p1.jsonl:2: key 'status' appears twice in one object",
    ),
    (
        "a key twice, the second spelled with an escape",
        edit_line("produced/p1.jsonl", 1, '"status": "ok"', '"status": "fail", "st\\u0061tus": "ok"'),
        "produced/p1.jsonl:2: key 'status' appears twice in one object",
    ),
    (
        "a key twice in a consumed row",
        edit_line("consumed/c1.jsonl", 2, '"offset": 2', '"offset": 2, "offset": 2'),
        "consumed/c1.jsonl:3: key 'offset' appears twice in one object",
    ),
    (
        "a key twice in an audit row",
        edit_line("audit/audit.jsonl", 0, '"seq": 0', '"seq": 0, "seq": 0'),
        "audit/audit.jsonl:1: key 'seq' appears twice in one object",
    ),
    (
        "text after a produced row",
        edit_line("produced/p1.jsonl", 1, "}\n", '} {"seq": 9}\n'),
        "produced/p1.jsonl:2: text after the JSON object",
    ),
    (
        "text after the audit's last row",
        edit_line("audit/audit.jsonl", 2, "}\n", "} trailing\n"),
        "audit/audit.jsonl:3: text after the JSON object",
    ),
    ("a number for a consumed row", edit_line("consumed/c1.jsonl", 1, "{", "7 {"), "consumed/c1.jsonl:2: "),
    # A drill whose record lost a file it must hold (issue 67): refused, never "no fault" or "no loss".
    (
        "a consumer's ledger deleted",
        lambda r: whole_drill(r, agents=("p1", "c1", "c2", "a")),
        "consumed/c2.jsonl (or .parquet): missing, though agents.jsonl says c2 ran",
    ),
    (
        "a producer's ledger deleted",
        lambda r: whole_drill(r, agents=("p1", "p2", "c1", "a")),
        "produced/p2.jsonl (or .parquet): missing, though agents.jsonl says p2 ran",
    ),
    (
        "agents.jsonl deleted",
        lambda r: whole_drill(r, drop=("agents.jsonl",)),
        "agents.jsonl is missing: which producers, consumers and audits the drill started is unknown",
    ),
    (
        "faults.jsonl deleted",
        lambda r: whole_drill(r, drop=("faults.jsonl",)),
        "faults.jsonl: no kill-dc line, though journal.json says it ran",
    ),
    (
        "faults.jsonl emptied",
        lambda r: (whole_drill(r), (r / "faults.jsonl").write_text("")),
        "faults.jsonl: no kill-dc line, though journal.json says it ran",
    ),
    (
        "the audit deleted",
        lambda r: (whole_drill(r), (r / "audit" / "audit.jsonl").unlink()),
        "audit/audit.jsonl (or .parquet): missing, though agents.jsonl says a ran",
    ),
    # Intent logs a producer never writes, or its ledger contradicts.
    (
        "an intent log without its header",
        lambda r: whole_drill(r, intents=[{"reserved": 8, "at_ms": 990}]),
        "intents/p1.jsonl:1: not an intent log's header",
    ),
    (
        "reservations that shrink",
        lambda r: whole_drill(r, intents=[HEADER, {"reserved": 64, "at_ms": 1}, {"reserved": 8, "at_ms": 2}]),
        "intents/p1.jsonl:3: reserved 8 after 64: reservations only grow",
    ),
    (
        "a sent count beyond the reservations",
        lambda r: whole_drill(
            r, intents=[HEADER, {"reserved": 4, "at_ms": 1}, {"sent": 9}, {"reserved": 70, "at_ms": 2}]
        ),
        "intents/p1.jsonl:3: sent 9, beyond the 4 reserved",
    ),
    (
        "a mark that is neither",
        lambda r: whole_drill(r, intents=[HEADER, {"reserved": 64, "at_ms": 1, "sent": 3}]),
        "intents/p1.jsonl:2: neither {reserved, at_ms} nor {sent}",
    ),
    (
        "a produced row the intents never reserved",
        lambda r: whole_drill(r, intents=[HEADER, {"reserved": 2, "at_ms": 1}]),
        "produced/p1.jsonl has a row for seq 2, which",
    ),
    (
        "a reservation no producer makes",
        lambda r: whole_drill(r, intents=[HEADER, {"reserved": 10**12, "at_ms": 1}]),
        "seqs reserved with no row, beyond any producer's",
    ),
    # A host whose clock was off: its send and ack times cannot be set against the fault's.
    (
        "a producer's host clock 2 s ahead",
        lambda r: (whole_drill(r), _clock(r, offset_ms=2_000, rtt_ms=40)),
        "clocks.jsonl: c1.dc-a.lab's clock was +2000 ms off the control's at p1's start",
    ),
    (
        "a clock reading with no offset",
        lambda r: (whole_drill(r), _clock(r, offset_ms=None, rtt_ms=40)),
        "clocks.jsonl:1: offset_ms must be an integer, got None",
    ),
    # The drill's plan: deleted, naming another drill, or holding what no drill writes.
    ("plan deleted", lambda r: whole_drill(r, drop=("plan.json",)), "plan.json is missing: what the drill ran"),
    (
        "plan of another experiment",
        lambda r: (
            whole_drill(r),
            (r / "experiment.json").write_text(
                json.dumps({"title": "x", "extensions": [{"name": "dcdrill", "experiment": "stop-dc"}]})
            ),
        ),
        "plan.json names the experiment kill-dc, experiment.json stop-dc",
    ),
    (
        "plan with the hold as text",
        lambda r: (
            whole_drill(r),
            (r / "plan.json").write_text((r / "plan.json").read_text().replace('"hold_s": 30.0', '"hold_s": "30"')),
        ),
        "plan.json: configuration.hold_s: Input should be a valid number, got '30'",
    ),
    # Keys no writer writes, and types no writer gives (record/models.py holds every small file).
    (
        "a fault line with a key no fault writes",
        with_file("faults.jsonl", json.dumps(kill_dc(healed_by="me")) + "\n"),
        "faults.jsonl:1: unknown key 'healed_by'",
    ),
    (
        "an agent with a key no writer writes",
        lambda r: (
            whole_drill(r),
            (r / "agents.jsonl").write_text(
                (r / "agents.jsonl").read_text() + '{"name": "p2", "pid": 7, "started_ms": 1, "uid": 0}\n'
            ),
        ),
        "agents.jsonl:4: unknown key 'uid'",
    ),
    (
        "a collection lost as text",
        lambda r: (
            whole_drill(r),
            (r / "collected.jsonl").write_text('{"host": "c1", "folder": "f", "at_ms": 1, "lost": "no"}\n'),
        ),
        "collected.jsonl:1: lost must be true or false, got 'no'",
    ),
    (
        "a coordination sample with a leader id",
        with_file("coordination.jsonl", '{"at_ms": 1500, "leader": 2}\n'),
        "coordination.jsonl:1: leader must be a host name or null, got 2",
    ),
    (
        "an intent header with a partition short",
        lambda r: whole_drill(r, intents=[{**HEADER, "partitions": [0]}]),
        "intents/p1.jsonl:1: not an intent log's header (the first line: 2 keys but 1 partitions)",
    ),
    (
        "an audit end with a count as text",
        lambda r: (whole_drill(r), (r / "audit-end.json").write_text('{"audit.jsonl": {"rows": "3", "bytes": 9}}')),
        "audit-end.json: audit.jsonl must be {rows, bytes} as whole numbers >= 0",
    ),
]


def _clock(run, **reading):
    row = {"name": "p1", "host": "c1.dc-a.lab", "at": "start", "at_ms": 900, **reading}
    (run / "clocks.jsonl").write_text(json.dumps(row) + "\n")


def test_every_malformed_record_exits_2_naming_file_and_line_and_the_others_still_verify(tmp_path, spark, capsys):
    runs = []
    for i, (_case, make, _) in enumerate(BAD):
        run = tmp_path / f"r{i:02d}"
        make(run)
        runs.append(run)
    clean = good(tmp_path / "clean")
    # The clean record sits in the middle: the records before it failing must not stop it.
    argv = [str(r) for r in runs[:10]] + [str(clean)] + [str(r) for r in runs[10:]] + ["--quiet"]
    assert verify_command.main(argv) == exits.EXIT_BAD_INPUT
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    lines = out.err.splitlines()
    for (case, _, expected), run in zip(BAD, runs):
        mine = [line for line in lines if str(run) + "/" in line or str(run) + ":" in line or line.endswith(str(run))]
        assert any(expected in line for line in mine), (case, mine)
        assert not (run / "report" / "summary.json").exists() or case.startswith("report")
    assert out.out.count("verdict: PASS") == 1
    assert json.loads((clean / "report" / "summary.json").read_text())["verdict"] == "pass"
    # Nothing was written where a symlinked report pointed.
    i = [b[0] for b in BAD].index("report a symlink")
    assert list((tmp_path / f"r{i:02d}-elsewhere").iterdir()) == []


def test_a_whole_drill_as_the_hostile_cases_start_from_verifies(tmp_path, spark):
    """The control for the manifest cases: nothing missing, it verifies (and an intent log of a
    producer that stopped cleanly adds nothing)."""
    run = whole_drill(tmp_path / "whole", intents=[HEADER, {"reserved": 64, "at_ms": 990}, {"sent": 3}])
    code, s = verified(str(run), spark=spark)
    assert code == exits.EXIT_PASS, s.get("violations")


def test_a_torn_last_line_is_tolerated_and_counted(tmp_path, spark):
    run = good(tmp_path / "torn", tails={"produced/p1.jsonl": '{"producer_id": "p1", "seq": 3, "top'})
    code, s = verified(str(run), spark=spark)
    assert code == exits.EXIT_PASS and s["counts"]["torn_lines"] == 1


def test_an_acks0_send_is_indeterminate_not_acknowledged(tmp_path, spark):
    """acks=0 producers write info rows with no offset (validation/producer.py): a clean pass."""
    P = GOOD_P + [p("p1", 3, "info", 0, ack_ms=1003)]
    code, s = verified(str(good(tmp_path / "a0", P=P, A=GOOD_A + [a(0, 3, "p1", 3)])), spark=spark)
    assert code == exits.EXIT_PASS and s["counts"]["indeterminate_present"] == 1


def test_a_killed_producers_records_in_flight_are_indeterminate_from_its_intent_log(tmp_path, spark):
    """The workload was SIGKILLed: nothing wrote the info rows its intent log implies, and its
    ledger's torn last line is a record acknowledged and in the log. The verifier applies the
    intent log itself: no phantom, no seq gap, and the ledger stays as the crash left it."""
    run = good(
        tmp_path / "killed",
        A=GOOD_A + [a(0, 3, "p1", 3)],
        C=GOOD_C + [c(0, 3, "p1", 3)],
        tails={"produced/p1.jsonl": json.dumps(p("p1", 3, "ok", 0, 3, 1003))[:40]},
    )
    header = {"producer_id": "p1", "topic": records.TOPIC, "keys": ["k0", "k1"], "partitions": [0, 0], "dc": "dc-a"}
    (run / "intents").mkdir()
    (run / "intents" / "p1.jsonl").write_text(
        json.dumps(header) + "\n" + json.dumps({"reserved": 8, "at_ms": 990}) + "\n"
    )
    ledger = (run / "produced" / "p1.jsonl").read_bytes()
    code, s = verified(str(run), spark=spark)
    assert code == exits.EXIT_PASS, s["violations"]
    n = s["counts"]
    assert (n["produced"], n["indeterminate"], n["indeterminate_present"], n["torn_lines"]) == (8, 5, 1, 1), n
    assert (run / "produced" / "p1.jsonl").read_bytes() == ledger  # pure: the record is not written

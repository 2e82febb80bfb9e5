"""record/models.py against RECORD.md, and every writer's rows against the models: the table of
files and the ledgers' columns cannot disagree with the document, and what the control, the
agents and heal write is what the readers accept."""

import json
import re
import threading
from pathlib import Path

import pytest

from dcdrill.record import DrillRecord, models
from dcdrill.record.ledger import in_flight, loads
from dcdrill.validation.producer import SequencedProducer

RECORD_MD = (Path(__file__).parents[2] / "RECORD.md").read_text()


def _section(title: str) -> str:
    return RECORD_MD.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_record_md_lists_exactly_the_files_the_models_table_names():
    table = RECORD_MD.split("| path | written by | one row per |", 1)[1].split("\n\n", 1)[0]
    listed = {name for line in table.splitlines()[2:] for name in re.findall(r"`([^`]+)`", line.split(" | ")[0])}
    listed.discard("*.parquet")  # a ledger as Parquet: the same model, by column types
    assert listed == set(models.MODELS)


def test_every_file_without_a_model_says_why():
    for name, model in models.MODELS.items():
        assert isinstance(model, type) or (isinstance(model, str) and len(model) > 20), name


@pytest.mark.parametrize("kind", sorted(models.LEDGER_MODELS))
def test_record_md_gives_each_ledger_the_models_columns(kind):
    section = _section(kind)
    if kind == "produced":
        rows = [line for line in section.splitlines() if line.startswith("| `")]
        columns = [c for line in rows for c in re.findall(r"`([a-z_]+)`", line.split(" | ")[0])]
    else:
        columns = re.findall(r"`([a-z_]+)`", section.strip().split(":")[0].split(".")[0])
    fields = [f for f in models.LEDGER_MODELS[kind].model_fields if f not in models.ROUTING_COLUMNS]
    assert columns == fields
    mirrors = _section("Mirrors (replicated stacks: summary.json → mirrors, mirror_loops, failovers)")
    assert "`produced` and `consumed` rows gain `cluster`" in mirrors
    assert "each row with `cluster` and `origin`" in RECORD_MD


def test_the_verifiers_spark_schemas_are_the_ledger_models():
    from dcdrill.spark.ledgers import NON_NEGATIVE, REQUIRED, SCHEMAS

    assert {k: {c: t.simpleString() for c, t in s.items()} for k, s in SCHEMAS.items()} == {
        "produced": {
            "producer_id": "string",
            "seq": "bigint",
            "topic": "string",
            "partition": "int",
            "key": "string",
            "send_ms": "bigint",
            "status": "string",
            "ack_ms": "bigint",
            "offset": "bigint",
            "error": "string",
            "dc": "string",
        },
        "consumed": {
            "consumer_id": "string",
            "group": "string",
            "topic": "string",
            "partition": "int",
            "offset": "bigint",
            "producer_id": "string",
            "seq": "bigint",
            "consume_ms": "bigint",
            "dc": "string",
        },
        "audit": {
            "topic": "string",
            "partition": "int",
            "offset": "bigint",
            "producer_id": "string",
            "seq": "bigint",
            "timestamp_ms": "bigint",
        },
    }
    assert REQUIRED["produced"] == ("producer_id", "seq", "topic", "partition", "send_ms", "status")
    assert REQUIRED["consumed"] == REQUIRED["audit"] == ("topic", "partition", "offset")
    assert NON_NEGATIVE["produced"] == ("seq", "partition", "send_ms", "ack_ms", "offset")
    assert NON_NEGATIVE["consumed"] == NON_NEGATIVE["audit"] == ("partition", "offset", "seq")


def _producer(cluster=None):
    """The producer's row formatting alone (SequencedProducer._settle), with no client behind it."""
    p = object.__new__(SequencedProducer)
    p.lock, p.pending, p.unwritten, p.acked_to = threading.Lock(), {}, [], {}
    p.counts = {"sent": 0, "ok": 0, "fail": 0, "info": 0}
    p.keys = [("k0", 3), ("k1", 0)]
    p.pid_json, p.topic_json, p.dc_json = json.dumps("p1"), json.dumps("t"), json.dumps("dc-a")
    p.tail = "}\n" if cluster is None else f',"cluster":{json.dumps(cluster)}}}\n'
    return p


@pytest.mark.parametrize("cluster", [None, "east"])
def test_the_producers_hand_formatted_rows_are_produced_rows(cluster):
    p = _producer(cluster)
    outcomes = [
        ("ok", 7, None),
        ("fail", None, 'refused: "NOT_ENOUGH_REPLICAS"\n'),
        ("info", None, "timed out"),
        ("ok", -1, None),
    ]
    for seq, outcome in enumerate(outcomes):
        p.pending[seq] = (1_000 + seq, seq % 2)
        p._settle(seq, *outcome)
    rows = [loads(line) for line in "".join(p.unwritten).splitlines()]
    assert [r["status"] for r in rows] == ["ok", "fail", "info", "info"]  # acks=0's offset -1: no acknowledgement
    for n, row in enumerate(rows, 1):
        models.validated(models.Produced, row, f"row {n}")
    assert all(r.get("cluster") == cluster for r in rows)


def test_heals_info_rows_from_an_intent_log_are_produced_rows():
    header = {"producer_id": "p1", "topic": "t", "dc": "dc-a", "cluster": "east", "keys": ["k0"], "partitions": [2]}
    intents = "".join(json.dumps(m) + "\n" for m in (header, {"reserved": 64, "at_ms": 5}))
    rows = in_flight(b"", intents.encode(), "intents/p1.jsonl")
    assert len(rows) == 64
    for row in rows:
        models.validated(models.Produced, row, "info row")


def test_the_records_own_writers_refuse_a_row_their_readers_would(tmp_path):
    record = DrillRecord(tmp_path / "run")
    record.path.mkdir()
    with pytest.raises(ValueError, match=r"agents.jsonl: pid must be a positive integer, got 0"):
        record.note_agent("p1", 0)
    with pytest.raises(ValueError, match=r"faults.jsonl: fault must be one of kill-dc"):
        record.fault_started("kill-everything", "dc-a")
    with pytest.raises(ValueError, match=r"failovers.jsonl: unknown key 'extra'"):
        record.append_failover({"group": "g", "from": "east", "to": "west", "at_ms": 1, "extra": 1})
    with pytest.raises(ValueError, match=r"mirror-events.jsonl:1: event must be one of start, rebalance"):
        record.write_mirror_events([{"host": "h", "flows": [], "event": "boom", "at_ms": 1}])
    assert not any(record.path.iterdir())  # nothing written

    record.note_agent("p1", 7, "c1", folder="f")
    entry = record.fault_started("kill-dc", "dc-a", isr_at_start={"partitions": 6, "in_sync": 6})
    record.fault_ended(entry)
    record.append_failover({"group": "g", "from": "east", "to": "west", "at_ms": 1, "topic": "east.t"})
    record.append_mirror_wait({"flow": "east->west", "began_ms": 1, "caught_up_ms": 2})
    record.note_collected("c1", "f")
    record.note_clock("p1", "c1", "start", -3, 1)
    assert [a["name"] for a in record.agents()] == ["p1"]
    assert record.faults()[0]["end_ms"] >= entry["start_ms"]
    assert record.failovers()[0]["to"] == "west" and record.mirror_waits()[0]["flow"] == "east->west"
    assert record.uncollected() == [] and record.clocks()[0]["offset_ms"] == -3


@pytest.mark.parametrize(
    "sample, said",
    [
        ({"at_ms": 1, "leader": 3}, "leader must be a host name or null, got 3"),
        ({"at_ms": 1, "brokers": [1, "2"]}, "brokers must be a list of broker ids or null"),
        ({"at_ms": 1, "quorum": "yes"}, "quorum must be true or false"),
        ({"at_ms": 1, "isr": {"partitions": 2, "in_sync": 3}}, "isr must be {partitions, in_sync}"),
        ({"at_ms": 1, "leader_host": "x"}, "unknown key 'leader_host'"),
        ({"leader": "x"}, "at_ms must be a whole number of ms >= 0, got nothing"),
    ],
)
def test_a_coordination_sample_is_held_to_its_model(sample, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        models.validated(models.CoordinationSample, sample, "coordination.jsonl:1")


def _plan(tmp_path, **configuration):
    return models.Plan(
        experiment="kill-dc",
        configuration=models.PlanConfiguration(
            stack="local", run_dir=str(tmp_path), hold_s=12.5, rate=50.0, keep_topic=True, **configuration
        ),
        settings=models.DrillSettings(acks="1", min_insync=2),
    )


def test_a_plan_is_written_once_and_chaos_toolkit_hands_its_configuration_on_typed(tmp_path):
    from chaoslib import merge_vars
    from chaoslib.configuration import load_configuration

    from dcdrill.chaos import experiment

    record = DrillRecord(tmp_path)
    record.write_plan(_plan(tmp_path, dc="dc-b", observers_avoid=["dc-c", "dc-b"]))
    with pytest.raises(ValueError, match="already holds a drill's plan"):
        record.write_plan(_plan(tmp_path))
    assert record.plan() == _plan(tmp_path, dc="dc-b", observers_avoid=["dc-c", "dc-b"])
    assert record.settings() == {"acks": "1", "min_insync": 2}
    # What `chaos run --var-file plan.json` gives the activities: the hold as given, not cut to
    # an int, and keep_topic a bool, not the text "true".
    config_vars, _ = merge_vars({}, [str(tmp_path / "plan.json")])
    got = load_configuration(experiment.compose("kill-dc")["configuration"], config_vars)
    assert (got["hold_s"], got["rate"], got["keep_topic"], got["dc"]) == (12.5, 50.0, True, "dc-b")
    # Chaos Toolkit takes from a var file only the keys the experiment's configuration has.
    assert got["observers_avoid"] == ["dc-c", "dc-b"]
    assert got["run_dir"] == str(tmp_path) and got["stack"] == "local"


@pytest.mark.parametrize(
    "change, said",
    [
        ({"hold_s": "30"}, "hold_s: Input should be a valid number"),
        ({"hold_s": 0}, "hold_s: Input should be greater than 0"),
        ({"rate": float("inf")}, "rate: Input should be a finite number"),
        ({"keep_topic": "true"}, "keep_topic: Input should be a valid boolean"),
        ({"retries": 3}, "unknown key 'configuration.retries'"),
    ],
)
def test_a_plan_that_no_drill_writes_is_refused_naming_the_key(tmp_path, change, said):
    data = _plan(tmp_path).as_json()
    data["configuration"].update(change)
    (tmp_path / "plan.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=re.escape(said)):
        DrillRecord(tmp_path).plan()

"""One pydantic model per file of a drill record (RECORD.md's table): what its writers write and
every reader accepts. `MODELS` maps each file RECORD.md lists to its model, or to the reason it
has none (a log, or Chaos Toolkit's own format); tests/record/test_models.py keeps the two equal.

Models are strict (no coercion: `1` is no string, `true` no number) and name what is wrong as
"file:line: key must be ..., got ..." (`validated`). The ledgers' models also give the
verifier's Spark schemas (spark/ledgers.py), so a JSON Lines or Parquet ledger is held to them."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator

from dcdrill.infra.constants import PROFILES

# The faults faults.jsonl names (RECORD.md); the losses of a whole DC have a prediction to check.
KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER = "kill-dc", "stop-dc", "isolate-dc", "kill-tiebreaker"
DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR = "degrade-link", "rolling-restart", "kill-mirror"
POWER_LOSS = "power-loss"  # kill-dc, and every write the DC's disks had not made durable is gone
FAULT_NAMES = (KILL_DC, STOP_DC, ISOLATE_DC, KILL_TIEBREAKER, DEGRADE_LINK, ROLLING_RESTART, KILL_MIRROR, POWER_LOSS)
MIRROR_EVENT_KINDS = ("start", "rebalance")
STATUSES = ("ok", "fail", "info")

INT32 = {"bits": 32}  # a ledger column Spark reads as an int, not a long

Whole = Annotated[int, Field(ge=0, description="a whole number >= 0")]
Positive = Annotated[int, Field(gt=0, description="a positive integer")]
Name = Annotated[str, Field(min_length=1, description="a non-empty string")]


class Row(BaseModel):
    """A line or document of the record: only its declared keys, of their declared types."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Document(Row):
    """A document others add to (topology.json, baseline.json): its checked keys, and more."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class Isr(Row):
    partitions: Whole
    in_sync: Whole

    @model_validator(mode="after")
    def _within(self):
        if self.in_sync > self.partitions:
            raise ValueError("in_sync must be <= partitions")
        return self


ISR = Field(None, description="{partitions, in_sync} with in_sync <= partitions, or null")


class Fault(Row):
    """faults.jsonl: a fault at injection (end_ms null), the line saying when it took effect
    (acted_ms), and its end line at heal."""

    fault: Literal[FAULT_NAMES] = Field(description=f"one of {', '.join(FAULT_NAMES)}")
    target: Name
    start_ms: Whole = Field(description="a whole number of ms >= 0")
    acted_ms: Whole | None = Field(None, description="null or a whole number >= start_ms")
    end_ms: Whole | None = Field(None, description="null or a whole number >= start_ms")
    isr_at_start: Isr | None = ISR

    @model_validator(mode="after")
    def _ends_after_start(self):
        for name in ("acted_ms", "end_ms"):
            v = getattr(self, name)
            if v is not None and v < self.start_ms:
                raise ValueError(f"{name} must be null or a whole number >= start_ms ({self.start_ms}), got {v}")
        return self


class ActiveFault(Fault):
    """chaos-state.json's `active`: a fault heal must still undo, as faults.jsonl's injection line
    gave it, and what its driver noted before each change (each driver's undo_problems holds
    `undo` to what that stack's own faults could have noted)."""

    end_ms: None = Field(None, description="null: an active fault has not ended")
    undo: dict[str, object] = Field(description="an object: the driver's notes")


KEPT_AS = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$"  # chaos/faults/recovery.kept_key's names


class FaultState(Row):
    """chaos-state.json: what is broken right now, replaced whole at each change; `kept_as` names
    the backend's copy of it (recovery.kept_key, or the drill's a recovered record keeps)."""

    active: list[ActiveFault] = Field(description="a list of active faults")
    kept_as: Annotated[str, Field(pattern=KEPT_AS)] | None = Field(None, description="a copy's name or null")


class Agent(Row):
    """agents.jsonl: a process the drill started."""

    name: str = Field(description="a string")
    pid: Positive
    host: str | None = Field(None, description="a host name or null")
    folder: str | None = Field(None, description="a folder name or null")
    cluster: str | None = Field(None, description="a cluster name or null")
    started_ms: Positive

    @model_validator(mode="after")
    def _folder_on_a_host(self):
        if self.folder is not None and self.host is None:
            raise ValueError(f"an agent with a folder names its host, got {self.host!r}")
        return self


class Collected(Row):
    """collected.jsonl: a host's folder came back into the record (`lost`: it was gone)."""

    host: str = Field(description="a string")
    folder: str = Field(description="a string")
    at_ms: Whole = Field(description="a whole number")
    lost: bool = Field(False, description="true or false")


class Clock(Row):
    """clocks.jsonl: a host's clock minus the control's, either sign."""

    name: str = Field(description="a string")
    host: str = Field(description="a string")
    at: Literal["start", "end"] = Field(description="start or end")
    offset_ms: int = Field(description="an integer")
    rtt_ms: Whole = Field(description="a whole number")
    at_ms: Whole = Field(description="a whole number")


class Failover(Row):
    """failovers.jsonl: a consumer group moved to another cluster's copy of the topic."""

    group: str = Field(description="a string")
    from_: str = Field(alias="from", description="a string")
    to: str = Field(description="a string")
    at_ms: int = Field(description="an integer")
    topic: str | None = Field(None, description="a topic name")
    offsets: dict[str, int] | None = Field(None, description="offsets by partition")
    consumers: list[str] | int | None = Field(None, description="the consumers started")


class MirrorWait(Row):
    """mirror-waits.jsonl: a flow's copy caught up with its source."""

    flow: str = Field(description="a string")
    began_ms: Whole = Field(description="an integer")
    caught_up_ms: Whole = Field(description="an integer")


class MirrorEvent(Row):
    """mirror-events.jsonl: MirrorMaker 2 started or rebalanced on a host."""

    host: str = Field(description="a string")
    flows: list[str] = Field(description="a list of flow names")
    event: Literal[MIRROR_EVENT_KINDS] = Field(description=f"one of {', '.join(MIRROR_EVENT_KINDS)}")
    at_ms: Whole = Field(description="an integer")


Count = Annotated[int, Field(ge=0, description="a whole number or null")]


class CoordinationSample(Row):
    """coordination.jsonl: one look at the quorum and the live brokers (infra/observe/host_probes.py)."""

    at_ms: Whole = Field(description="a whole number of ms >= 0")
    asked_ms: Whole | None = Field(None, description="a whole number of ms >= 0")
    leader: str | None = Field(None, description="a host name or null")
    epoch: Count | None = Field(None, description="a whole number or null")
    serving: Count | None = Field(None, description="a whole number or null")
    total: Count | None = Field(None, description="a whole number or null")
    quorum: bool = Field(True, description="true or false")
    answered: bool = Field(True, description="true or false")
    error: str | None = Field(None, description="text or null")
    brokers: list[Whole] | None = Field(None, description="a list of broker ids or null")
    controller: Annotated[int, Field(ge=-1)] | None = Field(None, description="a whole number or null")
    isr: Isr | None = ISR


class AuditEnd(Row):
    rows: Whole = Field(description="a whole number")
    bytes: Whole = Field(description="a whole number")


class AuditEnds(RootModel[dict[str, AuditEnd]]):
    """audit-end.json: each audit ledger file's rows and bytes when its audit finished."""

    model_config = ConfigDict(strict=True, frozen=True)
    entry: ClassVar[str] = "{rows, bytes} as whole numbers >= 0"


class Prediction(Document):
    quorum_survives: bool
    writable: bool
    acked_loss_possible: bool


class Flow(Document):
    source: str
    target: str


class Topology(Document):
    """topology.json: the keys the verdict and the report read (the rest: RECORD.md)."""

    stack: str | None = Field(None, description="str")
    profile: Literal[PROFILES] = Field(description=f"one of {', '.join(PROFILES)}: without it there is no promise")
    unclean_leader_election: bool = Field(description="bool")
    acks: str | None = Field(None, description="str")
    replication_factor: Positive | None = None
    min_insync_replicas: Positive | None = None
    datacenters: list | None = Field(None, description="list")
    predictions: dict[str, Prediction] | None = Field(
        None, description="an object of DCs, each with quorum_survives, writable and acked_loss_possible as true/false"
    )
    mirrors: dict[str, Flow] | None = Field(None, description="an object of flows, each with its source and target")
    clusters: dict[str, dict] | None = Field(None, description="an object keyed by cluster name")

    @model_validator(mode="after")
    def _flows_join_known_clusters(self):
        clusters = self.clusters or {}
        for flow, m in (self.mirrors or {}).items():
            for key in ("source", "target"):
                if getattr(m, key) not in clusters:
                    raise ValueError(
                        f"mirrors.{flow}.{key}: cluster {getattr(m, key)!r} is not one of the record's "
                        f"clusters ({', '.join(clusters) or 'none'})"
                    )
        return self


Number = Annotated[float, Field(ge=0)]


class Baseline(Document):
    """baseline.json: the settled produce latency before the fault."""

    settled: bool = Field(description="true or false")
    p50_ms: Number | None = Field(None, description="a number >= 0 or null")
    p99_ms: Number | None = Field(None, description="a number >= 0 or null")
    machine_idle_pct: Annotated[float, Field(ge=0, le=100)] | None = Field(
        None, description="a number from 0 to 100 or null"
    )
    cause: str | None = Field(None, description="text or null")


# -- the ledgers: also the verifier's Spark schemas (spark/ledgers.py) -------------------------
class Produced(Row):
    """produced/<producer>.jsonl: one sent record's final outcome."""

    producer_id: str
    seq: Whole
    topic: str
    partition: Annotated[Whole, Field(json_schema_extra=INT32)]
    key: str | None = None
    send_ms: Whole
    status: Literal[STATUSES]
    ack_ms: Whole | None = None
    offset: Whole | None = None
    error: str | None = None
    dc: str | None = None
    cluster: str | None = None  # replicated stacks: the cluster it was sent to

    @model_validator(mode="after")
    def _offset_iff_ok(self):
        if (self.offset is not None) != (self.status == "ok"):
            raise ValueError(
                f"offset must be set if and only if status is ok (status {self.status!r}, offset {self.offset!r})"
            )
        return self


class Consumed(Row):
    """consumed/<consumer>.jsonl: one delivery to a group member."""

    consumer_id: str | None = None
    group: str | None = None
    topic: str
    partition: Annotated[Whole, Field(json_schema_extra=INT32)]
    offset: Whole
    producer_id: str | None = None
    seq: Whole | None = None
    consume_ms: int | None = None
    dc: str | None = None
    cluster: str | None = None


class Transaction(Row):
    """transactions/<producer>.jsonl: one transaction of a transactional producer, as it ended.
    Its records are the producer's seqs first_seq .. first_seq + records - 1; each one's row in
    the produced ledger has the outcome's status (committed: the client's answer; aborted: fail;
    unknown: info)."""

    producer_id: str
    txn: Whole
    first_seq: Whole
    records: Annotated[int, Field(gt=0)]
    outcome: Literal["committed", "aborted", "unknown"]
    meant: Literal["commit", "abort"]  # what the producer asked for
    error: str | None = None
    begin_ms: Whole
    end_ms: Whole
    dc: str | None = None
    cluster: str | None = None


class Audited(Row):
    """audit/audit.jsonl (or audit/<cluster>.jsonl): one record in the final log."""

    topic: str
    partition: Annotated[Whole, Field(json_schema_extra=INT32)]
    offset: Whole
    producer_id: str | None = None
    seq: Whole | None = None
    timestamp_ms: int | None = None
    cluster: str | None = None  # replicated stacks: the cluster whose log it is
    origin: str | None = None  # and the cluster whose producer wrote it


LEDGER_MODELS = {"produced": Produced, "consumed": Consumed, "audit": Audited}
# A replicated stack's columns: which cluster a row was written to or read from, and where the
# record began. The verifier reads them only where it picks one cluster's rows out of others'.
ROUTING_COLUMNS = ("cluster", "origin")


# -- intent logs --------------------------------------------------------------------------------
class IntentHeader(Row):
    """intents/<producer>.jsonl's first line: the keys a producer cycles through, and their partitions."""

    producer_id: str
    topic: str
    keys: list[str] = Field(min_length=1)
    partitions: list[Whole]
    dc: str | None = None
    cluster: str | None = None
    client: str | None = None  # confluent | kafka-python | java
    # the producer client's effective settings, as it resolved them (its version among them)
    client_settings: dict[str, str] | None = None

    @model_validator(mode="after")
    def _a_partition_a_key(self):
        if len(self.partitions) != len(self.keys):
            raise ValueError(f"{len(self.keys)} keys but {len(self.partitions)} partitions")
        return self


class Reserved(Row):
    reserved: Whole
    at_ms: Whole


class Sent(Row):
    sent: Whole


# -- plan.json: the drill as `dcdrill drill` resolved it ------------------------------------------
MAX_HOLD_S = 3000.0  # a fault held longer is a typo, not a drill
MAX_RATE = 1_000_000.0  # records/s per producer: beyond any client's reach, so a typo
Seconds = Annotated[float, Field(gt=0, le=MAX_HOLD_S, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class DrillSettings(Row):
    """The drill's own settings, where they differ from the stack's (infra/topology.SETTINGS)."""

    profile: Literal[PROFILES] | None = None
    acks: Literal["0", "1", "all"] | None = None
    factor: Positive | None = None
    min_insync: Positive | None = None
    unclean_leader_election: bool | None = None
    flush_each_write: bool | None = None


PRODUCER_CLIENTS = ("confluent", "kafka-python", "java")  # validation/workload.CLIENTS (a test holds them equal)


class PlanConfiguration(Row):
    """The experiment's configuration keys the drill sets, typed as the activities take them."""

    stack: Name
    run_dir: Name
    hold_s: Seconds
    rate: Annotated[float, Field(gt=0, le=MAX_RATE, allow_inf_nan=False)]
    keep_topic: bool
    client: Literal[PRODUCER_CLIENTS] = "confluent"  # the workload's producer client
    idempotence: Literal["on", "off", "default"] = "default"  # default: the client's (workload.CLIENT_DEFAULTS)
    transaction_size: Whole = 0  # records per transaction (the java client); 0: no transactions
    abort_fraction: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    dc: str | None = None
    other_dc: str | None = None
    failover_to: str | None = None
    # The DCs the observers stay out of, the first the most: those the experiment cuts, then `dc`.
    observers_avoid: list[Name] = []
    latency_ms: Share | None = None  # slow-link's shape
    jitter_ms: Share | None = None
    loss_pct: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None


class Plan(Row):
    """plan.json: written once by `dcdrill drill` before the experiment, and given to `chaos run`
    as its var file, so the activities get its `configuration` typed, never as re-parsed text."""

    experiment: Name
    configuration: PlanConfiguration
    settings: DrillSettings = DrillSettings()

    def as_json(self) -> dict:
        return self.model_dump(mode="json", exclude_none=True)


NO_MODEL_LOG = "free text, for people: nothing reads it back"
# Every file RECORD.md's table lists (as it spells it): its model, or why it has none.
MODELS: dict[str, type[BaseModel] | str] = {
    "plan.json": Plan,
    "topology.json": Topology,
    "faults.jsonl": Fault,
    "produced/<producer>.jsonl": Produced,
    "intents/<producer>.jsonl": "a first line IntentHeader, then Reserved lines, then at most one Sent",
    "consumed/<consumer>.jsonl": Consumed,
    "transactions/<producer>.jsonl": Transaction,
    "audit/audit.jsonl": Audited,
    "audit/<cluster>.jsonl": Audited,
    "mirror-waits.jsonl": MirrorWait,
    "mirror-events.jsonl": MirrorEvent,
    "failovers.jsonl": Failover,
    "events/<consumer>.jsonl": "the consumers' own diary for people: no verdict reads it",
    "experiment.json": "Chaos Toolkit's experiment format (its own validation runs before the drill)",
    "journal.json": "Chaos Toolkit's journal format: the record reads only its status and run",
    "chaos.log": NO_MODEL_LOG,
    "chaos-state.json": FaultState,
    "agents.jsonl": Agent,
    "collected.jsonl": Collected,
    "clocks.jsonl": Clock,
    "status/<kind>-<name>.json": "a live progress snapshot the drill reads while it runs; the verifier does not",
    "logs/<name>.log": NO_MODEL_LOG,
    "logs/<name>.access.log": NO_MODEL_LOG,
    "logs/<host>/<folder>-<file>": NO_MODEL_LOG,
    "convergence.json": "a failed wait's causes, for people and the stopped drill's page",
    "audit-end.json": AuditEnds,
    "phases.json": "seconds per phase, for people and the summary",
    "baseline.json": Baseline,
    "coordination.jsonl": CoordinationSample,
    "report/summary.json": "the verifier's output, not its input",
    "index.html": "the verifier's output, not its input",
    "junit.xml": "the verifier's output, not its input",
}


def parsed(model: type[BaseModel], data, where: str):
    """`data` (one parsed line or document) as a `model`; a ValueError naming `where` and the
    first key that is wrong otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe(exc, model, data, where)) from None


def validated(model: type[BaseModel], data, where: str):
    """`data` itself, keys as given, once `model` holds it (parsed)."""
    parsed(model, data, where)
    return data


def conforms(model: type[BaseModel], data) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def describe(exc: ValidationError, model: type[BaseModel], data, where: str) -> str:
    error = exc.errors(include_url=False)[0]
    loc = [str(part) for part in error["loc"]]
    if not loc:  # the whole line, or a check across its keys
        if error["type"] in ("model_type", "dict_type"):
            return f"{where}: must be a JSON object, got {type(data).__name__}"
        return f"{where}: {error['msg'].removeprefix('Value error, ')}"
    if issubclass(model, RootModel):  # a document keyed by name: the entry is what is wrong
        return f"{where}: {loc[0]} must be {model.entry}, got {data.get(loc[0])!r}"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key {'.'.join(loc)!r}"
    field = _fields(model).get(loc[0])
    value = data.get(loc[0]) if isinstance(data, dict) else None
    if field is not None and field.description and len(loc) > 1:  # a key inside the value: which, and why
        return f"{where}: {loc[0]} must be {field.description} ({'.'.join(loc[1:])}: {error['msg'].lower()})"
    if field is not None and field.description:
        got = "nothing" if error["type"] == "missing" else repr(value)
        return f"{where}: {loc[0]} must be {field.description}, got {got}"
    return f"{where}: {'.'.join(loc)}: {error['msg']}, got {error['input']!r}"


def _fields(model):
    fields = getattr(model, "model_fields", {})
    return {f.alias or name: f for name, f in fields.items()}

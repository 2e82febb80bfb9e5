"""Starting, watching and stopping the workload processes: the Python API the chaos experiment
uses and `dcdrill workload` wraps. Each producer / consumer runs on a client host of the
inventory, i.e. in a DC: lab hosts through their namespace, elsewhere as local processes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from dcdrill.infra.constants import ACKS, WORKLOAD_GROUP, child_env, now_ms
from dcdrill.infra.inventory import Inventory, InventoryHost
from dcdrill.record import DrillRecord

# A workload process's deadline: a drill's workload runs until stop_workload (no duration), so an
# hour, well past any drill's hold; a timed one gets its duration and this grace to drain.
AGENT_LIFETIME_S, AGENT_GRACE_S = 3600.0, 120.0
# Started by root, each workload process drops to a uid of its own (validation/clients.py
# become_agent), in one group that may write the record's ledger folders. No passwd entries.
AGENT_GID = 300_000
_AGENT_UID_OFFSET = {"p": 1, "c": 10_001, "a": 20_001}  # producers, consumers, audits


def agent_uid(name: str) -> int:
    """p3 -> its own uid, c1 -> another; an audit ("a") one more range on."""
    return AGENT_GID + _AGENT_UID_OFFSET[name[0]] + (int(name[1:]) if name[1:].isdigit() else 0)


@dataclass
class WorkloadSpec:
    topic: str = "dcdrill"
    producers: int = 3
    consumers: int = 2
    rate: float | None = 200.0  # records/s per producer; None = as fast as possible
    duration_s: float | None = 60.0
    count: int | None = None
    record_size: int = 100
    acks: str = "all"
    idempotence: bool = False
    retries: int = 0
    delivery_timeout_ms: int = 30000
    request_timeout_ms: int = 10000
    linger_ms: int = 5
    batch_size: int = 16384
    max_in_flight: int = 5
    keys: int = 1000
    group: str = WORKLOAD_GROUP
    bootstrap_timeout_ms: int = 10000
    hosts: list[str] = field(default_factory=list)  # client hosts to place processes on (round-robin)
    client: str = "confluent"  # producer backend: confluent | kafka-python (validation/backends.py)
    # A consumer's fetch returns at fetch_min_bytes or after fetch_max_wait_ms. Each return costs
    # a broker request, a poll and a commit: returning on the first byte, two consumers cost the
    # lab's brokers about 20 % of a core at the drill's 600 records/s (tests/benchmarks/quiet_lab.py).
    # consume_ms is later by at most the wait; no produce latency depends on it.
    fetch_min_bytes: int = 64 * 1024
    fetch_max_wait_ms: int = 200

    def validate(self, inventory: Inventory) -> None:
        for name in ("rate", "duration_s", "count", "record_size", "producers"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ValueError(f"{name} must be > 0, got {v}")
        if self.consumers < 0:
            raise ValueError(f"consumers must be >= 0, got {self.consumers}")
        if self.client not in ("kafka-python", "confluent"):
            raise ValueError(f"client must be kafka-python or confluent, got {self.client!r}")
        if self.acks not in ACKS:
            raise ValueError(f"acks must be 0, 1 or all, got {self.acks!r}")
        valid = inventory.clients
        names, dcs = sorted(h.name for h in valid), sorted({h.dc for h in valid})
        for h in self.hosts:
            if h not in names and h not in dcs:
                raise ValueError(f"unknown client host or DC {h!r}; valid hosts: {', '.join(names)}; "
                                 f"valid DCs: {', '.join(dcs)}")


def placements(inventory: Inventory, wanted: list[str], n: int) -> list[InventoryHost]:
    hosts = inventory.clients
    chosen = []
    for w in wanted or [h.name for h in hosts]:
        chosen += [h for h in hosts if w in (h.name, h.dc)]
    if not chosen:
        raise ValueError("the inventory has no client hosts to run the workload on")
    return [chosen[i % len(chosen)] for i in range(n)]


def _argv(module: str, host: InventoryHost | None, cfg: dict, name: str) -> list[str]:
    """The process's command: inside the client host's namespace on the lab, here elsewhere.
    Started by root, it runs as `name`'s own uid (become_agent)."""
    if os.geteuid() == 0:
        cfg = {**cfg, "agent_uid": agent_uid(name), "agent_gid": AGENT_GID}
    base = [sys.executable, "-m", module, "--config", json.dumps(cfg)]
    if host and host.netns:
        return ["ip", "netns", "exec", host.netns, *base]
    return base


def _password(inventory: Inventory) -> str:
    """What a process reads on its stdin: its SASL user's password (infra.inventory.process_security)."""
    return (inventory.client_security().get("sasl_plain_password") or "") + "\n"


def _open_record(record: DrillRecord) -> None:
    if os.geteuid() == 0:
        record.open_to_agents(AGENT_GID)


def _process_config(run_dir: Path, inventory: Inventory, spec: WorkloadSpec, **extra) -> dict:
    """What a workload process is told. It watches `parent_pid` (this process, which starts it)
    and ends by itself when that dies or `deadline_ms` passes: a crashed drill leaves no producer."""
    lifetime_s = spec.duration_s + AGENT_GRACE_S if spec.duration_s else AGENT_LIFETIME_S
    return {**asdict(spec), "run_dir": str(Path(run_dir).resolve()), "bootstrap": inventory.bootstrap_servers(),
            "security": inventory.process_security(), "parent_pid": os.getpid(),
            "deadline_ms": now_ms() + int(lifetime_s * 1000), **extra}


def _process_env() -> dict:
    return child_env()


def ensure_topic(inventory: Inventory, spec: WorkloadSpec, partitions: int = 6, create: bool = True,
                 replication=None, fresh: bool = False) -> None:
    """Create the topic if missing. `replication` (infra.topology.Replication): its factor,
    min.insync.replicas and unclean election as the topic's own settings (a drill's); without it,
    the cluster's (the inventory's). `fresh`: the topic must not exist yet (a drill's topic holds
    that drill's records only: older ones would read as phantoms, and its settings as its own)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=inventory.bootstrap_servers(), request_timeout_ms=spec.bootstrap_timeout_ms,
                             bootstrap_timeout_ms=spec.bootstrap_timeout_ms, **inventory.client_security(admin=True))
    try:
        if spec.topic not in admin.list_topics():
            if not create:
                raise ValueError(f"topic {spec.topic!r} does not exist (pass --create-topic to create it)")
            av = inventory.vars
            factor, configs = av["kafka_replication_factor"], {"min.insync.replicas": str(av["kafka_min_insync_replicas"])}
            if replication is not None:
                factor, configs = replication.factor, {
                    "min.insync.replicas": str(replication.min_insync),
                    "unclean.leader.election.enable": str(replication.unclean_leader_election).lower()}
            try:
                admin.create_topics([NewTopic(spec.topic, partitions, factor, topic_configs=configs)])
                return
            except TopicAlreadyExistsError:  # the broker answering list_topics had not heard of it yet:
                pass                         # the controller's word is the one that counts
        if fresh:
            raise ValueError(f"topic {spec.topic!r} exists already: an earlier drill wrote into the same drill "
                             "record folder; give the drill a new one")
    finally:
        admin.close()


def delete_topic(inventory: Inventory, topic: str, timeout_ms: int = 30_000) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=inventory.bootstrap_servers(), request_timeout_ms=timeout_ms,
                             **inventory.client_security(admin=True))
    try:
        admin.delete_topics([topic], timeout_ms=timeout_ms)
    finally:
        admin.close()


class Workload:
    """Producers and consumers as child processes; `stop()` lets them settle what is in flight."""

    def __init__(self, run_dir: Path, inventory: Inventory, spec: WorkloadSpec, cluster: str | None = None):
        """`cluster`: on a replicated stack, the cluster `inventory` is (its name goes in every row)."""
        spec.validate(inventory)
        self.run_dir, self.inventory, self.spec = Path(run_dir), inventory, spec
        self.cluster = cluster
        self.record = DrillRecord(run_dir)
        _open_record(self.record)  # before any of its processes starts
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.recovered: dict[str, int] = {}  # producer -> info rows written from its intent log

    def _cfg(self, **extra) -> dict:
        where = {"cluster": self.cluster} if self.cluster else {}
        return _process_config(self.run_dir, self.inventory, self.spec, **where, **extra)

    def add_producers(self, inventory: Inventory, cluster: str) -> list[str]:
        """As many producers again, writing to another cluster of a replicated stack (active-active:
        each cluster takes writes), numbered on from this workload's."""
        env, first = _process_env(), sum(n.startswith("p") for n, _ in self.procs) + 1
        started = []
        for i, host in enumerate(placements(inventory, [], self.spec.producers)):
            pid = f"p{first + i}"
            cfg = _process_config(self.run_dir, inventory, self.spec, producer_id=pid, dc=host.dc, host=host.name,
                                  cluster=cluster)
            self._spawn(pid, host, _argv("dcdrill.validation.producer", host, cfg, pid), env, inventory)
            started.append(pid)
        return started

    def fail_over(self, inventory: Inventory, topic: str, cluster: str, timeout_s: float = 30.0) -> list[str]:
        """Move the consumer group to another cluster: stop this workload's consumers (each commits
        what it recorded, if its cluster still answers), then start as many on `cluster`'s client
        hosts reading `topic` (MM2's copy) as the same group, from the offsets MM2 translated, with
        auto.offset.reset=none: a partition without one is an error, never a silent skip."""
        running = [(n, p) for n, p in self.procs if n.startswith("c") and p.poll() is None]
        for _, p in running:
            p.send_signal(signal.SIGTERM)
        for _, p in running:
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        env, first = _process_env(), sum(n.startswith("c") for n, _ in self.procs) + 1
        started = []
        for i, host in enumerate(placements(inventory, [], len(running) or self.spec.consumers)):
            cid = f"c{first + i}"
            cfg = _process_config(self.run_dir, inventory, replace(self.spec, topic=topic), consumer_id=cid,
                                  dc=host.dc, host=host.name, cluster=cluster, auto_offset_reset="none")
            self._spawn(cid, host, _argv("dcdrill.validation.consumer", host, cfg, cid), env, inventory)
            started.append(cid)
        return started

    def start(self) -> "Workload":
        env, inv = _process_env(), self.inventory
        for i, host in enumerate(placements(inv, self.spec.hosts, self.spec.consumers)):
            cid = f"c{i + 1}"
            cfg = self._cfg(consumer_id=cid, dc=host.dc, host=host.name)
            self._spawn(cid, host, _argv("dcdrill.validation.consumer", host, cfg, cid), env, inv)
        for i, host in enumerate(placements(inv, self.spec.hosts, self.spec.producers)):
            pid = f"p{i + 1}"
            cfg = self._cfg(producer_id=pid, dc=host.dc, host=host.name)
            self._spawn(pid, host, _argv("dcdrill.validation.producer", host, cfg, pid), env, inv)
        return self

    def _spawn(self, name: str, host: InventoryHost, argv: list[str], env: dict, inventory: Inventory) -> None:
        path = self.record.log(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.PIPE,
                                start_new_session=True)
        proc.stdin.write(_password(inventory).encode())
        proc.stdin.close()
        self.procs.append((name, proc))
        self.record.note_agent(name, proc.pid, host.name, host.netns)

    def producers_running(self) -> bool:
        return any(p.poll() is None for n, p in self.procs if n.startswith("p"))

    def status(self) -> dict:
        return aggregate(self.record.statuses())

    def wait_producers(self, progress: bool = True, timeout_s: float | None = None) -> None:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        started = time.monotonic()
        while self.producers_running() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.5)
            if progress and sys.stderr.isatty():  # a live line on a terminal, quiet otherwise
                print("\r" + progress_line(self.status(), time.monotonic() - started), end="", file=sys.stderr)
        if progress and sys.stderr.isatty():
            print(file=sys.stderr)

    def drain_consumers(self, idle_s: float = 5.0, timeout_s: float = 90.0) -> None:
        """After the producers stopped: let consumers catch up until they deliver nothing new for
        idle_s (they poll every 0.5 s), or timeout_s passes. Not "delivered >= acknowledged": the
        log also holds failed and indeterminate sends that were written, which consumers deliver
        too, so that count is reached before the last acknowledged records arrive (measured: a
        drill ended 0.5 s after its last ack with 5 acknowledged records not yet delivered)."""
        deadline = time.monotonic() + timeout_s
        last, last_change = -1, time.monotonic()
        while time.monotonic() < deadline:
            st = self.status()
            if time.monotonic() - last_change > idle_s:
                return
            if st["delivered"] != last:
                last, last_change = st["delivered"], time.monotonic()
            time.sleep(0.5)

    def stop(self, timeout_s: float = 60.0) -> dict[str, int]:
        """SIGTERM the producers, let the consumers drain, then SIGTERM them; returns exit codes."""
        for group in ("p", "c"):
            if group == "c" and any(n.startswith("c") for n, _ in self.procs):
                self.drain_consumers()
            for name, p in self.procs:
                if name.startswith(group) and p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            for name, p in self.procs:
                if name.startswith(group):
                    try:
                        p.wait(max(0.1, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
            if group == "p":  # a producer that died mid-send leaves reserved seqs without a row
                for name, _ in self.procs:
                    if name.startswith("p"):
                        self.recovered[name] = self.record.recover_in_flight(name)
        return {name: p.returncode for name, p in self.procs}


def aggregate(snaps: list[dict]) -> dict:
    out = {"sent": 0, "ok": 0, "fail": 0, "info": 0, "in_flight": 0, "delivered": 0, "by_dc": {}}
    for s in snaps:
        for k in ("sent", "ok", "fail", "info", "in_flight", "delivered"):
            out[k] += s.get(k, 0)
        if "producer_id" in s:
            d = out["by_dc"].setdefault(s.get("dc") or "-", {"ok": 0, "fail": 0, "info": 0})
            for k in ("ok", "fail", "info"):
                d[k] += s.get(k, 0)
    return out


def progress_line(st: dict, elapsed_s: float) -> str:
    rate = st["ok"] / elapsed_s if elapsed_s > 0 else 0
    dcs = " ".join(f"{dc}:{v['ok']}/{v['fail']}/{v['info']}" for dc, v in sorted(st["by_dc"].items()))
    return (f"[{elapsed_s:5.0f}s] {rate:7.0f} acked/s  acked {st['ok']}  failed {st['fail']}  "
            f"indeterminate {st['info']}  in flight {st['in_flight']}  consumed {st['delivered']}  [{dcs}]   ")


def audit(run_dir: Path, inventory: Inventory, spec: WorkloadSpec, timeout_s: float = 120.0,
          cluster: str | None = None, topics: list[str] | None = None) -> None:
    """Read the whole log into audit/ (from a client host, like the other clients). On a replicated
    stack, one cluster's `topics` into audit/<cluster>.jsonl."""
    hosts = placements(inventory, spec.hosts, 1)
    extra = {"cluster": cluster, "topics": topics} if cluster else {}
    cfg = _process_config(run_dir, inventory, spec, audit_timeout_s=timeout_s, **extra)
    record = DrillRecord(run_dir)
    _open_record(record)
    res = subprocess.run(_argv("dcdrill.validation.audit", hosts[0], cfg, "a"), env=_process_env(),
                         input=_password(inventory), capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"audit exited {res.returncode}")
    # Only a whole audit is marked (DrillRecord.incomplete): its last stdout line, {file: rows}.
    for file, rows in json.loads(res.stdout.strip().splitlines()[-1]).items():
        record.mark_audit_end(file, rows)

"""Starting, watching and stopping the workload processes: the Python API the chaos experiment
uses and `dcdrill workload` wraps. Each producer / consumer / audit runs on a client host of the
inventory, inside a DC, started through host access (infra/observe/hostaccess.py) as AWS allows it: its
files stay on that host's disk until `collect` brings them into the record.
"""

from __future__ import annotations

import itertools
import json
import math
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from dcdrill.infra.constants import ACKS, WORKLOAD_GROUP, now_ms
from dcdrill.infra.inventory import Inventory, InventoryHost
from dcdrill.infra.observe import hostaccess
from dcdrill.record import DrillRecord
from dcdrill.record.contents import is_agent_file
from dcdrill.validation import host_process, process_config

# A workload process's deadline: a drill's workload runs until stop_workload (no duration), so an
# hour, well past any drill's hold; a timed one gets its duration and this grace to drain.
AGENT_LIFETIME_S, AGENT_GRACE_S = 3600.0, 120.0
ACKS_KEPT = 100_000  # a producer's latest acknowledgements the control keeps (minutes at a drill's rate)
DEFAULT_DATA_ROOT = "/var/lib/dcdrill"  # a host's own disk, where its inventory does not say
RUNNER = "dcdrill.validation.host_process"  # what each workload process runs under on its host
CLOCK_SAMPLES = 3  # round trips per clock reading; the quickest gives the offset
CLOCK_WAIT_S = 15.0  # a round trip's longest wait: the first waits for the runner's start on its host
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
    # These settings, None: the client's own default (the java client's, CLIENT_DEFAULTS); the
    # confluent and kafka-python clients are always given them (the drill's settings, below).
    idempotence: bool | None = False
    retries: int | None = 0
    delivery_timeout_ms: int | None = 30000
    request_timeout_ms: int | None = 10000
    linger_ms: int | None = 5
    # None: the client's own default. The two mean different things by it: kafka-python (as Java)
    # fills a batch of this many bytes per partition and sends many partitions' batches in one
    # request; librdkafka sends one partition's batch per request, so its 1,000,000 bytes is
    # what keeps a fast producer's requests as full as Java's (16,384 there costs records/s:
    # docs/benchmarks.md, workload_vs_perftest.py). At the drill's rates linger_ms
    # closes every batch long before either size.
    batch_size: int | None = None
    max_in_flight: int | None = 5
    keys: int = 1000
    group: str = WORKLOAD_GROUP
    bootstrap_timeout_ms: int = 10000
    hosts: list[str] = field(default_factory=list)  # client hosts to place processes on (round-robin)
    client: str = "confluent"  # producer backend: confluent | kafka-python | java (validation/backends.py)
    # A consumer's fetch returns at fetch_min_bytes or after fetch_max_wait_ms. Each return costs
    # a broker request, a poll and a commit: returning on the first byte costs the brokers CPU
    # the drill's faults need (docs/benchmarks.md, quiet_lab.py).
    # consume_ms is later by at most the wait; no produce latency depends on it.
    fetch_min_bytes: int = 64 * 1024
    fetch_max_wait_ms: int = 200
    # Transactions (the java client): each producer writes this many records per transaction and
    # aborts this share of them on purpose; consumers and the audit then read committed records only.
    transaction_size: int | None = None
    abort_fraction: float = 0.0

    @classmethod
    def for_client(cls, client: str = "confluent", **given) -> WorkloadSpec:
        """A spec for `client`: the settings not given are its defaults (CLIENT_DEFAULTS)."""
        return cls(client=client, **{**CLIENT_DEFAULTS.get(client, {}), **given})

    def validate(self, inventory: Inventory) -> None:
        self.check()
        valid = inventory.clients
        names, dcs = sorted(h.name for h in valid), sorted({h.dc for h in valid})
        for h in self.hosts:
            if h not in names and h not in dcs:
                raise ValueError(
                    f"unknown client host or DC {h!r}; valid hosts: {', '.join(names)}; valid DCs: {', '.join(dcs)}"
                )

    def check(self) -> None:
        """What needs no inventory: the numbers, the client and acks."""
        for name in ("rate", "duration_s", "count", "record_size", "producers", "batch_size"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v}")
        if self.consumers < 0:
            raise ValueError(f"consumers must be >= 0, got {self.consumers}")
        if self.client not in CLIENTS:
            raise ValueError(f"client must be one of {', '.join(CLIENTS)}, got {self.client!r}")
        if self.transaction_size is not None and not (self.transaction_size > 0 and self.client == "java"):
            raise ValueError(
                f"transactions need a size > 0 and the java client (the {self.client} client's are not "
                f"driven by the workload), got {self.transaction_size} on {self.client}"
            )
        if not (0 <= self.abort_fraction < 1) or (self.abort_fraction and not self.transaction_size):
            raise ValueError(f"abort_fraction must be in [0, 1) and needs transactions, got {self.abort_fraction}")
        if self.client != "java":
            unset = [name for name in CLIENT_DEFAULTS["java"] if getattr(self, name) is None]
            if unset:
                raise ValueError(f"the {self.client} client needs {', '.join(unset)} set (only java has defaults here)")
        if self.acks not in ACKS:
            raise ValueError(f"acks must be 0, 1 or all, got {self.acks!r}")


CLIENTS = ("confluent", "kafka-python", "java")
DEFAULT_ABORT_FRACTION = 0.1  # with transactions and no --abort-fraction: the share aborted on purpose
# The java client runs with its own defaults unless a flag says otherwise (idempotent, acks=all
# where the stack says so, retries without end, a two-minute delivery timeout): what the Java
# applications a platform team runs do. The other two keep the drill's settings above.
CLIENT_DEFAULTS = {
    "java": dict.fromkeys(
        ("idempotence", "retries", "delivery_timeout_ms", "request_timeout_ms", "linger_ms", "max_in_flight")
    )
}


def placements(inventory: Inventory, wanted: list[str], n: int) -> list[InventoryHost]:
    hosts = inventory.clients
    chosen = []
    for w in wanted or [h.name for h in hosts]:
        chosen += [h for h in hosts if w in (h.name, h.dc)]
    if not chosen:
        raise ValueError("the inventory has no client hosts to run the workload on")
    return [chosen[i % len(chosen)] for i in range(n)]


def _password(inventory: Inventory) -> str:
    """What a process reads on its stdin: its SASL user's password (infra.inventory.process_security)."""
    return inventory.client_security().get("sasl_plain_password") or ""


def _process_config(inventory: Inventory, spec: WorkloadSpec, name: str, **extra) -> dict:
    """What a workload process is told. The host's runner (validation/host_process.py) adds its
    record folder and itself as `parent_pid`: the process ends by itself when that dies or
    `deadline_ms` passes, so a crashed drill leaves no producer. It drops to `name`'s own uid."""
    lifetime_s = spec.duration_s + AGENT_GRACE_S if spec.duration_s else AGENT_LIFETIME_S
    security = dict(inventory.process_security())
    if security.get("ssl_cafile"):  # the control's copy of the CA: the host is told the CA itself
        security["ssl_cadata"] = Path(security.pop("ssl_cafile")).read_text()
    config = {
        **asdict(spec),
        "bootstrap": inventory.bootstrap_servers(),
        "security": security,
        "deadline_ms": now_ms() + int(lifetime_s * 1000),
        "agent_uid": agent_uid(name),
        "agent_gid": AGENT_GID,
        "kafka_libs": inventory.vars.get("kafka_libs_dir"),
        **extra,
    }
    return process_config.checked(config, f"{name}'s process config")


def host_folder(host: InventoryHost, record: DrillRecord) -> str:
    """Where a drill's processes on `host` keep their files: its own disk, until fetched."""
    return f"{host.vars.get('data_root', DEFAULT_DATA_ROOT)}/agents/{record.agent_key}"


def collect_folder(record: DrillRecord, inventory: Inventory, host: InventoryHost, folder: str) -> None:
    """The transfer step for one host's folder of the drill: into the record, removed on the
    host, noted in collected.jsonl."""
    hostaccess.fetch(inventory, host, folder, record.path, is_agent_file)
    record.note_collected(host.name, folder)


class HostProcess:
    """One workload process on its client host, started through host access: poll and wait as a
    Popen's; `stop()` closes its stdin, which the runner on the host reads as SIGTERM to the
    process; `kill()` ends the host session, which the runner reads the same way. No signal
    crosses to the host. Its status lines land in the local record's status/ as they come, so
    progress and drain read them there."""

    def __init__(
        self, record: DrillRecord, inventory: Inventory, host: InventoryHost, module: str, name: str, config: dict
    ):
        self.name, self.host, self.inventory, self.module = name, host, inventory, module
        self.folder = host_folder(host, record)
        self.exit: int | None = None
        self.said = ""
        self.acks: deque[tuple[int, int]] = deque(maxlen=ACKS_KEPT)  # (ack_ms, latency_ms), newest last
        self._record = record
        self._clock_answers: queue.Queue = queue.Queue()
        self._asked = itertools.count(1)
        access_log = record.log(f"{name}.access")
        access_log.parent.mkdir(parents=True, exist_ok=True)
        request = dict(zip(host_process.REQUEST_FIELDS, (module, name, config, _password(inventory))))
        with open(access_log, "ab") as log:
            self.proc = hostaccess.start(
                inventory, host, hostaccess.python_module(host, RUNNER, self.folder), json.dumps(request) + "\n", log
            )
        self.pid = self.proc.pid
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                said = json.loads(line)
            except ValueError:
                continue
            if host_process.STATUS in said:
                self._record.write_status(self._record.status_name(self.module, self.name), said[host_process.STATUS])
            if host_process.ACKS in said:
                self.acks.extend(tuple(a) for a in said[host_process.ACKS])
            if host_process.EXIT in said:
                self.exit, self.said = said[host_process.EXIT], said.get(host_process.SAID, "")
            if host_process.CLOCK in said:
                self._clock_answers.put((time.monotonic(), said[host_process.CLOCK], said.get(host_process.HOST_MS)))

    def clock(self) -> tuple[int, int] | None:
        """(offset_ms, rtt_ms): this host's clock minus the control's, at the midpoint of the
        quickest of CLOCK_SAMPLES round trips over the process's own session, and that round
        trip (the offset is good to half of it). None when the process no longer answers."""
        best = None
        for _ in range(CLOCK_SAMPLES):
            n = next(self._asked)
            sent, wall = time.monotonic(), time.time()
            try:
                self.proc.stdin.write(json.dumps({host_process.CLOCK: n}) + "\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):  # stopped: its stdin is closed
                break
            answer = self._clock_answer(n, sent + CLOCK_WAIT_S)
            if answer is None:  # no answer in time (a runner that does not serve the clock): stop asking
                break
            got, host_ms = answer
            rtt_s = got - sent
            offset = round(host_ms - (wall + rtt_s / 2) * 1000)
            if best is None or rtt_s * 1000 < best[1]:
                best = (offset, round(rtt_s * 1000))
        return best

    def _clock_answer(self, n: int, deadline: float) -> tuple[float, int] | None:
        """(when it came, the host's clock) of the answer to clock question `n`; older answers skipped."""
        while (left := deadline - time.monotonic()) > 0:
            try:
                got, answered, host_ms = self._clock_answers.get(timeout=left)
            except queue.Empty:
                return None
            if answered == n and isinstance(host_ms, int):
                return got, host_ms
        return None

    @property
    def returncode(self) -> int | None:
        if self.proc.returncode is None:
            return None
        self._reader.join(10)
        return self.exit if self.exit is not None else self.proc.returncode

    def poll(self) -> int | None:
        self.proc.poll()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.proc.wait(timeout)
        return self.returncode

    def stop(self) -> None:
        """Ask the process to end (its runner SIGTERMs it), without waiting."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        self.proc.kill()


def ensure_topic(
    inventory: Inventory,
    spec: WorkloadSpec,
    partitions: int = 6,
    create: bool = True,
    replication=None,
    fresh: bool = False,
) -> None:
    """Create the topic if missing (from a client host: infra/observe/kafka_admin.py). `replication`
    (infra.topology.Replication): its factor, min.insync.replicas and unclean election as the
    topic's own settings (a drill's); without it, the cluster's (the inventory's). `fresh`: the
    topic must not exist yet (a drill's topic holds that drill's records only: older ones would
    read as phantoms, and its settings as its own). ValueError when refused."""
    av = inventory.vars
    factor, configs = av["kafka_replication_factor"], {"min.insync.replicas": str(av["kafka_min_insync_replicas"])}
    if replication is not None:
        factor, configs = (
            replication.factor,
            {
                "min.insync.replicas": str(replication.min_insync),
                "unclean.leader.election.enable": str(replication.unclean_leader_election).lower(),
            },
        )
        if replication.flush_each_write:
            configs["flush.messages"] = "1"
    hostaccess.call(
        inventory,
        "create_topic",
        {
            "topic": spec.topic,
            "partitions": partitions,
            "factor": factor,
            "configs": configs,
            "create": create,
            "fresh": fresh,
            "timeout_ms": spec.bootstrap_timeout_ms,
        },
    )


def delete_topic(inventory: Inventory, topic: str, timeout_ms: int = 30_000) -> bool:
    """Delete `topic` (from a client host); False when the cluster has no such topic."""
    return "deleted" in hostaccess.call(inventory, "delete_topic", {"topic": topic, "timeout_ms": timeout_ms})


class Workload:
    """Producers and consumers on the client hosts; `stop()` lets them settle what is in flight,
    then `collect` brings their files into the record."""

    def __init__(self, run_dir: Path, inventory: Inventory, spec: WorkloadSpec, cluster: str | None = None):
        """`cluster`: on a replicated stack, the cluster `inventory` is (its name goes in every row)."""
        spec.validate(inventory)
        self.run_dir, self.inventory, self.spec = Path(run_dir), inventory, spec
        self.cluster = cluster
        self.record = DrillRecord(run_dir)
        self.procs: list[tuple[str, HostProcess]] = []
        self._clocked: set[str] = set()  # the processes whose host clock was read at their start
        self.recovered: dict[str, int] = {}  # producer -> info rows written from its intent log

    def add_producers(self, inventory: Inventory, cluster: str) -> list[str]:
        """As many producers again, writing to another cluster of a replicated stack (active-active:
        each cluster takes writes), numbered on from this workload's."""
        first = sum(n.startswith("p") for n, _ in self.procs) + 1
        started = []
        for i, host in enumerate(placements(inventory, [], self.spec.producers)):
            pid = f"p{first + i}"
            self._spawn("producer", pid, host, inventory, self.spec, producer_id=pid, cluster=cluster)
            started.append(pid)
        self.read_clocks("start")
        return started

    def fail_over(self, inventory: Inventory, topic: str, cluster: str, timeout_s: float = 30.0) -> list[str]:
        """Move the consumer group to another cluster: stop this workload's consumers (each commits
        what it recorded, if its cluster still answers), then start as many on `cluster`'s client
        hosts reading `topic` (MM2's copy) as the same group, from the offsets MM2 translated, with
        auto.offset.reset=none: a partition without one is an error, never a silent skip."""
        running = [(n, p) for n, p in self.procs if n.startswith("c") and p.poll() is None]
        for _, p in running:
            p.stop()
        for _, p in running:
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        first = sum(n.startswith("c") for n, _ in self.procs) + 1
        started = []
        for i, host in enumerate(placements(inventory, [], len(running) or self.spec.consumers)):
            cid = f"c{first + i}"
            self._spawn(
                "consumer",
                cid,
                host,
                inventory,
                replace(self.spec, topic=topic),
                consumer_id=cid,
                cluster=cluster,
                auto_offset_reset="none",
            )
            started.append(cid)
        return started

    def start(self) -> Workload:
        inv, where = self.inventory, {"cluster": self.cluster} if self.cluster else {}
        for i, host in enumerate(placements(inv, self.spec.hosts, self.spec.consumers)):
            self._spawn("consumer", f"c{i + 1}", host, inv, self.spec, consumer_id=f"c{i + 1}", **where)
        for i, host in enumerate(placements(inv, self.spec.hosts, self.spec.producers)):
            self._spawn("producer", f"p{i + 1}", host, inv, self.spec, producer_id=f"p{i + 1}", **where)
        self.read_clocks("start")
        return self

    def read_clocks(self, at: str) -> None:
        """Each running process's host clock against the control's into the record (clocks.jsonl),
        all at once: at "start" those not yet read, at "end" every one still running."""
        from concurrent.futures import ThreadPoolExecutor

        todo = [(n, p) for n, p in self.procs if p.poll() is None and (at == "end" or n not in self._clocked)]
        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            readings = list(pool.map(lambda np: np[1].clock(), todo))
        for (name, proc), reading in zip(todo, readings):
            self._clocked.add(name)
            if reading is not None:
                self.record.note_clock(name, proc.host.name, at, *reading)

    def _spawn(
        self, module: str, name: str, host: InventoryHost, inventory: Inventory, spec: WorkloadSpec, **extra
    ) -> None:
        cfg = _process_config(inventory, spec, name, dc=host.dc, host=host.name, **extra)
        proc = HostProcess(self.record, inventory, host, module, name, cfg)
        self.procs.append((name, proc))
        # Before anything else: heal finds the process, its host and its folder after a crash.
        self.record.note_agent(name, proc.pid, host.name, folder=proc.folder, cluster=extra.get("cluster"))

    def collect(self) -> None:
        """The transfer step: every host's folder of this drill back into the record (each once),
        then the info rows for what a producer reserved and never settled (its intent log)."""
        fetched = set()
        for _, p in self.procs:
            if (p.host.name, p.folder) not in fetched:
                collect_folder(self.record, p.inventory, p.host, p.folder)
                fetched.add((p.host.name, p.folder))
        for name, _ in self.procs:
            if name.startswith("p"):
                self.recovered[name] = self.record.recover_in_flight(name)

    def acks_since(self, since_ms: int) -> list[tuple[int, int]]:
        """(ack_ms, latency_ms) of every acknowledgement the producers relayed since `since_ms`."""
        return [a for name, p in self.procs if name.startswith("p") for a in list(p.acks) if a[0] >= since_ms]

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
        """After the producers stopped: let consumers catch up, until they have read every
        partition up to its last acknowledged offset (caught_up), or else until they deliver
        nothing new for idle_s (they poll every 0.5 s), or timeout_s passes. Not "delivered >=
        acknowledged": the log also holds failed and indeterminate sends that were written, which
        consumers deliver too, so that count is reached before the last acknowledged records
        arrive."""
        deadline = time.monotonic() + timeout_s
        last, last_change = -1, time.monotonic()
        while time.monotonic() < deadline:
            snaps = self.record.statuses()
            if caught_up(snaps) or time.monotonic() - last_change > idle_s:
                return
            delivered = aggregate(snaps)["delivered"]
            if delivered != last:
                last, last_change = delivered, time.monotonic()
            time.sleep(0.5)

    def stop(self, timeout_s: float = 60.0) -> dict[str, int]:
        """Stop the producers, let the consumers drain, then stop them; collect their files (a
        producer that died mid-send leaves reserved seqs without a row: `collect` settles them).
        Returns exit codes."""
        self.read_clocks("end")
        for group in ("p", "c"):
            if group == "c" and any(n.startswith("c") for n, _ in self.procs):
                self.drain_consumers()
            for name, p in self.procs:
                if name.startswith(group) and p.poll() is None:
                    p.stop()
            deadline = time.monotonic() + timeout_s
            for name, p in self.procs:
                if name.startswith(group):
                    try:
                        p.wait(max(0.1, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        self.collect()
        return {name: p.returncode for name, p in self.procs}


def caught_up(snaps: list[dict]) -> bool:
    """Every producer is done (its final snapshot) and the consumers have read each partition up to
    the last offset a producer had acknowledged there. A group reads a partition in offset order
    from its committed offset, so every acknowledged record below that offset was delivered. A
    producer that died without its final snapshot, or a partition read elsewhere (a failed-over
    group reads another cluster's copy, at other offsets), leaves the drain to its idle wait."""
    producers = [s for s in snaps if "producer_id" in s]
    if not producers or not all(s.get("final") for s in producers):
        return False
    acked: dict[str, int] = {}
    read: dict[str, int] = {}
    for s in snaps:
        for key, offset in (s.get("acked_to") or {}).items():
            acked[key] = max(acked.get(key, -1), offset)
        for key, offset in (s.get("read_to") or {}).items():
            read[key] = max(read.get(key, -1), offset)
    return bool(acked) and all(read.get(key, -1) >= offset for key, offset in acked.items())


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
    return (
        f"[{elapsed_s:5.0f}s] {rate:7.0f} acked/s  acked {st['ok']}  failed {st['fail']}  "
        f"indeterminate {st['info']}  in flight {st['in_flight']}  consumed {st['delivered']}  [{dcs}]   "
    )


def audit(
    run_dir: Path,
    inventory: Inventory,
    spec: WorkloadSpec,
    timeout_s: float = 120.0,
    cluster: str | None = None,
    topics: list[str] | None = None,
) -> None:
    """Read the whole log into audit/ (from a client host, like the other clients). On a replicated
    stack, one cluster's `topics` into audit/<cluster>.jsonl."""
    host = placements(inventory, spec.hosts, 1)[0]
    extra = {"cluster": cluster, "topics": topics} if cluster else {}
    record = DrillRecord(run_dir)
    proc = HostProcess(
        record, inventory, host, "audit", "a", _process_config(inventory, spec, "a", audit_timeout_s=timeout_s, **extra)
    )
    record.note_agent("a", proc.pid, host.name, folder=proc.folder, cluster=cluster)
    code = proc.wait()
    collect_folder(record, inventory, host, proc.folder)  # its log too, when it failed
    if code != 0:
        said = record.log("a").read_text(errors="replace").strip() if record.log("a").exists() else ""
        raise RuntimeError(said.splitlines()[-1] if said else f"audit exited {code}")
    # Only a whole audit is marked (DrillRecord.incomplete): its last stdout line, {file: rows}.
    for file, rows in json.loads(proc.said).items():
        record.mark_audit_end(file, rows)

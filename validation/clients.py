"""Shared client settings and the record format every workload process agrees on."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import zlib

from dcdrill.validation import process_config

WATCH_INTERVAL_S = 1.0  # how soon a workload process notices its starter died


# What a workload process may import after it dropped root: the interpreter's own library can sit
# in a folder only root enters (pyenv under /root), so the clients' packages and the standard
# modules they import on first use (TLS, SCRAM, name lookups) are loaded before.
PRELOAD = (
    "ssl",
    "hmac",
    "hashlib",
    "base64",
    "uuid",
    "secrets",
    "socket",
    "selectors",
    "select",
    "struct",
    "zlib",
    "gzip",
    "queue",
    "logging",
    "logging.handlers",
    "traceback",
    "linecache",
    "tokenize",
    "copy",
    "random",
    "datetime",
    "weakref",
    "platform",
    "getpass",
    "ipaddress",
    "inspect",
    "decimal",
    "heapq",
    "bisect",
    "concurrent.futures",
    "encodings.idna",
    "encodings.ascii",
    "encodings.latin_1",
    "stringprep",
    "unicodedata",
    "warnings",
    "textwrap",
    "calendar",
    "locale",
)
CLIENT_PACKAGES = ("kafka", "confluent_kafka")


def _preload() -> None:
    import importlib
    import pkgutil

    for name in PRELOAD:
        importlib.import_module(name)
    for package in CLIENT_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            if info.name.endswith("__main__") or ".cli" in info.name:  # command lines: they run on import
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - an optional codec or integration this machine lacks
                pass


def config_from_args(prog: str, description: str, argv: list[str] | None) -> dict:
    """A workload process's command line: its --config, checked and then become_agent'd. A
    config that is not JSON or not a ProcessConfig exits 2 naming the key, as argparse would."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--config", required=True, help="JSON settings written by validation/workload.py")
    text = p.parse_args(argv).config
    try:
        return become_agent(json.loads(text))
    except ValueError as exc:  # json.JSONDecodeError is one
        p.error(f"--config: {exc}")


def become_agent(cfg: dict) -> dict:
    """What a workload process does first (RECORD.md: agents). It reads its own user's password
    from stdin (infra.inventory.process_security: never on a command line, never a file of every
    user's); started as root, it keeps its cluster's CA in memory, moves into the record and drops
    to its own uid (validation/workload.py agent_uid), in the agents' group that may write the
    record's ledger folders. Returns cfg as the process then reads it (run_dir ".")."""
    process_config.checked(cfg, "this process's config")
    sec = dict(cfg.get("security") or {})
    if sec.pop("sasl_password_stdin", False):
        sec["sasl_plain_password"] = sys.stdin.readline().rstrip("\n")
    if cfg.get("agent_uid") is None or os.geteuid() != 0:
        return {**cfg, "security": sec}
    if sec.get("ssl_cafile"):  # public, but in the cluster's secrets folder, which only root reads
        with open(sec.pop("ssl_cafile")) as f:
            sec["ssl_cadata"] = f.read()
    _preload()
    sys.dont_write_bytecode = True
    os.chdir(cfg["run_dir"])  # the record's parents may be closed to the agent (a 0700 home or tmp)
    os.setgroups([])
    os.setgid(cfg["agent_gid"])
    os.setuid(cfg["agent_uid"])
    os.umask(0o022)
    return {**cfg, "security": sec, "run_dir": "."}


def resolve_security(cfg: dict) -> dict:
    """The process's kafka-python security settings, after become_agent: a CA held in memory
    becomes an SSL context, as kafka-python takes it."""
    sec = dict(cfg.get("security") or {})
    if "ssl_cadata" in sec:
        import ssl

        context = ssl.create_default_context(cadata=sec.pop("ssl_cadata"))
        context.check_hostname = bool(sec.get("ssl_check_hostname", True))
        sec["ssl_context"] = context
    return sec


def librdkafka_security(security: dict) -> dict:
    """become_agent's settings (kafka-python's names) in librdkafka's names."""
    if not security:
        return {}
    out = {"security.protocol": security["security_protocol"].lower()}
    if "ssl_cadata" in security:
        out["ssl.ca.pem"] = security["ssl_cadata"]
    else:
        out["ssl.ca.location"] = security["ssl_cafile"]
    out["ssl.endpoint.identification.algorithm"] = "https" if security.get("ssl_check_hostname", True) else "none"
    if "sasl_mechanism" in security:
        out |= {
            "sasl.mechanisms": security["sasl_mechanism"],
            "sasl.username": security["sasl_plain_username"],
            "sasl.password": security["sasl_plain_password"],
        }
    return out


def java_security(security: dict) -> dict[str, str]:
    """become_agent's (or resolve_security's) settings as a Java client's properties: a CA held
    in memory as PEM text, one in a file by its path."""
    if not security:
        return {}
    out = {"security.protocol": security["security_protocol"], "ssl.truststore.type": "PEM"}
    if "ssl_cadata" in security:
        out["ssl.truststore.certificates"] = security["ssl_cadata"]
    else:
        out["ssl.truststore.location"] = security["ssl_cafile"]
    out["ssl.endpoint.identification.algorithm"] = "https" if security.get("ssl_check_hostname", True) else ""
    if security.get("sasl_mechanism"):
        quoted = [
            security[k].replace("\\", "\\\\").replace('"', '\\"')
            for k in ("sasl_plain_username", "sasl_plain_password")
        ]
        out["sasl.mechanism"] = security["sasl_mechanism"]
        out["sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{quoted[0]}" password="{quoted[1]}";'
        )
    return out


def java_properties(security: dict) -> list[str]:
    """java_security's properties as the lines of a properties file (Kafka's own tools)."""
    return [f"{k}={v}" for k, v in java_security(security).items()]


def position_key(cluster: str | None, topic: str, partition: int) -> str:
    """One partition's name in the producers' `acked_to` and the consumers' `read_to` (their status
    snapshots): the drain compares them (validation/workload.py, caught_up)."""
    return f"{cluster or ''}/{topic}/{partition}"


def partition_for(key: str, partitions: int) -> int:
    """Explicit partition from the key, so the intended partition is known even when a send fails."""
    return zlib.crc32(key.encode()) % partitions


def encode_value(producer_id: str, seq: int, send_ms: int, size: int) -> bytes:
    """JSON {"p": producer_id, "s": seq, "t": send_ms, "x": padding} of about `size` bytes.
    Formatted by hand: this runs once per record in the hot loop (producer ids are plain names)."""
    head = f'{{"p":"{producer_id}","s":{seq},"t":{send_ms}'
    pad = max(0, size - len(head) - 8)
    return (f'{head},"x":"{"x" * pad}"}}' if pad else head + "}").encode()


# On a replicated stack every record also carries its identity and origin cluster in headers,
# which MirrorMaker 2 copies with the record: the audit of any cluster reads them from there.
PRODUCER_HEADER, SEQ_HEADER, ORIGIN_HEADER = "dcdrill-producer", "dcdrill-seq", "dcdrill-origin"


def identity_headers(producer_id: str, seq: int, origin: str) -> list[tuple[str, bytes]]:
    return [(PRODUCER_HEADER, producer_id.encode()), (SEQ_HEADER, str(seq).encode()), (ORIGIN_HEADER, origin.encode())]


def identity_from_headers(headers) -> tuple[str | None, int | None, str | None]:
    """(producer_id, seq, origin) from a record's headers; Nones when it has none of ours."""
    found = {k: v for k, v in headers or () if k in (PRODUCER_HEADER, SEQ_HEADER, ORIGIN_HEADER)}
    try:
        seq = int(found[SEQ_HEADER]) if SEQ_HEADER in found else None
    except ValueError:
        seq = None
    pid, origin = found.get(PRODUCER_HEADER), found.get(ORIGIN_HEADER)
    return (
        pid.decode(errors="replace") if pid is not None else None,
        seq,
        origin.decode(errors="replace") if origin is not None else None,
    )


def decode_value(value: bytes | None) -> tuple[str | None, int | None, int | None]:
    try:
        d = json.loads(value)
        return str(d["p"]), int(d["s"]), int(d["t"])
    except (TypeError, ValueError, KeyError):
        return None, None, None


class StopFlag:
    """Set by SIGTERM / SIGINT, by the death of the process that started this one, or at the
    deadline: the processes finish what is in flight, then exit. The last two make a workload
    process end by itself when its drill crashed (RECORD.md: agents)."""

    def __init__(self, parent_pid: int | None = None, deadline_ms: int | None = None) -> None:
        self.event = threading.Event()
        self.why = "asked to stop"
        signal.signal(signal.SIGTERM, lambda *_: self.event.set())
        signal.signal(signal.SIGINT, lambda *_: self.event.set())
        if parent_pid or deadline_ms:
            threading.Thread(target=self._watch, args=(parent_pid, deadline_ms), daemon=True).start()

    @classmethod
    def for_process(cls, cfg: dict) -> StopFlag:
        return cls(cfg.get("parent_pid"), cfg.get("deadline_ms"))

    def _watch(self, parent_pid: int | None, deadline_ms: int | None) -> None:
        # The starter execs this process (`ip netns exec` replaces itself), so it is the parent
        # until it dies and the process is handed to init or a subreaper.
        while not self.event.wait(WATCH_INTERVAL_S):
            if parent_pid and os.getppid() != parent_pid:
                self.why = f"the process that started it (pid {parent_pid}) is gone"
            elif deadline_ms and time.time() * 1000 >= deadline_ms:
                self.why = "its deadline passed"
            else:
                continue
            print(f"stopping: {self.why}", file=sys.stderr, flush=True)
            self.event.set()

    def __bool__(self) -> bool:
        return self.event.is_set()

    def wait(self, seconds: float) -> bool:
        return self.event.wait(seconds)

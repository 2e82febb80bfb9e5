"""A class-data archive for the lab's Kafka JVMs, one per Kafka version: trained at setup by a
broker that serves a short TLS + SCRAM load on loopback, then mapped by every JVM the roles start
on that version's jars (brokers, controllers, ZooKeeper, MirrorMaker 2 and the tools).

    python -m dcdrill.infra.java_archive        (make setup runs it once per JDK and jar set)

Why: a Kafka broker loads thousands of classes before its first listener opens, and a lab starts
seven to ten such JVMs and several tool JVMs on two cores; mapped from an archive (AppCDS, JDK
13+) they cost each less CPU (docs/benchmarks.md, tests/benchmarks/broker_start.py). The archive
keeps the brokers' JDK (the machine's `java`, 17, as Corretto 17 on AWS): JDK 25's AOT cache
(JEP 483 and 515), measured beside it, started a broker no faster.

The JVM maps an archive only if the JDK and the classpath's jars (paths, sizes, times) are the
ones it was dumped with, and otherwise silently loads classes itself: the name carries the JDK's
version and a digest of the jar folder, and only the lab, whose hosts read the control's jar
folder in place, is given one (infra/lab/layout.py). An EC2 host's copied jars would not match.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dcdrill.infra.constants import KAFKA_VERSIONS, cache_dir

# What the training load sends: enough for the produce, fetch, TLS and SCRAM paths to load.
TRAINING_RECORDS = 20_000
PASSWORD = "dcdrill-training"  # a throwaway user on a throwaway loopback broker
JAAS = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="{PASSWORD}";'


def java_binary() -> str:
    """The `java` the roles run in the lab (java_binary: java, from PATH)."""
    found = shutil.which("java")
    if not found:
        raise SystemExit("no `java` on PATH (make setup installs openjdk-17-jdk-headless)")
    return found


def _jdk_version(java: str) -> str:
    """JAVA_VERSION from the JDK's `release` file ("17.0.15"), which every JDK build ships."""
    release = Path(os.path.realpath(java)).parent.parent / "release"
    lines = release.read_text(errors="replace").splitlines() if release.is_file() else []
    return next((line.split("=", 1)[1].strip().strip('"') for line in lines if line.startswith("JAVA_VERSION=")), "jdk")


def archive_path(libs: Path, java: str | None = None) -> Path:
    """Named after what it must match: the JDK's version and the jar folder's names, sizes and times."""
    java = java or java_binary()
    digest = hashlib.sha256()
    for jar in sorted(libs.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    tag = "".join(ch if ch.isalnum() else "-" for ch in _jdk_version(java))
    return libs.parent / f"cds-{tag}-{digest.hexdigest()[:12]}.jsa"


def trained(libs: Path) -> Path | None:
    """The archive setup trained for these jars and this machine's `java`, if there is one and
    DCDRILL_CLASS_ARCHIVE is not `off`."""
    if os.environ.get("DCDRILL_CLASS_ARCHIVE") == "off" or not shutil.which("java") or not libs.is_dir():
        return None
    path = archive_path(libs)
    return path if path.is_file() else None


def free_port() -> int:
    """A loopback port nothing listens on now (the training broker's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    """Until `port` accepts on loopback; exits naming why if `proc` ends or time runs out first."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the training broker exited ({proc.returncode}) before port {port} opened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the training broker's port {port} did not open within {timeout_s:.0f} s")


def _keystores(tmp: Path, java: str) -> None:
    """A self-signed key for 127.0.0.1 and a trust store holding its certificate (keytool, no CA)."""
    keytool = str(Path(os.path.realpath(java)).parent / "keytool")
    common = ["-storepass", PASSWORD, "-noprompt"]
    subprocess.run(
        [
            keytool,
            "-genkeypair",
            "-alias",
            "broker",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-dname",
            "CN=127.0.0.1",
            "-ext",
            "SAN=ip:127.0.0.1",
            "-validity",
            "2",
            "-storetype",
            "PKCS12",
            "-keystore",
            str(tmp / "broker.p12"),
            *common,
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            keytool,
            "-exportcert",
            "-alias",
            "broker",
            "-keystore",
            str(tmp / "broker.p12"),
            "-file",
            str(tmp / "broker.crt"),
            *common,
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            keytool,
            "-importcert",
            "-alias",
            "ca",
            "-file",
            str(tmp / "broker.crt"),
            "-storetype",
            "PKCS12",
            "-keystore",
            str(tmp / "trust.p12"),
            *common,
        ],
        check=True,
        capture_output=True,
    )


def write_properties(path: Path, values: dict[str, str]) -> Path:
    """A Java properties file, its keys sorted."""
    path.write_text("".join(f"{k}={v}\n" for k, v in sorted(values.items())))
    return path


def _train(libs: Path, java: str, dump: Path, tmp: Path) -> None:
    client, controller = free_port(), free_port()
    _keystores(tmp, java)
    ssl = {
        "ssl.truststore.location": str(tmp / "trust.p12"),
        "ssl.truststore.password": PASSWORD,
        "ssl.truststore.type": "PKCS12",
    }
    server = write_properties(
        tmp / "server.properties",
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": f"CLIENT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}",
            "listener.security.protocol.map": "CLIENT:SASL_SSL,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "CLIENT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.client.scram-sha-512.sasl.jaas.config": JAAS,
            "ssl.keystore.location": str(tmp / "broker.p12"),
            "ssl.keystore.password": PASSWORD,
            "ssl.keystore.type": "PKCS12",
            **ssl,
            "log.dirs": str(tmp / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "num.partitions": "3",
        },
    )
    login = write_properties(
        tmp / "client.properties",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": JAAS,
            **ssl,
        },
    )
    log4j = tmp / "log4j"
    log4j.write_text("log4j.rootLogger=ERROR, out\nlog4j.appender.out=org.apache.log4j.varia.NullAppender\n")
    cp = ["-cp", f"{libs}/*"]
    quiet = [f"-Dlog4j.configuration=file:{log4j}", "-Dlog4j2.level=ERROR"]
    subprocess.run(
        [
            java,
            "-Xmx256m",
            *quiet,
            *cp,
            "kafka.tools.StorageTool",
            "format",
            "-t",
            "dcdrill-training-000",
            "-c",
            str(server),
            "--add-scram",
            f"SCRAM-SHA-512=[name=admin,password={PASSWORD}]",
        ],
        check=True,
        capture_output=True,
    )
    # The lab's broker options (roles/kafka_broker/defaults/main.yml): the archive records them.
    out = open(tmp / "broker.out", "wb")
    broker = subprocess.Popen(
        [
            java,
            "-Xms256m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            f"-XX:ArchiveClassesAtExit={dump}",
            "-Xlog:cds=off",
            "-Xlog:cds+dynamic=off",
            *quiet,
            *cp,
            "kafka.Kafka",
            str(server),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=tmp,
    )
    try:
        wait_port(client, broker)
        subprocess.run(
            [
                java,
                "-Xmx256m",
                *quiet,
                *cp,
                "org.apache.kafka.tools.ProducerPerformance",
                "--topic",
                "training",
                "--num-records",
                str(TRAINING_RECORDS),
                "--record-size",
                "100",
                "--throughput",
                "-1",
                "--producer.config",
                str(login),
                "--producer-props",
                f"bootstrap.servers=127.0.0.1:{client}",
                "acks=all",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        subprocess.run(
            [
                java,
                "-Xmx256m",
                *quiet,
                *cp,
                "org.apache.kafka.tools.ConsumerPerformance",
                "--topic",
                "training",
                "--messages",
                str(TRAINING_RECORDS),
                "--bootstrap-server",
                f"127.0.0.1:{client}",
                "--consumer.config",
                str(login),
                "--timeout",
                "60000",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
    finally:
        broker.terminate()  # a clean stop: the JVM writes the archive as it exits
        try:
            broker.wait(timeout=120)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
        out.close()


def build(folder: str) -> Path:
    """The archive for the jars of cache_dir()/<folder>/libs, trained unless it is there already."""
    libs = cache_dir() / folder / "libs"
    java = java_binary()
    path = archive_path(libs, java)
    if path.exists():
        return path
    dump = path.with_suffix(".tmp")
    dump.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcdrill-kafka-cds-") as tmp:
        _train(libs, java, dump, Path(tmp))
    if not dump.exists():
        raise SystemExit(f"the training broker ended without writing its class-data archive ({dump})")
    dump.chmod(0o644)  # the lab's services run as unprivileged uids
    dump.replace(path)
    for stale in libs.parent.glob("cds-*.jsa"):  # for another JDK or jar set
        if stale != path:
            stale.unlink()
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m dcdrill.infra.java_archive", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--folder",
        action="append",
        choices=sorted(set(KAFKA_VERSIONS.values())),
        help="a Kafka version's cache folder (default: every one setup fetched)",
    )
    a = p.parse_args(argv)
    if not shutil.which("java"):
        return 0  # nothing to train with: the lab's JVMs load their classes themselves
    for folder in a.folder or sorted(set(KAFKA_VERSIONS.values())):
        libs = cache_dir() / folder / "libs"
        if not libs.is_dir() or trained(libs):
            continue
        print(
            f"\n== setup: class-data archive for the lab's Kafka JVMs ({folder}): a broker on loopback, ~20 s",
            flush=True,
        )
        started = time.monotonic()
        print(f"   {build(folder)} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The java producer client without a cluster: its properties, its outcomes, the specs that choose
it, and the real JVM program answering for a bootstrap where nothing listens (loopback)."""

import shutil
import subprocess

import pytest

from dcdrill.infra import workload_jar
from dcdrill.infra.constants import KAFKA_VERSIONS, cache_dir
from dcdrill.record import models
from dcdrill.validation import java_client, java_readers
from dcdrill.validation import workload as wl
from dcdrill.workload_command import register, spec_from_args


def java_cfg(**over):
    """A java client's process config, as the workload hands it on (validation/java_client.py)."""
    base = {
        "bootstrap": ["b1:9093", "b2:9093"],
        "producer_id": "p1",
        "run_dir": ".",
        **dict.fromkeys(wl.CLIENT_DEFAULTS["java"]),
        "acks": "all",
        "batch_size": None,
        "bootstrap_timeout_ms": 10000,
        "security": {},
    }
    return {**base, **over}


def test_settings_left_to_the_client_are_not_given_to_it():
    props = java_client.properties(java_cfg())
    assert props == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "client.id": "dcdrill-p1",
        "max.block.ms": "5000",
        "acks": "all",
        "socket.connection.setup.timeout.ms": "10000",
    }
    given = java_client.properties(java_cfg(idempotence=False, retries=0, linger_ms=5))
    assert (given["enable.idempotence"], given["retries"], given["linger.ms"]) == ("false", "0", "5")


def test_a_ca_held_in_memory_goes_as_pem_text_and_the_password_into_a_quoted_jaas():
    sec = {
        "security_protocol": "SASL_SSL",
        "ssl_cadata": "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n",
        "ssl_check_hostname": False,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "workload",
        "sasl_plain_password": 'p"w\\d',
    }
    props = java_client.properties(java_cfg(security=sec))
    assert props["ssl.truststore.type"] == "PEM" and props["ssl.truststore.certificates"] == sec["ssl_cadata"]
    assert "ssl.truststore.location" not in props
    assert props["ssl.endpoint.identification.algorithm"] == ""
    assert props["sasl.jaas.config"].endswith('username="workload" password="p\\"w\\\\d";')


def test_the_jvm_command_line_carries_no_setting_or_secret():
    cfg = java_cfg(kafka_libs="/opt/kafka/libs", run_dir="/data/run")
    if not java_client.JAR.is_file():
        with pytest.raises(RuntimeError, match="bundle lacks it"):
            java_client.command(cfg)
        return
    argv = java_client.command(cfg)
    assert argv[-1] == "/data/run" and not any("bootstrap" in a or "password" in a for a in argv)


def test_a_java_spec_leaves_the_producer_settings_to_the_client_and_the_others_keep_the_drills():
    java = wl.WorkloadSpec.for_client("java")
    assert all(getattr(java, name) is None for name in wl.CLIENT_DEFAULTS["java"])
    java.check()
    confluent = wl.WorkloadSpec.for_client("confluent")
    assert (confluent.idempotence, confluent.retries) == (False, 0)
    with pytest.raises(ValueError, match="confluent client needs retries set"):
        wl.WorkloadSpec.for_client("confluent", retries=None).check()


def _parsed(*argv):
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["workload", "run", *argv])


def test_the_command_line_gives_java_its_defaults_and_idempotence_on_or_off_to_every_client():
    java = spec_from_args(_parsed("--client", "java"), "all")
    assert java.client == "java" and java.retries is None and java.idempotence is None
    assert spec_from_args(_parsed("--client", "java", "--idempotence", "off"), "all").idempotence is False
    assert spec_from_args(_parsed("--client", "kafka-python", "--idempotence"), "all").idempotence is True
    assert spec_from_args(_parsed("--client", "confluent", "--retries", "3"), "all").retries == 3


def test_the_plans_clients_are_the_workloads():
    assert models.PRODUCER_CLIENTS == wl.CLIENTS


def _libs():
    libs = cache_dir() / KAFKA_VERSIONS["3.9.1"] / "libs"
    if shutil.which("java") is None or not libs.is_dir():
        pytest.skip("no JDK or no Kafka jars in the cache (make setup)")
    return libs


@pytest.mark.parametrize("version", sorted(KAFKA_VERSIONS))
def test_the_program_reports_the_clients_effective_defaults_and_an_unreachable_bootstrap(version):
    _libs()
    jar = workload_jar.ensure()
    libs = cache_dir() / KAFKA_VERSIONS[version] / "libs"
    block = "bootstrap.servers=127.0.0.1:1\nmax.block.ms=500\n\np\tdcdrill-none\n"
    done = subprocess.run(
        ["java", *java_client.JVM_OPTIONS, "-cp", f"{jar}:{libs}/*", java_client.MAIN],
        input=block,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    settings = dict(f.split("=", 1) for f in first.split("\t")[1:])
    assert first.startswith("i\t") and settings["client.version"] == version
    assert (settings["enable.idempotence"], settings["acks"], settings["delivery.timeout.ms"]) == (
        "true",
        "-1",
        "120000",
    )
    assert settings["retries"] == "2147483647"
    assert second.startswith("n\t-1\t") and "not present in metadata" in second


def test_a_transactional_producer_has_an_id_of_its_own_a_short_timeout_and_readers_read_committed():
    cfg = java_cfg(transaction_size=100, topic="dcdrill-t", group="dcdrill-g", consumer_id="c1", dc="dc-a")
    props = java_client.properties(cfg)
    assert props["transactional.id"] == "dcdrill-dcdrill-t-p1"  # within the stacks' `dcdrill` prefixed ACL
    assert int(props["transaction.timeout.ms"]) == java_client.TRANSACTION_TIMEOUT_MS
    cfg |= {"fetch_min_bytes": 1, "fetch_max_wait_ms": 100}
    assert java_readers.consumer_properties(cfg)["isolation.level"] == "read_committed"
    assert "isolation.level" not in java_readers.consumer_properties({**cfg, "transaction_size": None})
    assert "transactional.id" not in java_client.properties(java_cfg())


def test_the_drills_preflight_refuses_transactions_without_the_java_client():
    from dcdrill import drill
    from tests.dcdrill.test_drill_command import drill_args

    problems = drill.Plan(drill_args(transactions=10)).problems
    assert any("--transactions needs" in p and "confluent" in p for p in problems), problems
    assert drill.Plan(drill_args(client="java", transactions=10, abort_fraction=0.2)).problems == []
    problems = drill.Plan(drill_args(client="java", abort_fraction=0.2)).problems
    assert any("--abort-fraction must be in [0, 1) and needs --transactions" in p for p in problems), problems

"""roles/kafka_mirror's mm2.properties as MirrorMaker 2 reads it (java.util.Properties): a topic
regex's backslash arrives as written, and no value can end its line and add another setting."""

import shutil
import subprocess

import jinja2
import pytest
import yaml

from tests import ROOT

READ_BACK = """
import java.io.FileReader;
import java.util.Properties;
public class ReadBack {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (FileReader r = new FileReader(args[0])) { p.load(r); }
        System.out.print(p.getProperty(args[1]) + "|" + p.getProperty("ssl.endpoint.identification.algorithm"));
    }
}
"""


def _render(topics: str) -> str:
    defaults = yaml.safe_load((ROOT / "roles/kafka_mirror/defaults/main.yml").read_text())
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "roles/kafka_mirror/templates"))
    env.filters["bool"] = lambda v: str(v).lower() in ("true", "yes", "1")
    values = {k: v for k, v in defaults.items() if not (isinstance(v, str) and "{{" in v)}
    values |= {
        "kafka_mirror_clusters": [
            {"alias": "east", "bootstrap": ["b1.dc-a.lab:9092"]},
            {"alias": "west", "bootstrap": ["b3.dc-b.lab:9092"]},
        ],
        "kafka_mirror_flows": [{"source": "east", "target": "west"}],
        "kafka_mirror_topics": topics,
        "kafka_tls": False,
        "kafka_sasl": False,
        "ansible_host": "mm1.dc-b.lab",
        "kafka_mirror_dir": "/m",
    }
    return env.get_template("mm2.properties.j2").render(**values)


def test_mm2_reaches_each_cluster_with_that_clusters_ca_and_password(tmp_path):
    import json

    for alias, pw in (("east", "pw-east"), ("west", "pw-west")):
        (tmp_path / f"{alias}.json").write_text(json.dumps({"mirrormaker": pw}))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "roles/kafka_mirror/templates"))
    env.filters["bool"] = lambda v: str(v).lower() in ("true", "yes", "1")
    env.filters["from_json"] = json.loads
    defaults = yaml.safe_load((ROOT / "roles/kafka_mirror/defaults/main.yml").read_text())
    values = {k: v for k, v in defaults.items() if not (isinstance(v, str) and "{{" in v)}
    values |= {
        "kafka_mirror_clusters": [
            {
                "alias": a,
                "bootstrap": [f"b.{a}:9092"],
                "tls_dir": f"/secrets/{a}",
                "sasl_credentials": str(tmp_path / f"{a}.json"),
            }
            for a in ("east", "west")
        ],
        "kafka_mirror_flows": [{"source": "east", "target": "west"}],
        "kafka_mirror_topics": "dcdrill-.*",
        "kafka_tls": True,
        "kafka_sasl": True,
        "kafka_mirror_user": "mirrormaker",
        "ansible_host": "mm1",
        "kafka_mirror_dir": "/m",
        "lookup": lambda kind, path: open(path).read(),
    }
    text = env.get_template("mm2.properties.j2").render(**values)
    for alias in ("east", "west"):
        assert f"{alias}.ssl.truststore.location = /m/tls/{alias}-ca.pem" in text
        assert (
            f"{alias}.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="mirrormaker" password="pw-{alias}";' in text
        )


@pytest.mark.parametrize(
    "topics", [r"dcdrill\.orders-\d+", "dcdrill-.*\nssl.endpoint.identification.algorithm=", "a\\\\b\r"]
)
def test_mm2_reads_the_topic_regex_as_written_and_nothing_more(tmp_path, topics):
    java = shutil.which("java") or "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
    (tmp_path / "mm2.properties").write_text(_render(topics))
    (tmp_path / "ReadBack.java").write_text(READ_BACK)
    res = subprocess.run(
        [java, str(tmp_path / "ReadBack.java"), str(tmp_path / "mm2.properties"), "east->west.topics"],
        capture_output=True,
        timeout=120,
    )  # bytes: a CR stays one
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == f"{topics}|null"  # the regex whole; no setting smuggled in


WORKER_CONFIG = """
import java.io.FileReader;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.connect.mirror.MirrorMakerConfig;
import org.apache.kafka.connect.mirror.SourceAndTarget;
public class WorkerConfig {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (FileReader r = new FileReader(args[0])) { p.load(r); }
        Map<String, String> props = new HashMap<>();
        for (String k : p.stringPropertyNames()) props.put(k, p.getProperty(k));
        Map<String, String> w = new MirrorMakerConfig(props).workerConfig(new SourceAndTarget("east", "west"));
        System.out.print(w.get("scheduled.rebalance.max.delay.ms") + "|" + w.get("offset.flush.interval.ms")
                         + "|" + w.get("plugin.discovery"));
    }
}
"""


def test_the_workers_take_the_roles_rebalance_delay_offset_flush_and_plugin_discovery(tmp_path):
    """MirrorMaker 2's own MirrorMakerConfig (connect-mirror 4.3.1, from the cache) builds the
    east->west worker from mm2.properties with the role's 10 s rebalance delay, 5 s offset flush
    and ServiceLoader plugin discovery, not Connect's 300 s, 60 s and hybrid_warn: MM2 ignores
    all three at the top level of the file (its herders' Plugins come from the worker config)."""
    from dcdrill.infra.constants import cache_dir

    libs = cache_dir() / "kafka4" / "libs"
    if not (libs / "connect-mirror-4.3.1.jar").exists():
        pytest.skip("needs make setup's Kafka 4 jars")
    java = shutil.which("java") or "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
    (tmp_path / "mm2.properties").write_text(_render("dcdrill-.*"))
    (tmp_path / "WorkerConfig.java").write_text(WORKER_CONFIG)
    res = subprocess.run(
        [java, "-cp", f"{libs}/*", str(tmp_path / "WorkerConfig.java"), str(tmp_path / "mm2.properties")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "10000|5000|service_load"

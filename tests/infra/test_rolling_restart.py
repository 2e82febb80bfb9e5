"""A config change rolls through the brokers it changes (site.yml `serial: 1`, the kafka_broker
role's handler): each restarts once, the next one only after the cluster has no under-replicated
partition, so the cluster never has two brokers down, and a broker whose config did not change
keeps running. A change of the JVM's options alone rolls too (roles/jvm_service: the spec).
The same run removes an ACL nobody declared and changes nothing else: the roles are idempotent.
Real lab, real site.yml."""

import json
import os
import threading
from pathlib import Path

import pytest

from dcdrill.chaos.faults.lab import spec_path
from dcdrill.infra import ansible
from dcdrill.infra.lab import service
from dcdrill.infra.observe import status
from tests.lab_access import in_client

pytestmark = pytest.mark.lab
CHANGED = {"log.cleaner.backoff.ms": "15001"}  # harmless: the cleaner's idle wait
JVM_OPTION = "-Ddcdrill.rolled=1"  # harmless: a system property nothing reads
ROLLED_DC = "dc-a"  # the change goes to this DC's brokers: two restarts in a row, the others untouched


ACL_CLIENT = """
import json, sys
from kafka import KafkaProducer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         NewTopic, ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import KafkaError, TopicAuthorizationFailedError

step = sys.argv[1]
boot, workload, admin_security = (json.loads(a) for a in sys.argv[2:5])
out = {}
admin = KafkaAdminClient(bootstrap_servers=boot, **admin_security)
everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                       ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
if step == "before":
    try:
        KafkaAdminClient(bootstrap_servers=boot, bootstrap_timeout_ms=8000, request_timeout_ms=8000,
                         **{**workload, "sasl_plain_password": "not-the-password"}).list_topics()
        out["wrong password"] = "in"
    except KafkaError:
        out["wrong password"] = "refused"
    admin.create_topics([NewTopic("dcdrill-it-acl", 1, 4), NewTopic("it-acl", 1, 4)])
    p = KafkaProducer(bootstrap_servers=boot, acks="all", max_block_ms=15000, **workload)
    out["dcdrill-it-acl offset"] = p.send("dcdrill-it-acl", b"allowed").get(timeout=30).offset
    try:
        p.send("it-acl", b"denied").get(timeout=30)
        out["it-acl"] = "written"
    except TopicAuthorizationFailedError:
        out["it-acl"] = "denied"
    p.close(timeout=5)
    user = KafkaAdminClient(bootstrap_servers=boot, **workload)
    try:  # creating topics is the admin's: no ACL grants it to the workload
        user.create_topics([NewTopic("dcdrill-it-create", 1, 4)])
        out["create"] = "created"
    except TopicAuthorizationFailedError:
        out["create"] = "denied"
    user.close()
    admin.create_acls([ACL("User:intruder", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                           ResourcePattern(ResourceType.TOPIC, "it-acl", ACLResourcePatternType.LITERAL))])
else:
    acls, _ = admin.describe_acls(everything)
    out["principals"] = sorted({a.principal for a in acls})
admin.close()
print(json.dumps(out))
"""


def acl_step(lab, dc: str, step: str) -> dict:
    """ACL_CLIENT's `step` as an application on `dc`'s client host: its answer."""
    args = [
        json.dumps(lab.bootstrap_servers()),
        json.dumps(lab.client_security()),
        json.dumps(lab.client_security(admin=True)),
    ]
    done = in_client(lab, dc, ACL_CLIENT, step, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _pids(inv) -> dict[str, int | None]:
    return {h.name: service.running_pid(service.load(spec_path(h))) for h in inv.brokers}


class Watch:
    """The fewest brokers the cluster counts alive (registered and reachable), sampled all along."""

    def __init__(self, inv):
        self.inv, self.fewest, self.samples = inv, len(inv.brokers), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.2):
            try:
                st = status.cluster_status(self.inv)
            except Exception:  # noqa: BLE001 - a restarting bootstrap broker: no sample
                continue
            alive = sum(1 for b in st["brokers"] if b["alive"])
            if st["error"] or not alive:  # the status call reached no broker this time: no sample
                continue
            self.fewest = min(self.fewest, alive)
            self.samples += 1

    def stop(self):
        self._stop.set()
        self._thread.join()


def _started_s(pid: int) -> float:
    """When the process started, in seconds since boot (/proc/<pid>/stat's starttime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _with_changes(stack: str, extra: dict, option: str, dc: str) -> tuple[str, str, str]:
    """The inventory with `extra` in the custom properties of one of `dc`'s brokers and `option`
    among the other's JVM options; returns the original inventory and the two brokers."""
    path = ansible.inventory_path(stack)
    original = path.read_text()
    inv = json.loads(original)
    base = inv["all"]["vars"].get("kafka_broker_custom_properties", {})
    hosts = inv["all"]["children"]["kafka_broker"]["hosts"]
    by_config, by_jvm = sorted(name for name, hv in hosts.items() if hv["dc"] == dc)
    hosts[by_config]["kafka_broker_custom_properties"] = {**base, **extra}
    # the role's default options, as a host var, plus one
    hosts[by_jvm]["kafka_broker_jvm_opts"] = ["-XX:+UseSerialGC", "-Djava.awt.headless=true", option]
    path.write_text(json.dumps(inv))
    return original, by_config, by_jvm


def test_a_config_change_restarts_the_changed_brokers_one_at_a_time_and_nothing_else_changes(lab):
    # `local` has sasl and acls: the workload's user may use dcdrill-* topics and nothing more, and
    # a wrong password gets nowhere. The step then adds an ACL nobody declared (User:intruder).
    assert acl_step(lab, "dc-a", "before") == {
        "wrong password": "refused",
        "dcdrill-it-acl offset": 0,
        "it-acl": "denied",
        "create": "denied",
    }
    before = _pids(lab)
    assert all(before.values()), before
    original, by_config, by_jvm = _with_changes("local", CHANGED, JVM_OPTION, ROLLED_DC)
    rolled = {by_config, by_jvm}
    watch = Watch(lab)
    try:
        stats = ansible.run_site("local", quiet=True)
    finally:
        watch.stop()
        ansible.inventory_path("local").write_text(original)
    after = _pids(lab)
    assert all(after[b] and after[b] != before[b] for b in rolled), (before, after)  # each restarted
    assert all(after[b] == before[b] for b in before if b not in rolled), (before, after)  # the others kept running
    assert watch.samples > 10 and watch.fewest >= len(before) - 1, watch.fewest  # never two down at once
    first, second = sorted(_started_s(after[b]) for b in rolled)
    assert second - first >= 3, (first, second)  # one at a time: the second after the first was back and in sync
    assert all(stats[b].get("changed", 0) > 0 for b in rolled)
    # The ACL reconcile (its play runs on the first client host) removed the intruder's ACL, and
    # no other host changed: the run on the lab `lab up` left is idempotent but for what we changed.
    assert stats[lab.clients[0].name]["changed"] == 1, stats
    assert not {h: st for h, st in stats.items() if h not in rolled | {lab.clients[0].name} and st.get("changed")}
    assert acl_step(lab, "dc-b", "after") == {"principals": ["User:workload"]}
    for h in lab.brokers:
        changed = (
            "log.cleaner.backoff.ms=15001" in (Path(h.vars["data_root"]) / "kafka" / "server.properties").read_text()
        )
        assert changed == (h.name == by_config), h.name
    assert JVM_OPTION.encode() in Path(f"/proc/{after[by_jvm]}/cmdline").read_bytes().split(b"\0")
    assert not [
        b for b in before if b != by_jvm and JVM_OPTION.encode() in Path(f"/proc/{after[b]}/cmdline").read_bytes()
    ]
    assert status.cluster_status(lab)["under_replicated_partitions"] == 0
    # The rolled brokers keep the changed settings (a cleaner backoff one millisecond longer, a
    # system property; nothing measures either): rolling them back would be the same roll again, about 70 s of CI. The
    # inventory is restored, so the next `lab up` rolls them back.

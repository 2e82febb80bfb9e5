"""infra/observe/service_logs.py: a failed wait's hosts' logs into the record, named, bounded and
with no secret; a host that cannot be read is said so. The lab drill test reads real ones."""

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess, service_logs


def inventory(tmp_path) -> Inventory:
    host = {"dc": "dc-a", "broker_id": 1, "ansible_host": "b1", "data_root": "/lab/hosts/b1"}
    return Inventory({"all": {"vars": {}, "children": {"kafka_broker": {"hosts": {"b1.dc-a.lab": host}}}}})


def test_each_log_comes_back_redacted_beside_the_backend_s_own(tmp_path, monkeypatch):
    asked = []

    def run(inv, host, remote, timeout_s=120):
        asked.append(remote)
        if remote[0] == "sh":  # the listing: a name that is no log, and one climbing out, are left out
            return "kafka/server.log\nkafka/kafka.out\nkafka/data\nkafka/../x.log\nzookeeper/zookeeper.log\n"
        return "INFO started\nsasl.jaas.config = ScramLoginModule password=hunter2\nERROR boom\n"

    monkeypatch.setattr(hostaccess, "run", run)
    disk = tmp_path / "b1.log"
    disk.write_text("disk: power cut\n")
    inv = inventory(tmp_path)
    got = service_logs.collect(inv, inv.brokers, tmp_path / "run", {"b1.dc-a.lab": [disk]})
    folder = tmp_path / "run" / "logs" / "b1.dc-a.lab"
    assert sorted(p.name for p in folder.iterdir()) == [
        "b1.log",
        "kafka-kafka.out",
        "kafka-server.log",
        "zookeeper-zookeeper.log",
    ]
    assert got["unread"] == {} and len(got["b1.dc-a.lab"]) == 4
    text = (folder / "kafka-server.log").read_text()
    assert "hunter2" not in text and service_logs.LEFT_OUT in text and "ERROR boom" in text
    assert ["tail", "-c", str(service_logs.MAX_BYTES), "/lab/hosts/b1/kafka/server.log"] in asked


def test_a_host_that_does_not_answer_is_named_and_the_others_still_come_back(tmp_path, monkeypatch):
    def run(inv, host, remote, timeout_s=120):
        raise hostaccess.HostUnreachable("b1.dc-a.lab: no answer in 30 s")

    monkeypatch.setattr(hostaccess, "run", run)
    inv = inventory(tmp_path)
    got = service_logs.collect(inv, inv.brokers, tmp_path / "run")
    assert got == {"unread": {"b1.dc-a.lab": "b1.dc-a.lab: no answer in 30 s"}}

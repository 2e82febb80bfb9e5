"""A replicated stack's model (infra/deployment.py): every host named once across the clusters,
MirrorMaker 2 placed and given a principal of its own, and the lab's inventories split per
cluster, each with its own CA and passwords."""

import copy
from pathlib import Path

from dcdrill.infra import mirror_rules, stack
from dcdrill.infra.deployment import MIRROR_USER
from dcdrill.infra.lab import layout
from tests.infra.test_mirror_rules import REPLICATED, mirror


def test_the_model_names_every_host_once_and_places_mm2():
    d = stack.load_deployment("local-replicated")
    names = [h.name for h in d.hosts()]
    shorts = [h.short for h in d.hosts()]
    assert len(set(shorts)) == len(shorts), shorts  # lab namespaces and folders are per short name
    assert names == [
        "ctl1.dc-a.lab",
        "b1.dc-a.lab",
        "b2.dc-a.lab",
        "c1.dc-a.lab",
        "ctl2.dc-b.lab",
        "b3.dc-b.lab",
        "b4.dc-b.lab",
        "c2.dc-b.lab",
        "mm1.dc-b.lab",
    ]
    for c in d.clusters:  # MM2's own principal, on both clusters, allowed only its topics and groups
        assert MIRROR_USER in c.users
        mm = [a for a in c.acls if a.principal == MIRROR_USER]
        assert mm and all(a.name != "*" for a in mm)
        assert any(a.allows(MIRROR_USER, "topic", "east.dcdrill-x", "write") for a in mm)
        assert not any(a.allows(MIRROR_USER, "topic", "payments", "read") for a in mm)
    assert [f.name for f in stack.load_deployment("local-replicated-aa").flows] == ["east->west", "west->east"]
    source = copy.deepcopy(REPLICATED)
    mirror(placement="source")(source)
    d2 = stack.deployment_of(source["config"])
    assert [h.name for h, _ in d2.mirror_hosts()] == ["mm1.dc-a.lab"]
    assert d2.mirrors[0].offset_syncs_location == "source"
    assert not [v for v in mirror_rules.check(d2)]


def test_the_lab_exports_an_inventory_per_cluster_and_one_for_mm2():
    d = stack.load_deployment("local-replicated")
    outs = layout.build_inventories(d, stack.backend("local-replicated").settings, Path("/tmp/cache"))
    assert sorted(outs) == ["inventories", "inventory", "mirrors"]
    east, west = outs["inventories"]["east"], outs["inventories"]["west"]
    assert outs["inventory"] == east
    assert sorted(east["all"]["children"]["kafka_broker"]["hosts"]) == ["b1.dc-a.lab", "b2.dc-a.lab"]
    assert sorted(west["all"]["children"]["kafka_broker"]["hosts"]) == ["b3.dc-b.lab", "b4.dc-b.lab"]
    addresses = [
        h["ansible_ssh_extra_args"]
        for inv in (east, west)
        for g in inv["all"]["children"].values()
        for h in g["hosts"].values()
    ]
    assert len(set(addresses)) == len(addresses)  # one address plan over both clusters' DCs
    for inv in (east, west):  # each cluster's own append time, so MM2's lag can be measured
        assert inv["all"]["vars"]["kafka_broker_custom_properties"] == {"log.message.timestamp.type": "LogAppendTime"}
    mm = outs["mirrors"]
    host = mm["all"]["children"]["kafka_mirror"]["hosts"]["mm1.dc-b.lab"]
    assert host["kafka_mirror_flows"] == [{"source": "east", "target": "west"}]
    assert host["kafka_mirror_offset_syncs_topic_location"] == "target"
    assert [c["alias"] for c in mm["all"]["vars"]["kafka_mirror_clusters"]] == ["east", "west"]
    assert mm["all"]["vars"]["kafka_mirror_clusters"][1]["bootstrap"] == ["b3.dc-b.lab:9092", "b4.dc-b.lab:9092"]


def test_each_cluster_has_its_own_ca_and_passwords_and_mm2_uses_each_ones(tmp_path, monkeypatch):
    """Replicated clusters are separate blast-radius domains: no key or password of one works on
    the other, and MM2 reaches each as that cluster's user, trusting that cluster's CA only."""
    import json as _json

    from dcdrill.infra import agent_runtime, ansible, pulumi_passwords
    from dcdrill.infra.inventory import Inventory

    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))
    agent_runtime.wheels_dir(tmp_path).mkdir(parents=True)  # what setup downloads; nothing installs them here
    (agent_runtime.wheels_dir(tmp_path) / ".complete").write_text("")
    d = stack.load_deployment("local-replicated")
    outs = layout.build_inventories(d, stack.backend("local-replicated").settings, tmp_path, tmp_path)
    made = {
        c: {kind: {u: f"{c}-{u}" for u in users} for kind, users in kinds.items()}
        for c, kinds in pulumi_passwords.wanted(d).items()
    }  # what the stack's Pulumi output holds
    written = {}
    for key, data in (
        (None, outs["inventory"]),
        ("west", outs["inventories"]["west"]),
        (ansible.MIRRORS, outs["mirrors"]),
    ):
        written[key] = Inventory.load(
            ansible.write_inventory("local-replicated", Inventory(data), key, made.get(key or "east"))
        ).vars
    east, west, mm = written[None], written["west"], written[ansible.MIRRORS]
    assert east["kafka_tls_dir"] != west["kafka_tls_dir"]
    cas = {(Path(v["kafka_tls_dir"]) / "ca.pem").read_bytes() for v in (east, west)}
    assert len(cas) == 2
    pw = [_json.loads(Path(v["kafka_sasl_credentials"]).read_text()) for v in (east, west)]
    assert MIRROR_USER in pw[0] and MIRROR_USER in pw[1]
    assert not set(pw[0].values()) & set(pw[1].values())  # not the admin's, not MM2's: nothing shared
    clusters = {c["alias"]: c for c in mm["kafka_mirror_clusters"]}
    assert clusters["east"]["tls_dir"] == east["kafka_tls_dir"] and clusters["west"]["tls_dir"] == west["kafka_tls_dir"]
    assert clusters["west"]["sasl_credentials"] == west["kafka_sasl_credentials"]
    # every lab service its own uid, so none reads another's key
    uids = [
        h.get("kafka_broker_service_user") or h.get("zookeeper_service_user") or h.get("kafka_mirror_service_user")
        for inv in (outs["inventories"]["east"], outs["inventories"]["west"], outs["mirrors"])
        for role, g in inv["all"]["children"].items()
        if role != "client"
        for h in g["hosts"].values()
    ]
    assert len(uids) == len(set(uids)) and all(u and int(u) >= layout.SERVICE_UID_BASE for u in uids)

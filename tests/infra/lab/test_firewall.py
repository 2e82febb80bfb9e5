"""Each lab host's firewall, rendered (infra/lab/firewall.py): default-deny inbound, the flow
table's sources by address, and host access from the control only.
That the lab enforces it: tests/infra/test_lab_integration.py."""

from dcdrill.infra import stack
from dcdrill.infra.lab import firewall, layout, netns
from dcdrill.infra.ports import CLIENT_PORT, REPLICATION_PORT, ZOOKEEPER_PORTS

PREFIX = "10.77"


def rendered(name="local"):
    d = stack.load_deployment(name)
    addresses = layout.addresses(d, PREFIX)
    return d, addresses, firewall.render(d, addresses, PREFIX)


def test_every_host_drops_by_default_and_admits_host_access_from_the_control_only():
    d, addresses, rules = rendered()
    assert set(rules) == {h.short for h in d.hosts()}
    control = netns.control_address(PREFIX)
    for short, text in rules.items():
        assert ":INPUT DROP [0:0]" in text.splitlines() and text.rstrip().endswith("COMMIT")
        ssh = [r for r in firewall.expected(text) if "--dport 22 " in r]
        assert ssh == [
            f'-A INPUT -s {control}/32 -p tcp -m tcp --dport 22 -m comment --comment "host access" -j ACCEPT'
        ], short


def test_a_broker_admits_its_peers_replication_and_the_clients_and_no_one_else():
    d, addresses, rules = rendered()
    b1 = next(h for h in d.hosts() if h.role == "kafka_broker")
    admitted = {
        (r.split(" -s ")[1].split("/")[0], int(r.split("--dport ")[1].split()[0]))
        for r in firewall.expected(rules[b1.short])
        if "--dport" in r and "host access" not in r
    }
    peers = {addresses[h.name] for h in d.hosts() if h.role == "kafka_broker"}
    clients = {addresses[h.name] for h in d.hosts() if h.role == "client"}
    assert {(a, REPLICATION_PORT) for a in peers} <= admitted and {(a, CLIENT_PORT) for a in clients} <= admitted
    zookeepers = {addresses[h.name] for h in d.hosts() if h.role == "zookeeper"}
    assert not {(a, p) for a, p in admitted if a in zookeepers or p in ZOOKEEPER_PORTS}  # no flow from ZooKeeper
    assert not {(a, p) for a, p in admitted if a in clients and p == REPLICATION_PORT}

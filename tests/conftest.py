import pytest

from infra.topology import from_config


def make(dcs, factor=4, min_insync=3, unclean=False, acks="all", profile="consistency-first", backend="local", **kw):
    cfg = {"dcdrill:backend": backend, "dcdrill:profile": profile,
           "dcdrill:cluster": {"name": "t", "datacenters": [dict(zip(("name", "brokers", "zookeepers"), d)) if isinstance(d, tuple) else d for d in dcs],
                               "replication": {"factor": factor, "minInsync": min_insync, "uncleanLeaderElection": unclean},
                               "producer": {"acks": acks}}}
    cfg.update(kw)
    return from_config(cfg)


@pytest.fixture
def topo():
    return make


@pytest.fixture(scope="session")
def lab():
    """The real `local` lab, brought up once per test session by `pulumi up` + Ansible, and
    destroyed at the end; teardown fails the run if any namespace, veth or JVM is left."""
    import subprocess

    from infra import lifecycle
    from infra.lab import netns

    netns.require_support()
    lifecycle.up("local", quiet=True)
    yield lifecycle.inventory("local")
    lifecycle.down("local")
    left_ns = netns.lab_namespaces()
    left_links = [l for l in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
                  if "dcd-" in l or " ta" in l or " tb" in l]
    jvms = subprocess.run(["pgrep", "-f", r"kafka\.Kafka|QuorumPeerMain"], capture_output=True, text=True).stdout.split()
    assert not left_ns and not left_links and not jvms, (left_ns, left_links, jvms)

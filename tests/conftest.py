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


class CommandLines:
    """Every process's command line, sampled every 0.1 s while it runs (the lab's `lab up`):
    tests/infra/test_zookeeper_security.py checks no password ever shows in `ps`."""

    def __init__(self):
        import threading

        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        import subprocess

        while not self._stop.wait(0.1):
            self.seen.update(subprocess.run(["ps", "-eww", "-o", "args", "--no-headers"], capture_output=True,
                                            text=True).stdout.splitlines())

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join()
        return self.seen


@pytest.fixture(scope="session")
def lab_up_command_lines():
    return {}


@pytest.fixture(scope="session")
def lab(lab_up_command_lines):
    """The real `local` lab, brought up once per test session by `pulumi up` + Ansible, and
    destroyed at the end; teardown fails the run if any namespace, veth or JVM is left."""
    import subprocess

    from infra import lifecycle
    from infra.lab import netns

    netns.require_support()
    sampler = CommandLines()
    try:
        lifecycle.up("local", quiet=True)
    finally:
        lab_up_command_lines["lab up"] = sampler.stop()
    yield lifecycle.inventory("local")
    lifecycle.down("local")
    left_ns = netns.lab_namespaces()
    left_links = [l for l in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
                  if "dcd-" in l or " ta" in l or " tb" in l]
    jvms = subprocess.run(["pgrep", "-f", r"kafka\.Kafka|QuorumPeerMain|dcdrill-forwarder"],
                          capture_output=True, text=True).stdout.split()
    assert not left_ns and not left_links and not jvms, (left_ns, left_links, jvms)

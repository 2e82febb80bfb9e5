import os
import tempfile
import time

import pytest

from dcdrill.infra.topology import from_config


def make(dcs, factor=4, min_insync=3, unclean=False, acks="all", profile="consistency-first", backend="local", **kw):
    cfg = {
        "dcdrill:backend": backend,
        "dcdrill:profile": profile,
        "dcdrill:cluster": {
            "name": "t",
            "datacenters": [
                dict(zip(("name", "brokers", "zookeepers"), d)) if isinstance(d, tuple) else d for d in dcs
            ],
            "replication": {"factor": factor, "minInsync": min_insync, "uncleanLeaderElection": unclean},
            "producer": {"acks": acks},
        },
    }
    cfg.update(kw)
    return from_config(cfg)


@pytest.fixture
def topo():
    return make


@pytest.fixture(scope="session")
def moto_endpoint():
    """AWS's API as moto serves it on loopback: what the account preflight reads
    (infra/aws/account.py) in place of an account; nothing goes off the machine."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws_control(tmp_path, moto_endpoint):
    """An environment in which the control has what an AWS drill needs (infra/aws/prerequisites.py):
    a session-manager-plugin on PATH and credentials, stand-ins that no check runs, and an AWS
    endpoint on loopback (moto) that the account preflight reads. For `drill --check` on AWS stacks."""
    import os

    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "session-manager-plugin"
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "example",
        "AWS_ENDPOINT_URL": moto_endpoint,
    }


class CommandLines:
    """Every process's command line, sampled every 0.1 s while it runs (the lab's `lab up`):
    tests/infra/test_lab_security.py checks no password ever shows in `ps`."""

    def __init__(self):
        import threading

        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        import subprocess

        while not self._stop.wait(0.1):
            self.seen.update(
                subprocess.run(
                    ["ps", "-eww", "-o", "args", "--no-headers"], capture_output=True, text=True
                ).stdout.splitlines()
            )

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join()
        return self.seen


@pytest.fixture(scope="session")
def lab_up_command_lines():
    return {}


class Labs:
    """The real labs, one at a time (this machine fits one, and two would share addresses):
    asking for another stack's lab brings the current one down first. The lab tests run grouped
    by lab in LAB_ORDER (pytest_collection_modifyitems), so each stack comes up once."""

    def __init__(self, command_lines: dict):
        self.current: str | None = None
        self.command_lines = command_lines

    def up(self, stack: str):
        from dcdrill.infra import lifecycle
        from dcdrill.infra.lab import netns

        if self.current != stack:
            self.down()
            netns.require_support()
            sampler = CommandLines()
            try:
                self.current = stack
                lifecycle.up(stack, quiet=True)
            finally:
                self.command_lines.setdefault("lab up", sampler.stop())
        return lifecycle.inventory(stack)

    def down(self) -> None:
        """Destroy the current lab; fails the run if any namespace, veth or JVM is left."""
        import subprocess

        from dcdrill.infra import lifecycle
        from dcdrill.infra.lab import disk, netns

        if self.current is None:
            return
        stack, self.current = self.current, None
        lifecycle.down(stack)
        left_ns = netns.lab_namespaces()
        left_links = [
            link
            for link in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
            if "dcd-" in link or " ta" in link or " tb" in link
        ]
        jvms = subprocess.run(
            ["pgrep", "-f", r"kafka\.Kafka|QuorumPeerMain|dcdrill-forwarder|dcdrill-disk|mirror\.MirrorMaker"],
            capture_output=True,
            text=True,
        ).stdout.split()
        disks = disk.mounts()
        # tests/infra/lab/test_disk.py mounts disks of its own there, maybe now: make test runs it beside the lab tests.
        unit_disks = os.path.join(tempfile.gettempdir(), "dcdrill-disk-")
        disks = [d for d in disks if not d.startswith(unit_disks)]
        if jvms:  # a zombie holds nothing: killed, not yet reaped by this machine's init
            jvms = [
                line
                for line in subprocess.run(
                    ["ps", "-ww", "-o", "pid=,stat=,args=", "-p", ",".join(jvms)], capture_output=True, text=True
                ).stdout.splitlines()
                if not line.split()[1].startswith("Z") and unit_disks not in line
            ]
        assert not left_ns and not left_links and not jvms and not disks, (stack, left_ns, left_links, jvms, disks)
        from dcdrill.infra import ansible

        # Its CA and keys, passwords and inventories went with it (infra/lifecycle.down).
        assert not ansible.inventory_path(stack).parent.exists(), "lab down left the stack's secrets"


# A secret of the environment a CI job would have (its token, an AWS session's), unused by the
# lab: every lab up and drill runs with it, and tests/chaos/test_drill_integration.py finds it in
# no file under the cache or a drill's record.
MARKER_SECRET = f"dcdrill-marker-{os.getpid()}-{time.time_ns()}"
MARKED = ("GITHUB_TOKEN", "AWS_SESSION_TOKEN")


@pytest.fixture(scope="session")
def labs(lab_up_command_lines):
    before = {var: os.environ.get(var) for var in MARKED}
    os.environ.update({var: MARKER_SECRET for var in MARKED})
    manager = Labs(lab_up_command_lines)
    try:
        yield manager
        manager.down()
    finally:
        for var, value in before.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


@pytest.fixture(scope="module")
def spark():
    """The verifier's in-process tests: a Spark session per test module, on 2 cores."""
    from dcdrill.spark import session

    s = session.session("local[2]")
    yield s
    s.stop()


@pytest.fixture
def lab(labs):
    """The real `local` lab (ZooKeeper), brought up by `pulumi up` + Ansible when no test has yet."""
    return labs.up("local")


@pytest.fixture
def power_loss_lab(labs):
    """The real `local-power-loss` lab: minInsync 2 with two replicas per DC, on disks that can lose power."""
    return labs.up("local-power-loss")


@pytest.fixture
def kraft_lab(labs):
    """The real `local-kraft` lab (Kafka 4.x, KRaft controllers in three DCs)."""
    return labs.up("local-kraft")


@pytest.fixture
def replicated_lab(labs):
    """The real `local-replicated` lab: clusters east (dc-a) and west (dc-b), MirrorMaker 2 in dc-b."""
    return labs.up("local-replicated")


@pytest.fixture
def active_active_lab(labs):
    """The real `local-replicated-aa` lab: east and west copying each other."""
    return labs.up("local-replicated-aa")


LAB_ORDER = ("lab", "power_loss_lab", "kraft_lab", "replicated_lab", "active_active_lab")


def pytest_collection_modifyitems(items):
    """Lab tests grouped by lab, in LAB_ORDER, so each lab comes up once: `local`,
    `local-power-loss`, `local-kraft`, then the replicated ones."""

    def order(item) -> int:
        used = [i for i, name in enumerate(LAB_ORDER) if name in getattr(item, "fixturenames", ())]
        return used[0] if used else 0

    items.sort(key=order)

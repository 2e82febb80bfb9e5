"""Host keys: which file the inventory trusts, a lookup in it, and a first contact that fails
naming the host. The lab test (tests/infra/test_lab_integration.py) learns and refuses real keys."""

import subprocess

import pytest

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import host_keys


def inventory(known: str, hostname: str = "127.0.0.1") -> Inventory:
    """A one-host cluster whose ssh goes to loopback port 1, where nothing listens."""
    host = {"dc": "dc-a", "broker_id": 1, "ansible_host": "b1", "ansible_ssh_extra_args": f"-o HostName={hostname}"}
    return Inventory(
        {
            "all": {
                "vars": {
                    "cluster_name": "t",
                    "ansible_user": "dcdrill",
                    "ansible_ssh_private_key_file": "/nonexistent/id_ed25519",
                    "ansible_ssh_common_args": f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known} -o Port=1",
                },
                "children": {"kafka_broker": {"hosts": {"b1.dc-a.lab": host}}},
            }
        }
    )


def _key(tmp_path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    return " ".join((tmp_path / "k.pub").read_text().split()[:2])


def test_the_inventory_names_its_known_hosts_and_null_is_refused(tmp_path):
    assert host_keys.known_hosts(inventory(str(tmp_path / "kh"))) == tmp_path / "kh"
    with pytest.raises(ValueError, match="no known_hosts file"):
        host_keys.known_hosts(inventory("/dev/null"))


def test_known_finds_a_host_by_name_and_no_other(tmp_path):
    (tmp_path / "kh").write_text(f"10.77.1.11 {_key(tmp_path)}\n")
    assert host_keys.known(tmp_path / "kh", "10.77.1.11")
    assert not host_keys.known(tmp_path / "kh", "10.77.1.12")
    assert not host_keys.known(tmp_path / "absent", "10.77.1.11")


def test_a_host_already_known_by_its_hostname_is_not_contacted(tmp_path):
    # nothing listens on 127.0.0.2's port 1: a contact would fail, so learning nothing proves none was made
    (tmp_path / "kh").write_text(f"127.0.0.2 {_key(tmp_path)}\n")
    assert host_keys.learn(inventory(str(tmp_path / "kh"), "127.0.0.2")) == []


def test_a_host_that_does_not_answer_is_named_and_nothing_is_learned(tmp_path):
    with pytest.raises(host_keys.HostKeysUnknown, match="b1.dc-a.lab: .*(refused|Connection)"):
        host_keys.learn(inventory(str(tmp_path / "kh")), timeout_s=20)
    assert not (tmp_path / "kh").exists() or (tmp_path / "kh").read_text() == ""

"""The wait for SSM registration after `pulumi up` (infra/aws/ssm_registration.py,
lifecycle.wait_registered): SSM's answers held to botocore's model by its Stubber."""

import boto3
import pytest
from botocore.stub import Stubber

from dcdrill.infra import lifecycle, stack
from dcdrill.infra.aws import ssm_registration
from dcdrill.infra.observe import hostaccess

STACK = "aws-2region-tiebreaker"


def _inventory():
    return stack.backend(STACK).inventory(stack.load(STACK))


def _ssm(online: set[str], lost: set[str] = frozenset()):
    """A client factory answering DescribeInstanceInformation per region with `online` (and `lost`:
    registered, ping ConnectionLost) among the ids it is asked for."""
    inv, made = _inventory(), {}

    def client(service, region):
        assert service == "ssm"
        if region in made:
            return made[region]
        c = made[region] = boto3.client("ssm", region_name=region, aws_access_key_id="x", aws_secret_access_key="y")
        ids = sorted(h.address for h in inv.hosts() if h.vars["aws_region"] == region)
        listed = [
            {"InstanceId": i, "PingStatus": "Online" if i in online else "ConnectionLost"}
            for i in ids
            if i in online | set(lost)
        ]
        stub = Stubber(c)
        stub.add_response(
            "describe_instance_information",
            {"InstanceInformationList": listed},
            {"Filters": [{"Key": "InstanceIds", "Values": ids}]},
        )
        stub.activate()
        return c

    return client


def test_hosts_ssm_does_not_list_online_are_named_across_regions():
    inv = _inventory()
    hosts = {h.name: h.address for h in inv.hosts()}
    assert len({h.vars["aws_region"] for h in inv.hosts()}) == 3  # one call per region
    b1, zk = next(n for n in hosts if n.startswith("b1.")), next(n for n in hosts if n.startswith("zk"))
    online = {i for n, i in hosts.items() if n not in (b1, zk)}
    assert ssm_registration.unregistered(inv, _ssm(online, lost={hosts[zk]})) == sorted([b1, zk])
    assert ssm_registration.unregistered(inv, _ssm(set(hosts.values()))) == []


class _Registering:
    """A backend whose hosts register one poll at a time."""

    registry = "SSM"

    def __init__(self, answers):
        self.answers = list(answers)

    def unregistered(self, inventory):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_the_wait_says_how_many_are_registered_and_ends_when_all_are(monkeypatch, capsys):
    inv = _inventory()
    total = len(inv.hosts())
    backend = _Registering([["b1.dc-a", "b2.dc-a", "zk1.dc-c"], ["zk1.dc-c"], []])
    monkeypatch.setattr(lifecycle.stacks, "backend", lambda name: backend)
    monkeypatch.setattr(lifecycle.time, "sleep", lambda s: None)
    lifecycle.wait_registered(STACK, [inv])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and f"{total - 3}/{total} hosts registered, not yet b1.dc-a, b2.dc-a, zk1.dc-c" in err[0]
    assert f"{total - 1}/{total} hosts registered, not yet zk1.dc-c" in err[1]


def test_hosts_still_missing_at_the_bound_are_named(monkeypatch):
    clock, inv = iter(range(0, 10_000, 400)), _inventory()
    monkeypatch.setattr(lifecycle.stacks, "backend", lambda name: _Registering([["zk1.dc-c"]]))
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(lifecycle.time, "sleep", lambda s: None)
    with pytest.raises(hostaccess.HostUnreachable, match=r"SSM: 1 of \d+ hosts not registered after 1200s: zk1.dc-c"):
        lifecycle.wait_registered(STACK, [inv], quiet=True)

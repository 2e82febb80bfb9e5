"""The stack's instances (infra/aws/hosts.py), from the program under Pulumi's mocks: the image
kept, the data volumes' fate, and the user data that mounts them and sizes sshd for host access."""

import pytest

from tests.infra.aws.program_mocks import run_program


@pytest.mark.parametrize("keep", [False, True])
def test_the_image_stays_and_data_volumes_go_with_the_stack_unless_kept(monkeypatch, keep):
    """The AMI found at the first `up` is not followed to a newer one (every instance would be
    replaced); data volumes are deleted with the stack unless dcdrill:aws.keepDataVolumes; the
    volume is waited for, formatted once with a label and mounted by it (device names change
    across the stop/start of a DC loss)."""
    from dcdrill.infra.aws import hosts

    seen = {"instance": [], "volume": []}

    def recording(cls, kind):
        class Recorded(cls):
            def __init__(self, name, *args, opts=None, **kwargs):
                seen[kind].append(opts)
                super().__init__(name, *args, opts=opts, **kwargs)

        return Recorded

    monkeypatch.setattr(hosts.aws.ec2, "Instance", recording(hosts.aws.ec2.Instance, "instance"))
    monkeypatch.setattr(hosts.aws.ebs, "Volume", recording(hosts.aws.ebs.Volume, "volume"))
    patch = {"dcdrill:aws": {"keepDataVolumes": True}} if keep else None
    run_program("aws-3az", patch)
    assert seen["instance"] and all("ami" in (o.ignore_changes or []) for o in seen["instance"])
    assert seen["volume"] and all(bool(o.retain_on_delete) is keep for o in seen["volume"])
    script = hosts.user_data("kafka_broker")
    assert hosts.DATA_LABEL not in hosts.user_data("client")
    assert f"mkfs.ext4 -q -L {hosts.DATA_LABEL}" in script and f"LABEL={hosts.DATA_LABEL} /var/lib/dcdrill" in script
    assert "sleep 5" in script and "/dev/nvme" not in script
    # room for host access's sessions on its one connection a host, as the lab's sshd has it
    from dcdrill.infra.constants import SSHD_LIMITS

    assert "printf 'MaxSessions 100\\nMaxStartups 100\\n' > /etc/ssh/sshd_config.d/00-dcdrill.conf" in script
    assert SSHD_LIMITS == {"MaxSessions": 100, "MaxStartups": 100} and "systemctl reload sshd" in script

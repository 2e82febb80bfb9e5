"""Hosts: EC2 instances in their DC's AZ, each with the login user, a separate gp3 data volume
(deleted with the stack unless `dcdrill:aws.keepDataVolumes`), an SSM instance profile, the tags
the chaos AWS driver targets (`cluster`, `dc`, `az_id`, `role`, `node_id`) and a private DNS record
(the name Kafka advertises and certificates carry)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from dcdrill.infra.constants import LOGIN_USER, SSHD_LIMITS

# Every host: the login user host access and Ansible use (as the lab's, infra/lab/sshd.py), with
# no key of its own: each ssh connection hands it the control's public key through EC2 Instance
# Connect first (infra/aws/ssm_tunnel.py; Amazon Linux 2023's sshd asks for it), and it becomes
# root through sudo, as the roles' plays do.
# sshd takes the first value it reads: the drop-in that sorts first, as the lab's sshd has them.
SSHD_CONF = "".join(f"{key} {value}\\n" for key, value in SSHD_LIMITS.items())
LOGIN_DATA = f"""#!/bin/sh
set -e
id {LOGIN_USER} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash {LOGIN_USER}
echo '{LOGIN_USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{LOGIN_USER}
chmod 0440 /etc/sudoers.d/{LOGIN_USER}
printf '{SSHD_CONF}' > /etc/ssh/sshd_config.d/00-dcdrill.conf
systemctl reload sshd
"""
# Stateful hosts, then: waits for the data volume (attached by Pulumi after the instance boots, so
# it may not be there yet), formats it once with a label, and mounts it by that label: NVMe device
# names can change across the stop and start a DC loss on AWS does; the label cannot.
DATA_LABEL = "dcdrill-data"
DATA_VOLUME = f"""root=$(findmnt -no SOURCE / | sed 's/p[0-9]*$//')
for i in $(seq 1 120); do
  dev=$(lsblk -dpno NAME,SERIAL | awk '/vol/ {{print $1}}' | grep -v "$root" | head -1)
  [ -n "$dev" ] && break
  sleep 5
done
[ -n "$dev" ] || {{ echo "dcdrill: no data volume attached after 10 minutes" >&2; exit 1; }}
blkid -L {DATA_LABEL} >/dev/null || blkid "$dev" || mkfs.ext4 -q -L {DATA_LABEL} "$dev"
mkdir -p /var/lib/dcdrill
grep -q "LABEL={DATA_LABEL}" /etc/fstab \
  || echo "LABEL={DATA_LABEL} /var/lib/dcdrill ext4 defaults,nofail 0 2" >> /etc/fstab
mount -a
"""


# Hosts whose state lives elsewhere (MM2 keeps its offsets and configs in Kafka topics): no data volume.
STATELESS_ROLES = ("client", "kafka_mirror")


def user_data(role: str) -> str:
    return LOGIN_DATA + ("" if role in STATELESS_ROLES else DATA_VOLUME)


class SsmProfile(pulumi.ComponentResource):
    """One IAM role + instance profile so SSM reaches every host (ssh's tunnel, the fault driver's commands)."""

    def __init__(self, name: str, cluster: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:SsmProfile", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=pulumi.Output.json_dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ec2.amazonaws.com"}}
                    ],
                }
            ),
            tags={"cluster": cluster},
            opts=child,
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-ssm", role=role.name, policy_arn="arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore", opts=child
        )
        self.profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, opts=child)
        self.register_outputs({"profile": self.profile.name})


@dataclass
class HostArgs:
    cluster: str
    fqdn: str
    role: str
    dc: str
    node_id: int
    zone: str
    az_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    security_group_ids: list
    instance_type: str
    ami: pulumi.Input[str]
    data_volume_gb: int
    keep_data_volumes: bool
    instance_profile: pulumi.Input[str]
    zone_id: pulumi.Input[str]
    provider: aws.Provider
    extra_tags: dict = field(default_factory=dict)


class ClusterHost(pulumi.ComponentResource):
    def __init__(self, name: str, args: HostArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:ClusterHost", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        tags = {
            "cluster": args.cluster,
            "dc": args.dc,
            "az_id": args.az_id,
            "role": args.role,
            "node_id": str(args.node_id),
            "Name": args.fqdn,
            **args.extra_tags,
        }
        self.instance = aws.ec2.Instance(
            f"{name}-instance",
            ami=args.ami,
            instance_type=args.instance_type,
            subnet_id=args.subnet_id,
            availability_zone=args.zone,
            vpc_security_group_ids=args.security_group_ids,
            iam_instance_profile=args.instance_profile,
            associate_public_ip_address=False,
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(encrypted=True, volume_type="gp3"),
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
            user_data=user_data(args.role),
            tags=tags,
            # The image found at the first `up` stays: a newer Amazon Linux must not replace every
            # instance (and its broker) on the next one. docs/aws.md says how to move it on purpose.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["ami"])),
        )
        if args.role not in STATELESS_ROLES:
            # Deleted with the stack (7 to 12 volumes of dataVolumeGb each), unless the stack keeps them.
            volume = aws.ebs.Volume(
                f"{name}-data",
                availability_zone=args.zone,
                size=args.data_volume_gb,
                type="gp3",
                encrypted=True,
                tags={**tags, "Name": f"{args.fqdn}-data"},
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(retain_on_delete=args.keep_data_volumes)
                ),
            )
            aws.ec2.VolumeAttachment(
                f"{name}-attach", device_name="/dev/sdf", volume_id=volume.id, instance_id=self.instance.id, opts=child
            )
        aws.route53.Record(
            f"{name}-dns",
            zone_id=args.zone_id,
            name=args.fqdn,
            type="A",
            ttl=60,
            records=[self.instance.private_ip],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"instance_id": self.instance.id, "private_ip": self.instance.private_ip})

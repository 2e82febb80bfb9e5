"""The AWS fault driver (boto3). Its targets are the ids the stack's own Pulumi outputs list (the
inventory: instance ids as ansible_host, subnets in aws_subnet_ids); their tags (`cluster`, `dc`)
are a second check, never the only one, so another stack with the same tags is never touched.

- kill a DC: every service SIGKILLed through SSM (the OS keeps its page cache, as on the lab);
  stop a DC: FIS's stop-instances (a clean shutdown), which FIS undoes by itself after the
  drill's hold and a grace (chaos/faults/aws_fis.py); power loss: StopInstances with
  SkipOsShutdown, which FIS cannot do.
- isolate a DC both ways: FIS's disrupt-connectivity on its subnet, undone by FIS in the same way.
  One way only (FIS cannot): its subnet moves onto a network ACL of the driver's own. NACLs are
  stateless, so `ingress` allows only outbound traffic, `egress` only inbound.
- degrade a link: `tc netem` on the hosts of both DCs, for traffic to the other DC's subnet,
  through SSM Run Command (AWS-RunShellScript), every instance's result read; heal deletes that
  qdisc the same way.
- restart a broker: `systemctl restart kafka` through SSM, waiting for the command to finish.
- kill MirrorMaker 2: `systemctl kill --signal=SIGKILL mirror`, then `systemctl stop` so that
  systemd's Restart=on-failure does not start it again before heal (`systemctl start mirror`).
Every change is noted before it is made, every state change waited for, and heal re-reads the
live state before each step, so a fault or a heal interrupted at any step is finished by the next heal.
"""

from __future__ import annotations

import re
import shlex
import time

from dcdrill.chaos.faults import aws_fis
from dcdrill.chaos.faults.driver import FaultDriver, Undo, mirror_log_files
from dcdrill.infra.aws.backend import given_credentials
from dcdrill.infra.aws.plan import STACK_TAG
from dcdrill.infra.constants import now_ms
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import InventoryHost
from dcdrill.record.contents import ISOLATE_DC, STOP_DC

RUN_SHELL = "AWS-RunShellScript"
COMMENT = "dcdrill fault"
NETEM_HANDLE = "1:"
# The interface of the default route: where traffic to the other DC leaves (ens5 on Nitro, eth0 on older types).
DEVICE = "dev=$(ip -o -4 route show default | awk '{print $5; exit}'); dev=${dev:-eth0}"


# The hosts a slow-link shapes with tc netem (site.yml's link_shaping play installs both there).
SHAPED_ROLES = ("zookeeper", "kafka_controller", "kafka_broker", "client")


def netem_script(cidr: str, latency_ms: float, jitter_ms: float, loss_pct: float) -> list[str]:
    """Delay and drop what leaves the host for `cidr` only: a prio qdisc whose fourth band holds
    netem, and a u32 filter sending the other DC's subnet there. The rest of the traffic is untouched."""
    netem = (
        f"delay {latency_ms:g}ms"
        + (f" {jitter_ms:g}ms" if jitter_ms else "")
        + (f" loss {loss_pct:g}%" if loss_pct else "")
    )
    return [
        DEVICE,
        f"tc qdisc replace dev $dev root handle {NETEM_HANDLE} prio bands 4",
        f"tc qdisc replace dev $dev parent 1:4 handle 40: netem {netem}",
        f"tc filter replace dev $dev parent {NETEM_HANDLE} protocol ip prio 1 u32 match ip dst {cidr} flowid 1:4",
    ]


HEAL_NETEM = [DEVICE, f"tc qdisc del dev $dev root handle {NETEM_HANDLE} || true"]


ISOLATES = "dcdrill-isolates"  # the tag naming the subnet an isolation ACL was made for
WAIT = {"Delay": 5, "MaxAttempts": 120}  # EC2 waiters: up to 10 minutes for a state change
SSM_POLL_S = 2.0

UNDO_KEYS = ("region", "services", "fis", "start", "mirrors", "isolations", "netem")  # what the faults note
FIS_TOKEN = re.compile(r"^[0-9a-f]{32}$")  # aws_fis.new_token
MIRROR_UNIT = "mirror"  # roles/kafka_mirror's jvm_service_name: the systemd unit
KILL_MIRROR = [
    f"systemctl kill --signal=SIGKILL {MIRROR_UNIT}",
    # Restart=on-failure would start it again at once: the fault holds it down until heal.
    f"systemctl stop {MIRROR_UNIT}",
    f"! systemctl is-active --quiet {MIRROR_UNIT}",
]
START_MIRROR = [f"systemctl start {MIRROR_UNIT}"]
# A DC's services (the roles' systemd units), in the order heal starts them: the quorum first.
DC_UNITS = ("zookeeper", "kafka", MIRROR_UNIT)
# kill-dc as the lab does it: every service SIGKILLed at once, the OS and its page cache untouched;
# stopped too, so Restart=on-failure does not undo the kill before heal.
KILL_SERVICES = [
    f"for u in {' '.join(DC_UNITS)}; do systemctl cat $u >/dev/null 2>&1 || continue; "
    "systemctl kill --signal=SIGKILL $u; systemctl stop $u; "
    'if systemctl is-active --quiet $u; then echo "$u still active" >&2; exit 1; fi; done'
]
START_SERVICES = [
    f"for u in {' '.join(DC_UNITS)}; do systemctl cat $u >/dev/null 2>&1 || continue; "
    "systemctl start $u || exit 1; done"
]


class AwsFaults(FaultDriver):
    # What a DC's loss stops: every Kafka process (MirrorMaker 2 too); clients are the observers.
    ROLES = ("zookeeper", "kafka_controller", "kafka_broker", "kafka_mirror")

    def _client(self, service: str, region: str):
        """A boto3 client with the experiment's `aws` secrets when given, else boto3's own chain
        (environment, profile, instance role)."""
        import boto3

        return boto3.client(service, region_name=region, **given_credentials(self.credentials))

    def _region(self, dc: str) -> str:
        return self.inventory.vars["aws_regions"][dc]

    def _cluster(self, dc: str) -> str:
        """The cluster the DC's resources are tagged with (on a replicated stack, the DC's own)."""
        t = self.topology
        return t.cluster_of_dc(dc).name if isinstance(t, Deployment) else t.name

    def _owned_instances(self, dc: str, roles=ROLES) -> list[str]:
        """The DC's instance ids from the stack's outputs, each confirmed by its tags."""
        hosts = self.inventory.in_dc(dc, roles)
        ids = sorted(h.address for h in hosts)
        if not ids:
            raise ValueError(f"{dc} has no {' or '.join(roles)} host in the stack's outputs")
        ec2 = self._client("ec2", self._region(dc))
        found = {
            i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags", [])}
            for r in ec2.describe_instances(InstanceIds=ids)["Reservations"]
            for i in r["Instances"]
        }
        for i in ids:
            tags = found.get(i, {})
            if not self._ours(tags, dc):
                raise RuntimeError(
                    f"instance {i} is not tagged {self._expected(dc)} "
                    f"(tags: {tags}): the stack's outputs and the account disagree; nothing stopped"
                )
        return ids

    @property
    def _stack_tag(self) -> str | None:
        """STACK_TAG's value on this stack's resources, as its outputs name it (a stack built before has none)."""
        return self.inventory.vars.get("aws_stack_tag")

    def _expected(self, dc: str) -> str:
        stack = self._stack_tag
        return f"cluster={self._cluster(dc)}, dc={dc}" + (f", {STACK_TAG}={stack}" if stack else "")

    def _ours(self, tags: dict, dc: str) -> bool:
        return (
            tags.get("cluster") == self._cluster(dc)
            and tags.get("dc") == dc
            and (self._stack_tag is None or tags.get(STACK_TAG) == self._stack_tag)
        )

    def _owned_subnet(self, dc: str) -> dict:
        subnet_id = self.inventory.vars["aws_subnet_ids"][dc]
        ec2 = self._client("ec2", self._region(dc))
        sn = ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
        tags = {t["Key"]: t["Value"] for t in sn.get("Tags", [])}
        if not self._ours(tags, dc):
            raise RuntimeError(f"subnet {subnet_id} is not tagged {self._expected(dc)} (tags: {tags})")
        return sn

    # -- processes ----------------------------------------------------------------------------
    def kill_dc(self, dc: str, undo: Undo) -> dict:
        """SIGKILL every service of the DC through SSM, as the lab does: a forced StopInstances
        still lets the OS shut down, and Kafka with it, cleanly."""
        ids, region = self._owned_instances(dc), self._region(dc)
        undo.add(region=region, services=ids)
        self._run_all(region, ids, f"killing {dc}'s services", KILL_SERVICES)
        return {"instances": ids}

    def stop_dc(self, dc: str, undo: Undo) -> dict:
        ids, region = self._owned_instances(dc), self._region(dc)
        sn = self._owned_subnet(dc)
        ec2 = self._client("ec2", region)
        arns = [f"arn:{ec2.meta.partition}:ec2:{region}:{sn['OwnerId']}:instance/{i}" for i in ids]
        # If FIS fails to start them again, heal does (start: noted first).
        exp, acted = self._through_fis(
            region, STOP_DC, undo, aws_fis.stop_instances(arns, self.fault_limit_s), start=ids
        )
        ec2.get_waiter("instance_stopped").wait(InstanceIds=ids, WaiterConfig=WAIT)  # the fault is the stopped DC
        return {"instances": ids, "fis_experiment": exp, "acted_ms": acted}

    def _through_fis(
        self, region: str, fault: str, undo: Undo, targets_action: tuple[dict, dict], **noted
    ) -> tuple[str, int]:
        """Run one fault as an FIS experiment of its own: (its id, when FIS says it acted). Its
        token is noted before anything exists, so heal finds the template and its experiment
        whatever step a crash stopped at."""
        role = self.inventory.vars.get("aws_fis_role_arn", "")
        if not role.startswith("arn:"):
            raise ValueError(
                "the stack's outputs name no FIS role (aws_fis_role_arn): run "
                "`dcdrill lab up` again, so that `pulumi up` creates it"
            )
        token = aws_fis.new_token()
        undo.add(region=region, fis=[token], **noted)
        request = aws_fis.template(fault, token, role, self._stack_tag, *targets_action)
        return aws_fis.start(self._client("fis", region), request)

    def power_loss(self, dc: str, undo: Undo) -> dict:
        """Without SkipOsShutdown, even a forced stop lets the OS shut down and flush its page
        cache. FIS's stop-instances has no such option: the driver stops them itself."""
        ids = self._owned_instances(dc)
        undo.add(region=self._region(dc), start=ids)
        ec2 = self._client("ec2", self._region(dc))
        ec2.stop_instances(InstanceIds=ids, Force=True, SkipOsShutdown=True)
        acted = now_ms()  # stopping without an OS shutdown: the DC is dark from here
        ec2.get_waiter("instance_stopped").wait(InstanceIds=ids, WaiterConfig=WAIT)  # the fault is the stopped DC
        return {"instances": ids, "acted_ms": acted}

    def _run(self, region: str, instance: str, what: str, commands: list[str], timeout_s: float = 300) -> str:
        """Run a shell script on one instance through SSM and wait for it; its output, or raise if it fails."""
        ssm = self._client("ssm", region)
        cmd = ssm.send_command(
            InstanceIds=[instance], DocumentName=RUN_SHELL, Comment=COMMENT, Parameters={"commands": commands}
        )["Command"]["CommandId"]
        return self._result(ssm, cmd, instance, what, timeout_s)

    def _run_all(self, region: str, instances: list[str], what: str, commands: list[str]) -> None:
        """One shell script on several instances through SSM, each instance's result read and checked."""
        ssm = self._client("ssm", region)
        cmd = ssm.send_command(
            InstanceIds=instances, DocumentName=RUN_SHELL, Comment=COMMENT, Parameters={"commands": commands}
        )["Command"]["CommandId"]
        for instance in instances:
            self._result(ssm, cmd, instance, what)

    @staticmethod
    def _result(ssm, cmd: str, instance: str, what: str, timeout_s: float = 300) -> str:
        """Wait for one instance's invocation of a command: its output, or RuntimeError naming how it
        ended. Right after SendCommand, SSM answers InvocationDoesNotExist for a while: asked again."""
        from botocore.exceptions import ClientError

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                inv = ssm.get_command_invocation(CommandId=cmd, InstanceId=instance)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "InvocationDoesNotExist" or time.monotonic() > deadline:
                    raise
                inv = {"Status": "Pending"}
            if inv["Status"] == "Success":
                return inv.get("StandardOutputContent", "")
            if (
                inv["Status"] in ("Failed", "Cancelled", "TimedOut", "Undeliverable", "Terminated")
                or time.monotonic() > deadline
            ):
                raise RuntimeError(f"{what} ({instance}): {inv['Status']} {inv.get('StandardErrorContent', '')[:300]}")
            time.sleep(SSM_POLL_S)

    def restart_broker(self, host: InventoryHost, timeout_s: float = 300) -> None:
        self._owned_instances(host.dc, ("kafka_broker",))
        self._run(
            self._region(host.dc),
            host.address,
            f"restarting kafka on {host.name}",
            ["systemctl restart kafka"],
            timeout_s,
        )

    def mirror_log(self, host: InventoryHost, needles: list[str]) -> list[str]:
        # SSM returns at most 24,000 characters of output: only the matching lines cross.
        files = " ".join(mirror_log_files(self.inventory.vars["data_root"]))  # infra/aws/plan.py's data_root
        pattern = " ".join(f"-e {shlex.quote(n)}" for n in needles)
        out = self._run(
            self._region(host.dc),
            host.address,
            f"reading MirrorMaker 2's log on {host.name}",
            [f"for f in {files}; do [ -f $f ] && grep -h -F {pattern} $f; done; true"],
        )
        return out.splitlines()

    def kill_mirror(self, host: InventoryHost, undo: Undo) -> dict:
        if host.address not in self._owned_instances(host.dc, ("kafka_mirror",)):
            raise RuntimeError(f"{host.name} ({host.address}) is not one of the stack's MirrorMaker 2 instances")
        region = self._region(host.dc)
        undo.add(region=region, mirrors=[{"host": host.name, "instance": host.address}])
        self._run(region, host.address, f"killing MirrorMaker 2 on {host.name}", KILL_MIRROR)
        return {"hosts": [host.name], "instances": [host.address]}

    # -- networks -----------------------------------------------------------------------------
    def isolate_dc(self, dc: str, direction: str, undo: Undo) -> dict:
        self.check_direction(direction)
        region = self._region(dc)
        sn = self._owned_subnet(dc)
        ec2 = self._client("ec2", region)
        # Noted before the first change: heal puts the subnet back on this ACL (if FIS did not)
        # and deletes every isolation ACL made for it (found by its tags), whatever step a crash
        # stopped at.
        iso = {
            "subnet": sn["SubnetId"],
            "vpc": sn["VpcId"],
            "original_acl": self._subnet_acl(ec2, sn["SubnetId"])["NetworkAclId"],
        }
        if direction == "both":
            exp, acted = self._through_fis(
                region, ISOLATE_DC, undo, aws_fis.disrupt_subnet(sn["SubnetArn"], self.fault_limit_s), isolations=[iso]
            )
            return {"direction": direction, "subnet": sn["SubnetId"], "fis_experiment": exp, "acted_ms": acted}
        undo.add(region=region, isolations=[iso])
        acl = ec2.create_network_acl(
            VpcId=sn["VpcId"],
            TagSpecifications=[
                {
                    "ResourceType": "network-acl",
                    "Tags": [
                        {"Key": "Name", "Value": f"dcdrill-isolate-{dc}"},
                        {"Key": "cluster", "Value": self._cluster(dc)},
                        {"Key": "dcdrill", "Value": "isolation"},
                        {"Key": ISOLATES, "Value": sn["SubnetId"]},
                        *([{"Key": STACK_TAG, "Value": self._stack_tag}] if self._stack_tag else []),
                    ],
                }
            ],
        )["NetworkAcl"]["NetworkAclId"]
        # A new NACL denies everything both ways: a one-way cut allows the other direction back.
        ec2.create_network_acl_entry(
            NetworkAclId=acl,
            RuleNumber=100,
            Protocol="-1",
            RuleAction="allow",
            Egress=direction == "ingress",
            CidrBlock="0.0.0.0/0",
        )
        self._associate(ec2, sn["SubnetId"], acl)
        return {"direction": direction, "subnet": sn["SubnetId"], "acl": acl}

    @staticmethod
    def _subnet_acl(ec2, subnet: str) -> dict:
        return ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])[
            "NetworkAcls"
        ][0]

    def _associate(self, ec2, subnet: str, acl: str) -> None:
        """Move `subnet` onto `acl`, unless it is there already (a heal run twice)."""
        current = self._subnet_acl(ec2, subnet)
        if current["NetworkAclId"] != acl:
            assoc = next(a for a in current["Associations"] if a["SubnetId"] == subnet)
            ec2.replace_network_acl_association(AssociationId=assoc["NetworkAclAssociationId"], NetworkAclId=acl)

    def _heal_isolation(self, ec2, iso: dict) -> None:
        """Live state first: the subnet back on its own ACL, then every isolation ACL made for it,
        now unassociated, deleted. Each step is a no-op when already done."""
        self._associate(ec2, iso["subnet"], iso["original_acl"])
        made = ec2.describe_network_acls(
            Filters=[
                {"Name": "tag:dcdrill", "Values": ["isolation"]},
                {"Name": f"tag:{ISOLATES}", "Values": [iso["subnet"]]},
                *([{"Name": f"tag:{STACK_TAG}", "Values": [self._stack_tag]}] if self._stack_tag else []),
            ]
        )
        for acl in made["NetworkAcls"]:
            if not acl["Associations"]:
                ec2.delete_network_acl(NetworkAclId=acl["NetworkAclId"])

    def degrade_link(
        self, dc: str, other_dc: str, latency_ms: float, jitter_ms: float, loss_pct: float, undo: Undo
    ) -> dict:
        sides = {dc: self._owned_subnet(other_dc)["CidrBlock"], other_dc: self._owned_subnet(dc)["CidrBlock"]}
        for side, cidr in sides.items():
            ids = self._owned_instances(side, SHAPED_ROLES)
            undo.add(netem=[{"region": self._region(side), "instances": ids}])
            self._run_all(
                self._region(side),
                ids,
                f"shaping {side}'s traffic to {cidr}",
                netem_script(cidr, latency_ms, jitter_ms, loss_pct),
            )
        return {"sides": sorted(sides)}

    def undo_problems(self, undo: dict) -> list[str]:
        """Each entry against the stack's outputs: its regions, its instances (by host), the
        subnets it made. FIS tokens are only named: their experiments are found by tag."""
        regions = set(self.inventory.vars.get("aws_regions", {}).values())
        instances = {h.address: h.name for h in self.inventory.hosts()}
        subnets = set(self.inventory.vars.get("aws_subnet_ids", {}).values())
        out = [f"{key}: not a change an AWS fault makes" for key in sorted(set(undo) - set(UNDO_KEYS))]
        if "region" in undo and undo["region"] not in regions:
            out.append(f"region {undo['region']!r}: not one of this stack's")
        for key in ("services", "start"):
            out += [f"{key} {i!r}: not an instance of this stack" for i in undo.get(key) or [] if i not in instances]
        for m in undo.get("mirrors") or []:
            if not isinstance(m, dict) or instances.get(m.get("instance")) != m.get("host"):
                out.append(f"mirrors {m!r}: not a MirrorMaker 2 host of this stack")
        for iso in undo.get("isolations") or []:
            if not isinstance(iso, dict) or iso.get("subnet") not in subnets:
                out.append(f"isolations {iso!r}: not a subnet of this stack")
        for side in undo.get("netem") or []:
            if not isinstance(side, dict) or side.get("region") not in regions:
                out.append(f"netem {side!r}: not a region of this stack")
                continue
            out += [
                f"netem {i!r}: not an instance of this stack" for i in side.get("instances") or [] if i not in instances
            ]
        out += [f"fis {t!r}: not a token dcdrill makes" for t in undo.get("fis") or [] if not FIS_TOKEN.match(str(t))]
        return out

    def _recheck_owned(self, undo: dict) -> None:
        """Before heal changes anything: every instance and subnet the undo names is still tagged as
        this stack's, in the account now (a resource retagged or replaced since the fault is not)."""
        dc_of = {h.address: h.dc for h in self.inventory.hosts()}
        named = {i for key in ("services", "start") for i in undo.get(key) or []}
        named |= {m["instance"] for m in undo.get("mirrors") or []}
        by_region = {undo["region"]: set(named)} if named else {}
        for side in undo.get("netem") or []:
            by_region.setdefault(side["region"], set()).update(side["instances"])
        for region, ids in by_region.items():
            found = {
                i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                for r in self._client("ec2", region).describe_instances(InstanceIds=sorted(ids))["Reservations"]
                for i in r["Instances"]
            }
            for i in sorted(ids):
                if not self._ours(found.get(i, {}), dc_of[i]):
                    raise RuntimeError(
                        f"instance {i} is no longer tagged {self._expected(dc_of[i])} (tags: {found.get(i, {})}): "
                        "heal changed nothing; check the account, then heal again"
                    )
        subnet_dc = {v: k for k, v in self.inventory.vars.get("aws_subnet_ids", {}).items()}
        for iso in undo.get("isolations") or []:
            [sn] = self._client("ec2", undo["region"]).describe_subnets(SubnetIds=[iso["subnet"]])["Subnets"]
            tags = {t["Key"]: t["Value"] for t in sn.get("Tags", [])}
            if not self._ours(tags, subnet_dc[iso["subnet"]]):
                raise RuntimeError(
                    f"subnet {iso['subnet']} is no longer tagged {self._expected(subnet_dc[iso['subnet']])} "
                    f"(tags: {tags}): heal changed nothing; check the account, then heal again"
                )

    def undo(self, undo: dict) -> None:
        """Every step re-checks the live state, so a heal interrupted anywhere is finished by the next.
        FIS's experiments end first: their own undo runs, and what it left is put back after."""
        self._recheck_owned(undo)
        for token in undo.get("fis") or []:
            aws_fis.end(self._client("fis", undo["region"]), token)
        for m in undo.get("mirrors") or []:
            self._run(undo["region"], m["instance"], f"starting MirrorMaker 2 on {m['host']}", START_MIRROR)
        if undo.get("services"):
            self._run_all(undo["region"], undo["services"], "starting the DC's services", START_SERVICES)
        if undo.get("start"):
            ec2 = self._client("ec2", undo["region"])
            # An instance still stopping cannot be started (IncorrectInstanceState): wait for stopped first.
            states = {
                i["InstanceId"]: i["State"]["Name"]
                for r in ec2.describe_instances(InstanceIds=undo["start"])["Reservations"]
                for i in r["Instances"]
            }
            if stopping := sorted(i for i, st in states.items() if st in ("stopping", "shutting-down")):
                ec2.get_waiter("instance_stopped").wait(InstanceIds=stopping, WaiterConfig=WAIT)
            if down := sorted(i for i, st in states.items() if st != "running"):
                ec2.start_instances(InstanceIds=down)
            ec2.get_waiter("instance_running").wait(InstanceIds=undo["start"], WaiterConfig=WAIT)
        for iso in undo.get("isolations") or []:
            self._heal_isolation(self._client("ec2", undo["region"]), iso)
        for side in undo.get("netem") or []:
            self._run_all(side["region"], side["instances"], "removing the link shaping", HEAL_NETEM)

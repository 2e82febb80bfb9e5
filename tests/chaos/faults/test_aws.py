"""The AWS fault driver against moto (in-process): every fault and its heal, on the instances and
subnets the stack's own outputs list. Heal leaves the account as it was, and a second stack with
the very same tags in the same region is never touched."""

import json

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.fis.models import fis_backends

from dcdrill.chaos.faults import actions, aws_fis
from dcdrill.chaos.faults.aws import AwsFaults
from dcdrill.infra import ansible, stack
from dcdrill.infra.aws import plan
from dcdrill.infra.aws.backend import CREDENTIALS, AwsBackend
from dcdrill.record import DrillRecord
from tests import iam_model

STACK = "aws-3az-tiebreaker"
REGION = "eu-west-1"
BUCKET = "stack-bucket-0a1b2c3"


STACK_TAG = f"dcdrill/{STACK}"  # what the program's providers tag every resource with
FIS_ROLE = "arn:aws:iam::123456789012:role/fis-role-0a1b2c3"  # program.FaultInjectionRole's, as outputs name it
FIS_UNDO: dict = {}  # experiment id -> what FIS does when it ends
FIS_STARTUP_S = 0.2
FIS_STARTED: dict = {}  # experiment id -> when its actions started, in ms, as GetExperiment says


def with_fis_effects(client, service: str, region: str):
    """moto keeps FIS's templates and experiments but acts on nothing: here its two actions act on
    moto's EC2 as AWS documents them. stop-instances stops the targets and starts them when the
    experiment ends; disrupt-connectivity (scope all) swaps the subnet onto a deny-all ACL tagged
    managedByFIS, and puts it back and deletes that ACL when the experiment ends."""
    if service != "fis":
        return client
    ec2, fis = boto3.client("ec2", region_name=region), boto3.client("fis", region_name=region)

    def started(parsed, **kw):
        exp = parsed["experiment"]
        # moto ends an experiment as soon as it runs; AWS holds it for the action's duration
        # (minutes): here it runs until stopped.
        held = fis_backends[DEFAULT_ACCOUNT_ID][region].experiments[exp["id"]]
        held._transitions = [("pending", "initiating"), ("initiating", "running"), ("stopping", "stopped")]
        # FIS starts the actions after its start-up (30 s or more on AWS; here a few ms), on its clock.
        held.start_time += FIS_STARTUP_S
        FIS_STARTED[exp["id"]] = round(held.start_time * 1000)
        t = fis.get_experiment_template(id=exp["experimentTemplateId"])["experimentTemplate"]
        actions = list(t["actions"].values())
        assert all(len(target["resourceArns"]) <= aws_fis.MAX_TARGET_ARNS for target in t["targets"].values())
        if actions[0]["actionId"] == aws_fis.STOP_INSTANCES:  # one action per target of at most 5
            ids = [
                arn.split("/")[-1] for a in actions for arn in t["targets"][a["targets"]["Instances"]]["resourceArns"]
            ]
            ec2.stop_instances(InstanceIds=ids)
            FIS_UNDO[exp["id"]] = lambda: ec2.start_instances(InstanceIds=ids)
            return
        [action], [target] = actions, t["targets"].values()
        ids = [arn.split("/")[-1] for arn in target["resourceArns"]]
        assert action["actionId"] == aws_fis.DISRUPT_CONNECTIVITY and action["parameters"]["scope"] == "all"
        [subnet] = ids
        vpc = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["VpcId"]
        [own] = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])[
            "NetworkAcls"
        ]
        cut = ec2.create_network_acl(
            VpcId=vpc,
            TagSpecifications=[{"ResourceType": "network-acl", "Tags": [{"Key": "managedByFIS", "Value": "true"}]}],
        )["NetworkAcl"]["NetworkAclId"]

        def swap(acl):
            [now] = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])[
                "NetworkAcls"
            ]
            assoc = next(a for a in now["Associations"] if a["SubnetId"] == subnet)["NetworkAclAssociationId"]
            ec2.replace_network_acl_association(AssociationId=assoc, NetworkAclId=acl)

        swap(cut)
        FIS_UNDO[exp["id"]] = lambda: (swap(own["NetworkAclId"]), ec2.delete_network_acl(NetworkAclId=cut))

    def stopped(parsed, **kw):
        FIS_UNDO.pop(parsed["experiment"]["id"], lambda: None)()

    client.meta.events.register("after-call.fis.StartExperiment", started)
    client.meta.events.register("after-call.fis.StopExperiment", stopped)
    return client


def any_ami(ec2) -> str:
    """One of moto's stock images. Filtered: all of them (about 1,300) take seconds to serialize."""
    [image, *_] = ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "name", "Values": ["amzn2-ami-hvm-2.0*"]}])[
        "Images"
    ]
    return image["ImageId"]


def _build_stack(ec2, t, vpc, stack_tag=STACK_TAG):
    """Subnets and instances for every host of the topology, tagged as infra/aws tags them."""
    ids, subnets = {}, {}
    ami = any_ami(ec2)
    for i, dc in enumerate(t.datacenters):
        sn = ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.20.{i * 16}.0/20",
            AvailabilityZone=dc.zone,
            TagSpecifications=[
                {
                    "ResourceType": "subnet",
                    "Tags": [
                        {"Key": "cluster", "Value": t.name},
                        {"Key": "dc", "Value": dc.name},
                        {"Key": plan.STACK_TAG, "Value": stack_tag},
                    ],
                }
            ],
        )
        subnets[dc.name] = sn["Subnet"]["SubnetId"]
    for j, zone in enumerate(sorted({dc.zone for dc in t.datacenters})):  # the SSM endpoints' (no `dc` tag)
        ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.20.{len(t.datacenters) * 16 + j}.0/24",
            AvailabilityZone=zone,
            TagSpecifications=[
                {
                    "ResourceType": "subnet",
                    "Tags": [{"Key": "cluster", "Value": t.name}, {"Key": plan.STACK_TAG, "Value": stack_tag}],
                }
            ],
        )
    for h in t.hosts():
        res = ec2.run_instances(
            ImageId=ami,
            MinCount=1,
            MaxCount=1,
            SubnetId=subnets[h.dc],
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": "cluster", "Value": t.name},
                        {"Key": "dc", "Value": h.dc},
                        {"Key": "role", "Value": h.role},
                        {"Key": plan.STACK_TAG, "Value": stack_tag},
                    ],
                }
            ],
        )
        ids[h.name] = res["Instances"][0]["InstanceId"]
    return ids, subnets


def _listen_to_the_bucket(monkeypatch) -> None:
    """The S3 calls of the fault-state copies (infra/aws/backend.py), recorded as IAM actions."""
    real_bucket = AwsBackend._bucket

    def bucket_listened(inventory, credentials):
        client, name = real_bucket(inventory, credentials)
        client.meta.events.register(
            "before-call", lambda model, **kw: CALLS.add(f"s3:{S3_ACTION.get(model.name, model.name)}")
        )
        return client, name

    monkeypatch.setattr(AwsBackend, "_bucket", staticmethod(bucket_listened))


def _dummy_account(monkeypatch, tmp_path) -> None:
    """moto's dummy credentials and region, a cache of the test's own, no cluster to ask for the
    ISR (none here), FIS polled without waiting, and no SSM command sent yet."""
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "DCDRILL_CACHE": str(tmp_path / "cache"),
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(actions, "isr_snapshot", lambda configuration: None)
    monkeypatch.setattr(aws_fis, "POLL_S", 0.0)
    SENT.clear()


@pytest.fixture
def aws(monkeypatch, tmp_path):
    _dummy_account(monkeypatch, tmp_path)
    monkeypatch.setattr(actions, "wait_converged", lambda **kw: {"waited_s": 0})  # nor to wait on
    real = AwsFaults._client

    def listened(self, service, region):
        client = with_fis_effects(real(self, service, region), service, region)
        client.meta.events.register("provide-client-params.ssm.SendCommand", _sent)
        prefix = client.meta.service_model.signing_name
        client.meta.events.register("before-call", lambda model, **kw: CALLS.add(f"{prefix}:{model.name}"))
        return client

    monkeypatch.setattr(AwsFaults, "_client", listened)
    _listen_to_the_bucket(monkeypatch)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        t = stack.load(STACK)
        ours = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
        twin = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]  # another stack, identical tags
        ids, subnets = _build_stack(ec2, t, ours)
        twin_ids, twin_subnets = _build_stack(ec2, t, twin, stack_tag="dcdrill/another-stack")
        boto3.client("s3", region_name=REGION).create_bucket(  # the stack's bucket
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        inv = plan.inventory(
            t,
            stack.load_config(STACK),
            instance_ids=ids,
            subnet_ids=subnets,
            bucket=BUCKET,
            stack_tag=STACK_TAG,
            fis_role=FIS_ROLE,
        )
        ansible.inventory_path(STACK).parent.mkdir(parents=True)
        ansible.inventory_path(STACK).write_text(inv.to_json())  # what `lab up` leaves for the drill
        cfg = {"stack": STACK, "run_dir": str(tmp_path / "run")}
        yield ec2, cfg, ids, subnets, {"ids": twin_ids, "subnets": twin_subnets}


def account(ec2) -> dict:
    """What a fault may change and heal must put back."""
    states = {
        i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }
    acls = ec2.describe_network_acls()["NetworkAcls"]
    assoc = {a["SubnetId"]: acl["NetworkAclId"] for acl in acls for a in acl["Associations"]}
    fis = boto3.client("fis", region_name=ec2.meta.region_name)
    return {
        "instances": states,
        "associations": assoc,
        "acls": sorted(a["NetworkAclId"] for a in acls),
        "fis_templates": sorted(t["id"] for t in fis.list_experiment_templates()["experimentTemplates"]),
        "fis_running": sorted(
            e["id"] for e in fis.list_experiments()["experiments"] if e["state"]["status"] not in aws_fis.ENDED
        ),
    }


def test_stop_dc_and_a_cut_both_ways_run_as_fis_experiments_that_fis_would_end_by_itself(aws):
    """FIS holds each for the drill's hold plus a grace, so a runner lost mid-drill leaves the DC
    down no longer than that; heal stops the experiment (FIS's own undo) and deletes its template."""
    ec2, cfg, ids, subnets, _ = aws
    before, fis = account(ec2), boto3.client("fis", region_name=REGION)
    cfg = {**cfg, "hold_s": 40}
    out = actions.stop_dc("dc-b", configuration=cfg)
    [tmpl] = fis.list_experiment_templates()["experimentTemplates"]
    t = fis.get_experiment_template(id=tmpl["id"])["experimentTemplate"]
    dc_b = sorted(ids[n] for n in ids if ".dc-b." in n and not n.startswith("c"))
    assert t["roleArn"] == FIS_ROLE and t["stopConditions"] == [{"source": "none"}]
    assert t["actions"]["fault"]["actionId"] == "aws:ec2:stop-instances"
    assert t["actions"]["fault"]["parameters"] == {"startInstancesAfterDuration": "PT6M"}  # 40 s + 300 s, in minutes
    assert [a.split("/")[-1] for a in t["targets"]["instances"]["resourceArns"]] == dc_b == out["instances"]
    assert all(
        a.startswith(f"arn:aws:ec2:{REGION}:123456789012:instance/") for a in t["targets"]["instances"]["resourceArns"]
    )
    assert t["tags"][plan.STACK_TAG] == STACK_TAG and t["tags"]["dcdrill"] == "stop-dc"
    exp = fis.get_experiment(id=out["fis_experiment"])["experiment"]
    assert exp["state"]["status"] == "running" and exp["tags"][plan.STACK_TAG] == STACK_TAG
    assert {i for i, s in account(ec2)["instances"].items() if s == "stopped"} == set(dc_b)
    # The fault's window starts when FIS's actions started, not when the runner asked for them.
    [fault] = DrillRecord(cfg["run_dir"]).faults()
    assert fault["acted_ms"] == FIS_STARTED[out["fis_experiment"]] == out["acted_ms"] > fault["start_ms"]
    actions.heal(configuration=cfg)
    assert DrillRecord(cfg["run_dir"]).faults()[0]["end_ms"] >= fault["acted_ms"]  # FIS's clock ahead: not before
    assert fis.get_experiment(id=out["fis_experiment"])["experiment"]["state"]["status"] == "stopped"
    assert account(ec2) == before

    out = actions.isolate_dc("dc-a", direction="both", configuration={**cfg, "hold_s": 3600})
    [tmpl] = fis.list_experiment_templates()["experimentTemplates"]
    t = fis.get_experiment_template(id=tmpl["id"])["experimentTemplate"]
    assert t["actions"]["fault"]["actionId"] == "aws:network:disrupt-connectivity"
    assert t["actions"]["fault"]["parameters"] == {"duration": "PT65M", "scope": "all"}
    [arn] = t["targets"]["subnet"]["resourceArns"]
    assert arn.endswith(f"subnet/{subnets['dc-a']}") and out["subnet"] == subnets["dc-a"]
    assert account(ec2)["associations"][subnets["dc-a"]] != before["associations"][subnets["dc-a"]]
    actions.heal("dc-a", configuration=cfg)
    assert account(ec2) == before


def test_a_stack_whose_outputs_name_no_fis_role_is_told_to_run_pulumi_up_again(aws):
    ec2, cfg, _, _, _ = aws
    path = ansible.inventory_path(STACK)
    data = json.loads(path.read_text())
    del data["all"]["vars"]["aws_fis_role_arn"]  # a stack brought up before its FIS role existed
    path.write_text(json.dumps(data))
    before = account(ec2)
    with pytest.raises(Exception, match=r"name no FIS role \(aws_fis_role_arn\): run `dcdrill lab up` again"):
        actions.stop_dc("dc-a", configuration=cfg)
    actions.heal(configuration=cfg)
    assert account(ec2) == before


SENT: list = []
S3_ACTION = {"ListObjectsV2": "ListBucket"}  # the IAM action where it differs from the API's name
CALLS: set = set()  # every AWS API call the fault driver made, as IAM actions (ec2:StopInstances)


def _sent(params, **kwargs):
    SENT.append((params["InstanceIds"], params["Parameters"]["commands"]))


def commands():
    """The SSM commands issued, as the requests left boto3: moto's ListCommands adds every instance of
    the region to a command sent without Targets, so it cannot say which instances a command named."""
    return list(SENT)


def test_every_fault_and_its_heal_leave_the_account_as_before(aws):
    ec2, cfg, ids, subnets, twin = aws
    before = account(ec2)
    dc_a = {ids[n] for n in ids if ".dc-a." in n and not n.startswith("c")}

    # A kill is the lab's: every service SIGKILLed (and held down) through SSM; the machines run on.
    actions.kill_dc("dc-a", configuration=cfg)
    assert account(ec2) == before
    actions.heal("dc-a", configuration=cfg)
    kill, start = commands()
    assert set(kill[0]) == set(start[0]) == dc_a  # not dc-a's client, nothing else
    assert "systemctl kill --signal=SIGKILL $u; systemctl stop $u" in kill[1][0]
    assert "for u in zookeeper kafka mirror" in start[1][0] and "systemctl start $u" in start[1][0]
    SENT.clear()

    actions.stop_dc("dc-b", configuration=cfg)
    assert {i for i, s in account(ec2)["instances"].items() if s == "stopped"} == {
        ids[n] for n in ids if ".dc-b." in n and not n.startswith("c")
    }
    actions.heal(configuration=cfg)
    assert account(ec2) == before

    out = actions.kill_tiebreaker(configuration=cfg)
    assert out["target"] == "dc-c" and commands()[0][0] == [ids["zk3.dc-c.dcdrill.internal"]]
    actions.heal(configuration=cfg)
    assert account(ec2) == before
    SENT.clear()

    for direction, allowed in (("both", set()), ("ingress", {True}), ("egress", {False})):
        actions.isolate_dc("dc-b", direction=direction, configuration=cfg)
        now = account(ec2)
        assert {s: a for s, a in now["associations"].items() if a != before["associations"][s]}.keys() == {
            subnets["dc-b"]
        }
        acl = ec2.describe_network_acls(NetworkAclIds=[now["associations"][subnets["dc-b"]]])["NetworkAcls"][0]
        # Stateless: a one-way cut allows the other direction back, and nothing else.
        assert {e["Egress"] for e in acl["Entries"] if e["RuleAction"] == "allow" and e["RuleNumber"] == 100} == allowed
        actions.heal("dc-b", configuration=cfg)
        assert account(ec2) == before, direction

    actions.degrade_link("dc-a", "dc-b", latency_ms=20, loss_pct=5, configuration=cfg)
    actions.heal("dc-a", configuration=cfg)
    issued = commands()
    ab = {ids[n] for n in ids if ".dc-a." in n or ".dc-b." in n}
    assert [set(i) for i, _ in issued] == [
        {ids[n] for n in ids if ".dc-a." in n},
        {ids[n] for n in ids if ".dc-b." in n},  # netem on both sides
        {ids[n] for n in ids if ".dc-a." in n},
        {ids[n] for n in ids if ".dc-b." in n},
    ]  # and its heal
    assert set().union(*(set(i) for i, _ in issued)) == ab
    assert "u32 match ip dst 10.20.16.0/20" in " ".join(issued[0][1]) and "delay 20ms loss 5%" in " ".join(issued[0][1])
    assert all("tc qdisc del" in " ".join(c) for _, c in issued[2:])
    assert account(ec2) == before

    actions.rolling_restart(configuration=cfg)
    restarts = commands()[len(issued) :]
    assert [(i, c) for i, c in restarts] == [
        ([ids[n]], ["systemctl restart kafka"]) for n in sorted(ids) if n.startswith("b")
    ]

    faults = DrillRecord(cfg["run_dir"]).faults()
    assert [f["fault"] for f in faults] == [
        "kill-dc",
        "stop-dc",
        "kill-tiebreaker",
        "isolate-dc",
        "isolate-dc",
        "isolate-dc",
        "degrade-link",
        "rolling-restart",
    ]
    assert all(f["end_ms"] >= f["start_ms"] for f in faults) and not DrillRecord(cfg["run_dir"]).active_faults()
    # The twin stack: same tags, same region, never touched.
    assert all(before["instances"][i] == account(ec2)["instances"][i] == "running" for i in twin["ids"].values())
    assert not any(set(twin["ids"].values()) & set(i) for i, _ in commands())


def test_a_target_whose_tags_disagree_with_the_outputs_is_refused(aws):
    ec2, cfg, ids, _, _ = aws
    ec2.create_tags(Resources=[ids["b1.dc-a.dcdrill.internal"]], Tags=[{"Key": "cluster", "Value": "other"}])
    before = account(ec2)
    with pytest.raises(Exception, match="is not tagged cluster=main, dc=dc-a"):
        actions.kill_dc("dc-a", configuration=cfg)
    assert account(ec2) == before  # nothing stopped


def test_another_stacks_instance_with_the_same_cluster_tags_is_refused_by_its_stack_tag(aws):
    """Four example stacks are all `cluster: main`: the stack tag tells them apart."""
    ec2, cfg, ids, _, twin = aws
    path = ansible.inventory_path(STACK)
    data = json.loads(path.read_text())
    b1 = "b1.dc-a.dcdrill.internal"
    data["all"]["children"]["kafka_broker"]["hosts"][b1]["ansible_host"] = twin["ids"][b1]  # outputs gone wrong
    path.write_text(json.dumps(data))
    before = account(ec2)
    with pytest.raises(Exception, match=rf"is not tagged cluster=main, dc=dc-a, {plan.STACK_TAG}=dcdrill/{STACK}"):
        actions.kill_dc("dc-a", configuration=cfg)
    assert account(ec2) == before


def test_no_cut_covers_a_subnet_of_the_ssm_endpoints(aws):
    """A host's session may ride any zone's SSM interface, which sit in subnets of their own (no
    `dc` tag, infra/aws/network.py): a cut of either kind leaves them on their ACL."""
    ec2, cfg, _, subnets, _ = aws
    before = account(ec2)
    ours = {
        s["SubnetId"]
        for s in ec2.describe_subnets(Filters=[{"Name": f"tag:{plan.STACK_TAG}", "Values": [STACK_TAG]}])["Subnets"]
    }
    endpoint_subnets = ours - set(subnets.values())
    assert len(endpoint_subnets) == len({dc.zone for dc in stack.load(STACK).datacenters})
    for direction in ("ingress", "both"):
        actions.isolate_dc("dc-a", direction=direction, configuration={**cfg, "hold_s": 60})
        now = account(ec2)["associations"]
        assert now[subnets["dc-a"]] != before["associations"][subnets["dc-a"]]  # the cut happened
        assert {s: now[s] for s in endpoint_subnets} == {s: before["associations"][s] for s in endpoint_subnets}
        for tmpl in boto3.client("fis", region_name=REGION).list_experiment_templates()["experimentTemplates"]:
            t = boto3.client("fis", region_name=REGION).get_experiment_template(id=tmpl["id"])["experimentTemplate"]
            targets = [a.split("/")[-1] for tg in t["targets"].values() for a in tg.get("resourceArns", [])]
            assert not set(targets) & endpoint_subnets, targets
        actions.heal(configuration=cfg)
    assert account(ec2) == before


def test_an_isolation_acl_carries_the_stack_tag_its_policy_requires(aws):
    """A one-way cut (FIS cuts both ways only) is the driver's own ACL."""
    ec2, cfg, ids, subnets, _ = aws
    out = actions.isolate_dc("dc-a", direction="egress", configuration=cfg)
    [acl] = ec2.describe_network_acls(NetworkAclIds=[out["acl"]])["NetworkAcls"]
    assert {t["Key"]: t["Value"] for t in acl["Tags"]}[plan.STACK_TAG] == STACK_TAG
    actions.heal(configuration=cfg)


def test_a_fault_failing_halfway_is_still_healed_exactly(aws, monkeypatch):
    ec2, cfg, _, subnets, _ = aws
    before = account(ec2)
    real = AwsFaults._client

    def failing(self, service, region):
        client = real(self, service, region)
        if service == "ec2":

            def boom(**kw):
                raise RuntimeError("throttled")

            client.replace_network_acl_association = boom
        return client

    monkeypatch.setattr(AwsFaults, "_client", failing)
    with pytest.raises(Exception, match="throttled"):
        actions.isolate_dc("dc-b", direction="ingress", configuration=cfg)
    monkeypatch.setattr(AwsFaults, "_client", real)
    assert len(account(ec2)["acls"]) == len(before["acls"]) + 1  # the new ACL exists, unassociated
    actions.heal(configuration=cfg)
    assert account(ec2) == before


def test_unknown_dc_is_refused(aws):
    _, cfg, _, _, _ = aws
    with pytest.raises(ValueError, match="valid: dc-a, dc-b, dc-c"):
        actions.kill_dc("dc-z", configuration=cfg)


def _host_access_calls(monkeypatch) -> None:
    """ssh's tunnel to a host (infra/aws/ssm_tunnel.py), its calls recorded as the driver's are:
    the control's key handed to the host, the session started, and ended at once since no plugin
    is there to carry it (Stubber: the requests checked against the services' models)."""
    from botocore.stub import Stubber

    from dcdrill.infra.aws import ssm_tunnel

    real = boto3.client
    stubs = {}

    def stubbed(name, region_name):
        client = real(name, region_name=region_name)
        prefix = client.meta.service_model.signing_name
        # before-parameter-build: a Stubber answers at before-call, ahead of any other handler there
        client.meta.events.register("before-parameter-build", lambda model, **kw: CALLS.add(f"{prefix}:{model.name}"))
        stubs[name] = Stubber(client)
        if name == "ssm":
            stubs[name].add_response("start_session", {"SessionId": "s-1", "TokenValue": "t", "StreamUrl": "wss://x"})
            stubs[name].add_response("terminate_session", {"SessionId": "s-1"})
        else:
            stubs[name].add_response("send_ssh_public_key", {"RequestId": "r-1", "Success": True})
        stubs[name].activate()
        return client

    monkeypatch.setattr(boto3, "client", stubbed)
    monkeypatch.setattr(ssm_tunnel, "plugin", lambda: None)
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIsUhzzt8dkOa3BIFeC8OkAn6rGyW8AvTqPYlM77nv6q control"
    with pytest.raises(FileNotFoundError):
        ssm_tunnel.open_session("i-0123456789abcdef0", 22, "dcdrill", key, REGION)
    monkeypatch.setattr(boto3, "client", real)
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def _account_preflight_calls() -> None:
    """`drill --check`'s reads of the account (infra/aws/account.py), made as the same role."""
    from dcdrill.infra.aws import account

    def listened(service, region):
        client = account.boto3_client(service, region)
        prefix = client.meta.service_model.signing_name
        client.meta.events.register("before-call", lambda model, **kw: CALLS.add(f"{prefix}:{model.name}"))
        return client

    account.findings(stack.load_deployment(STACK), stack.backend(STACK).config, listened)


def test_the_shipped_iam_policy_allows_exactly_what_the_driver_calls(aws, monkeypatch):
    """infra/aws/fault-driver-policy.json: least privilege, checked against the calls every fault
    and its heal make, and host access's (recorded from boto3 as they leave it)."""
    CALLS.clear()
    test_every_fault_and_its_heal_leave_the_account_as_before(aws)
    test_heal_from_another_runner_reads_the_fault_state_from_the_stacks_bucket(aws)
    test_a_power_loss_stops_the_dcs_instances_without_an_os_shutdown_and_heal_starts_them(aws)
    _host_access_calls(monkeypatch)
    _account_preflight_calls()
    from dcdrill.infra.aws import iam

    policy = iam.fault_driver_policy(STACK_TAG, FIS_ROLE, BUCKET)
    assert all(p not in json.dumps(policy) for p in (iam.PLACEHOLDER, iam.FIS_ROLE_PLACEHOLDER, iam.BUCKET_PLACEHOLDER))
    allowed = set()
    for st in policy["Statement"]:
        assert st["Effect"] == "Allow" and "*" not in json.dumps(st["Action"])
        allowed |= {st["Action"]} if isinstance(st["Action"], str) else set(st["Action"])
        if st["Resource"] == "*":  # only reads may name every resource
            assert all(a.split(":")[1].startswith(("Describe", "Get", "List")) for a in st["Action"]), st["Sid"]
        elif any(k in json.dumps(st["Resource"]) for k in ("instance/", "ec2:", "fis:")):
            # every change to EC2 (every command, key and session on an instance) and every FIS
            # template and experiment is on this stack's tagged resources only
            assert STACK_TAG in json.dumps(st.get("Condition")), st["Sid"]
        elif st["Action"] == "iam:PassRole":  # the stack's FIS role, to FIS only
            assert st["Resource"] == FIS_ROLE and st["Condition"] == {
                "StringEquals": {"iam:PassedToService": "fis.amazonaws.com"}
            }
    # Tags given at creation need ec2:CreateTags and fis:TagResource, which boto3 does not call by
    # name, nor iam:PassRole (FIS checks it when a template names the role); the plugin (Go, not
    # boto3) resumes a session whose stream dropped.
    # FIS's first template in an account makes its service-linked role as the caller; starting an
    # instance whose volumes use a customer key makes a KMS grant for EC2 as the caller.
    fis = (
        {"fis:TagResource", "iam:PassRole", "iam:CreateServiceLinkedRole"}
        if "fis:CreateExperimentTemplate" in CALLS
        else set()
    )
    on_our_behalf = {"kms:CreateGrant"} if "ec2:StartInstances" in CALLS else set()
    called = CALLS | ({"ec2:CreateTags"} if "ec2:CreateNetworkAcl" in CALLS else set()) | fis | on_our_behalf
    called |= {"ssm:ResumeSession"}
    assert called == allowed, (sorted(called - allowed), sorted(allowed - called))
    # Each call allowed on every resource type AWS authorizes it against, under conditions it supports
    assert iam_model.problems(policy, called) == [] and iam_model.lint(policy) == []
    fis_policy = iam.fis_role_policy(STACK_TAG)
    assert iam_model.problems(fis_policy, iam_model.actions(fis_policy)) == [] and iam_model.lint(fis_policy) == []


REPLICATED = "aws-2region-replicated"


@pytest.fixture
def aws_replicated(monkeypatch, tmp_path):
    """aws-2region-replicated in moto: a VPC per region, each DC's subnet and hosts tagged with
    their own cluster, MM2's host in the target's DC, and the inventories `lab up` would write."""
    _dummy_account(monkeypatch, tmp_path)
    real = AwsFaults._client

    def listened(self, service, region):
        client = with_fis_effects(real(self, service, region), service, region)
        client.meta.events.register("provide-client-params.ssm.SendCommand", _sent)
        return client

    monkeypatch.setattr(AwsFaults, "_client", listened)
    _listen_to_the_bucket(monkeypatch)
    with mock_aws():
        config = stack.load_config(REPLICATED)
        d = stack.load_deployment(REPLICATED)
        ids, subnets, clients = {}, {}, {}
        for n, region in enumerate(plan.regions(d)):
            ec2 = clients[region] = boto3.client("ec2", region_name=region)
            vpc = ec2.create_vpc(CidrBlock=f"10.{20 + n}.0.0/16")["Vpc"]["VpcId"]
            ami = any_ami(ec2)
            for dc in (dc for dc in d.datacenters if dc.region == region):
                cluster = d.cluster_of_dc(dc.name).name
                subnets[dc.name] = ec2.create_subnet(
                    VpcId=vpc,
                    CidrBlock=f"10.{20 + n}.0.0/20",
                    AvailabilityZone=dc.zone,
                    TagSpecifications=[
                        {
                            "ResourceType": "subnet",
                            "Tags": [{"Key": "cluster", "Value": cluster}, {"Key": "dc", "Value": dc.name}],
                        }
                    ],
                )["Subnet"]["SubnetId"]
                for h in (h for h in d.hosts() if h.dc == dc.name):
                    ids[h.name] = ec2.run_instances(
                        ImageId=ami,
                        MinCount=1,
                        MaxCount=1,
                        SubnetId=subnets[dc.name],
                        TagSpecifications=[
                            {
                                "ResourceType": "instance",
                                "Tags": [
                                    {"Key": "cluster", "Value": cluster},
                                    {"Key": "dc", "Value": h.dc},
                                    {"Key": "role", "Value": h.role},
                                ],
                            }
                        ],
                    )["Instances"][0]["InstanceId"]
        home = plan.regions(d)[0]
        boto3.client("s3", region_name=home).create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": home}
        )
        outs = plan.inventories(d, config, instance_ids=ids, subnet_ids=subnets, bucket=BUCKET, fis_role=FIS_ROLE)
        for key, data in [
            (None, outs["inventory"]),
            ("west", outs["inventories"]["west"]),
            (ansible.MIRRORS, outs["mirrors"]),
        ]:
            path = ansible.inventory_path(REPLICATED, key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data))
        yield clients, {"stack": REPLICATED, "run_dir": str(tmp_path / "run")}, ids, subnets


def _states(clients) -> dict:
    return {
        i["InstanceId"]: i["State"]["Name"]
        for ec2 in clients.values()
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
    }


def test_replicated_stack_faults_act_on_each_clusters_own_resources(aws_replicated):
    """kill-mirror SIGKILLs MM2 through SSM and holds it down until heal starts it; the target
    DC's power loss stops MM2's instance with the brokers and controllers (not the client), and
    its kill SIGKILLs MM2's unit with theirs; a
    cut of the source DC swaps the subnet that carries east's tags."""
    from dcdrill.chaos.faults import aws as aws_driver

    clients, cfg, ids, subnets = aws_replicated
    before = _states(clients)
    mm = ids["mm1.dc-b.dcdrill.internal"]

    out = actions.kill_mirror(configuration=cfg)
    assert out["target"] == "mm1.dc-b.dcdrill.internal" and out["instances"] == [mm]
    actions.heal(configuration=cfg)
    assert commands() == [([mm], aws_driver.KILL_MIRROR), ([mm], aws_driver.START_MIRROR)]
    assert "systemctl stop mirror" in aws_driver.KILL_MIRROR  # Restart=on-failure must not undo the kill

    actions.power_loss("dc-b", configuration=cfg)
    stopped = {i for i, s in _states(clients).items() if s == "stopped"}
    client = {ids["c2.dc-b.dcdrill.internal"]}
    assert stopped == {ids[n] for n in ids if ".dc-b." in n} - client and mm in stopped
    actions.heal("dc-b", configuration=cfg)
    assert _states(clients) == before
    # A clean stop of dc-b's 6 instances goes through FIS, which takes at most 5 ARNs per target:
    # two actions in one experiment (with_fis_effects checks every target's size)
    fis = {r: boto3.client("fis", region_name=r) for r in clients}
    made = {t["id"] for f in fis.values() for t in f.list_experiment_templates()["experimentTemplates"]}
    actions.stop_dc("dc-b", configuration=cfg)
    [(region, new)] = [
        (r, t["id"])
        for r, f in fis.items()
        for t in f.list_experiment_templates()["experimentTemplates"]
        if t["id"] not in made
    ]
    t = fis[region].get_experiment_template(id=new)["experimentTemplate"]
    arns = [arn for target in t["targets"].values() for arn in target["resourceArns"]]
    assert len(arns) == len(stopped) > aws_fis.MAX_TARGET_ARNS and sorted(t["actions"]) == ["fault", "fault-2"]
    assert {i for i, s in _states(clients).items() if s == "stopped"} == stopped
    actions.heal("dc-b", configuration=cfg)
    assert _states(clients) == before
    SENT.clear()
    actions.kill_dc("dc-b", configuration=cfg)  # through SSM: MM2's unit is among the DC's services
    actions.heal("dc-b", configuration=cfg)
    assert [set(i) for i, _ in commands()] == [{ids[n] for n in ids if ".dc-b." in n} - client] * 2
    assert _states(clients) == before

    west = clients["eu-west-1"]
    original = west.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnets["dc-a"]]}])
    actions.isolate_dc("dc-a", configuration=cfg)
    now = west.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnets["dc-a"]]}])
    assert now["NetworkAcls"][0]["NetworkAclId"] != original["NetworkAcls"][0]["NetworkAclId"]
    actions.heal("dc-a", configuration=cfg)
    again = west.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnets["dc-a"]]}])
    assert again["NetworkAcls"][0]["NetworkAclId"] == original["NetworkAcls"][0]["NetworkAclId"]
    assert [f["fault"] for f in DrillRecord(cfg["run_dir"]).faults()] == [
        "kill-mirror",
        "power-loss",
        "stop-dc",
        "kill-dc",
        "isolate-dc",
    ]

    # MM2's log is read where it lives, through SSM, and only the matching lines come back.
    SENT.clear()
    drv = actions.driver(cfg)
    assert drv.mirror_log(drv.inventory.hosts("kafka_mirror")[0], ["Rebalance started"]) == []  # moto runs nothing
    [(instances, script)] = commands()
    assert instances == [mm] and "grep -h -F -e 'Rebalance started' $f" in script[0]
    assert "/var/lib/dcdrill/mirror/mirror.log.2" in script[0]


def test_replicated_stack_refuses_a_mirror_host_tagged_for_another_cluster(aws_replicated):
    clients, cfg, ids, _ = aws_replicated
    mm = ids["mm1.dc-b.dcdrill.internal"]
    clients["eu-central-1"].create_tags(Resources=[mm], Tags=[{"Key": "cluster", "Value": "east"}])
    with pytest.raises(Exception, match="is not tagged cluster=west, dc=dc-b"):
        actions.kill_mirror(configuration=cfg)
    assert not commands()  # nothing was sent to the instance


def test_the_experiments_aws_secrets_are_the_drivers_credentials(aws):
    """Chaos Toolkit's `secrets`: every fault action of a composed experiment asks for the `aws`
    target, and the AWS driver signs with what it holds (empty values: boto3's own chain)."""
    from dcdrill.chaos import experiment

    _, cfg, _, _, _ = aws
    composed = experiment.compose("kill-dc")
    assert set(composed["secrets"]["aws"]) >= set(CREDENTIALS)
    assert all(a["provider"]["secrets"] == ["aws"] for a in experiment.fault_activities(composed))
    given = actions.driver(
        cfg, {"aws_access_key_id": "AKIAGIVEN", "aws_secret_access_key": "s3cret", "aws_session_token": ""}
    )
    creds = given._client("ec2", REGION)._request_signer._credentials
    assert (creds.access_key, creds.secret_key) == ("AKIAGIVEN", "s3cret")
    chained = actions.driver(cfg, {"aws_access_key_id": "", "aws_secret_access_key": ""})
    plain = boto3.client("ec2", region_name=REGION)._request_signer._credentials.access_key  # boto3's own chain
    assert chained._client("ec2", REGION)._request_signer._credentials.access_key == plain != "AKIAGIVEN"


MUTATING = {
    "StopInstances",
    "StartInstances",
    "CreateNetworkAcl",
    "CreateNetworkAclEntry",
    "ReplaceNetworkAclAssociation",
    "DeleteNetworkAcl",
    "SendCommand",
    "CreateExperimentTemplate",
    "StartExperiment",
    "StopExperiment",
    "DeleteExperimentTemplate",
}


class Crash(BaseException):
    """The runner dying mid-call (not an Exception: nothing in the driver may catch it)."""


def crashing_at(monkeypatch, n: int) -> dict:
    """Every AWS client the driver makes dies at its n-th changing call, before AWS gets it."""
    real, seen = AwsFaults._client, {"calls": 0}

    def client(self, service, region):
        c = real(self, service, region)  # the fixture's: FIS acts on moto's EC2

        def count(model, **kw):
            if model.name in MUTATING:
                seen["calls"] += 1
                if seen["calls"] == n:
                    raise Crash(model.name)

        c.meta.events.register("before-call", count)
        return c

    monkeypatch.setattr(AwsFaults, "_client", client)
    return seen


FAULTS = {
    "kill-dc": lambda cfg: actions.kill_dc("dc-a", configuration=cfg),
    "stop-dc": lambda cfg: actions.stop_dc("dc-a", configuration=cfg),  # through FIS
    "isolate-dc": lambda cfg: actions.isolate_dc("dc-b", direction="ingress", configuration=cfg),
    "isolate-dc-both": lambda cfg: actions.isolate_dc("dc-b", direction="both", configuration=cfg),  # FIS
    "slow-link": lambda cfg: actions.degrade_link("dc-a", "dc-b", latency_ms=20, configuration=cfg),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_or_a_heal_crashing_at_any_step_is_finished_by_dcdrill_heal(aws, monkeypatch, fault):
    """The runner dies at each changing call of the fault in turn, then of its heal: `dcdrill heal`
    (recovery.heal_stack, from the record alone) leaves the account as before, and says so twice."""
    from dcdrill.chaos.faults import recovery

    ec2, cfg, _, _, _ = aws
    before, real = account(ec2), AwsFaults._client
    record = DrillRecord(cfg["run_dir"])
    steps = {"fault": 0, "heal": 0}
    for phase in ("fault", "heal"):
        n = 1
        while True:
            seen = crashing_at(monkeypatch, n if phase == "fault" else 10_000)
            try:
                FAULTS[fault](cfg)
            except Crash:
                pass
            if phase == "heal":
                seen = crashing_at(monkeypatch, n)
                try:
                    recovery.heal_stack(STACK, say=lambda line: None)
                except Crash:
                    pass
            crashed = seen["calls"] >= n
            monkeypatch.setattr(AwsFaults, "_client", real)
            recovery.heal_stack(STACK, say=lambda line: None)
            assert account(ec2) == before, (phase, n)
            assert not record.active_faults() and recovery.heal_stack(STACK, say=lambda line: None) == []
            if not crashed:
                break
            steps[phase], n = n, n + 1
    assert steps["fault"] >= 1 and steps["heal"] >= 1, steps  # every step of both was crashed at


def test_heal_from_another_runner_reads_the_fault_state_from_the_stacks_bucket(aws):
    """The runner that drilled is gone with its record: `dcdrill heal` on another one (the stack's
    inventory, as Pulumi's outputs give it) finds the fault in the bucket and undoes it."""
    import shutil

    from dcdrill.chaos.faults import recovery
    from dcdrill.infra.observe import open_drills

    ec2, cfg, ids, _, _ = aws
    before = account(ec2)
    actions.kill_dc("dc-a", configuration=cfg)
    actions.isolate_dc("dc-b", configuration=cfg)
    s3 = boto3.client("s3", region_name=REGION)
    [kept] = s3.list_objects_v2(Bucket=BUCKET, Prefix="dcdrill/fault-states/")["Contents"]
    assert kept["Key"].startswith("dcdrill/fault-states/run-")
    shutil.rmtree(cfg["run_dir"])
    open_drills.forget_all(STACK)
    assert account(ec2) != before
    assert sorted(recovery.left_behind(STACK)) == [
        f"isolate-dc dc-b (kept outside the record as {kept['Key'].split('/')[-1][:-5]})",
        f"kill-dc dc-a (kept outside the record as {kept['Key'].split('/')[-1][:-5]})",
    ]
    done = recovery.heal_stack(STACK, say=lambda line: None)
    assert sorted(done) == ["isolate-dc dc-b", "kill-dc dc-a"]
    assert account(ec2) == before
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="dcdrill/fault-states/")
    assert recovery.heal_stack(STACK, say=lambda line: None) == [] and recovery.left_behind(STACK) == []


def test_a_power_loss_stops_the_dcs_instances_without_an_os_shutdown_and_heal_starts_them(aws):
    ec2, cfg, ids, subnets, twin = aws
    before, stops = account(ec2), []
    real = AwsFaults._client

    def stopped(self, service, region):
        client = real(self, service, region)
        client.meta.events.register(
            "provide-client-params.ec2.StopInstances", lambda params, **kw: stops.append(params)
        )
        return client

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(AwsFaults, "_client", stopped)
        out = actions.power_loss("dc-a", configuration=cfg)
        assert stops == [{"InstanceIds": out["instances"], "Force": True, "SkipOsShutdown": True}]
        assert {i for i, s in account(ec2)["instances"].items() if s == "stopped"} == {
            ids[n] for n in ids if ".dc-a." in n and not n.startswith("c")
        }
        actions.kill_dc("dc-b", configuration=cfg)  # a kill stops no instance: it SIGKILLs the services
        assert len(stops) == 1
    actions.heal(configuration=cfg)
    assert account(ec2) == before


def test_heal_rechecks_each_resources_tags_before_changing_it(aws):
    """An instance or subnet retagged since the fault (handed to another stack, say) is left alone:
    heal changes nothing, says which, and heals once the tags are the stack's again."""
    ec2, cfg, ids, subnets, _ = aws
    before = account(ec2)
    power = actions.power_loss("dc-a", configuration=cfg)
    stopped = account(ec2)
    moved = power["instances"][0]
    ec2.create_tags(Resources=[moved], Tags=[{"Key": "cluster", "Value": "other"}])
    with pytest.raises(Exception, match=rf"instance {moved} is no longer tagged cluster=main, dc=dc-a"):
        actions.heal(configuration=cfg)
    assert account(ec2)["instances"] == stopped["instances"]  # nothing started
    ec2.create_tags(Resources=[moved], Tags=[{"Key": "cluster", "Value": "main"}])
    actions.heal(configuration=cfg)
    assert account(ec2) == before

    actions.isolate_dc("dc-b", direction="egress", configuration=cfg)
    cut = account(ec2)
    ec2.create_tags(Resources=[subnets["dc-b"]], Tags=[{"Key": plan.STACK_TAG, "Value": "dcdrill/another-stack"}])
    with pytest.raises(Exception, match=rf"subnet {subnets['dc-b']} is no longer tagged"):
        actions.heal(configuration=cfg)
    assert account(ec2) == cut  # the subnet still on the isolation ACL, which still exists
    ec2.create_tags(Resources=[subnets["dc-b"]], Tags=[{"Key": plan.STACK_TAG, "Value": STACK_TAG}])
    actions.heal(configuration=cfg)
    assert account(ec2) == before

"""The chaos AWS driver against moto (in-process): only the target DC stops, and the network
ACL swap is restored exactly."""
import boto3
import pytest
from moto import mock_aws

from chaos.aws import actions
from spark.record import read_faults

REGION = "eu-west-1"


@pytest.fixture
def aws(monkeypatch, tmp_path):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
        ami = ec2.describe_images()["Images"][0]["ImageId"]
        world = {"subnets": {}, "instances": {}, "vpc": vpc}
        for i, dc in enumerate(("dc-a", "dc-b", "dc-c")):
            sn = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{i * 16}.0/20", AvailabilityZone=f"{REGION}{'abc'[i]}",
                                   TagSpecifications=[{"ResourceType": "subnet", "Tags": [
                                       {"Key": "cluster", "Value": "main"}, {"Key": "dc", "Value": dc}]}])
            world["subnets"][dc] = sn["Subnet"]["SubnetId"]
            for role, n in (("kafka_broker", 0 if dc == "dc-c" else 2), ("zookeeper", 1), ("client", 1)):
                if not n:
                    continue
                res = ec2.run_instances(ImageId=ami, MinCount=n, MaxCount=n, SubnetId=sn["Subnet"]["SubnetId"],
                                        TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                            {"Key": "cluster", "Value": "main"}, {"Key": "dc", "Value": dc},
                                            {"Key": "role", "Value": role}]}])
                world["instances"].setdefault(dc, {})[role] = [x["InstanceId"] for x in res["Instances"]]
        cfg = {"stack": "aws-3az-tiebreaker", "run_dir": str(tmp_path / "run"), "aws_region": REGION}
        yield ec2, world, cfg


def states(ec2):
    out = {}
    for r in ec2.describe_instances()["Reservations"]:
        for i in r["Instances"]:
            out[i["InstanceId"]] = i["State"]["Name"]
    return out


def acl_of(ec2, subnet):
    acls = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])["NetworkAcls"]
    return acls[0]["NetworkAclId"]


def test_kill_dc_stops_only_that_dcs_brokers_and_zookeeper(aws):
    ec2, world, cfg = aws
    result = actions.kill_dc("dc-a", configuration=cfg)
    target = set(world["instances"]["dc-a"]["kafka_broker"] + world["instances"]["dc-a"]["zookeeper"])
    assert set(result["instances"]) == target
    st = states(ec2)
    assert {i for i, s in st.items() if s == "stopped"} == target  # not dc-a's client, nothing in dc-b/dc-c
    actions.heal_dc("dc-a", configuration=cfg)
    assert all(s == "running" for s in states(ec2).values())
    faults = read_faults(cfg["run_dir"])
    assert [(f["fault"], f["target"], bool(f["end_ms"])) for f in faults] == [("kill-dc", "dc-a", True)]


def test_isolation_swaps_the_nacl_and_heal_restores_exactly(aws):
    ec2, world, cfg = aws
    before = {dc: acl_of(ec2, sn) for dc, sn in world["subnets"].items()}
    acls_before = {a["NetworkAclId"] for a in ec2.describe_network_acls()["NetworkAcls"]}
    actions.isolate_dc("dc-b", configuration=cfg)
    during = {dc: acl_of(ec2, sn) for dc, sn in world["subnets"].items()}
    assert during["dc-a"] == before["dc-a"] and during["dc-c"] == before["dc-c"]
    assert during["dc-b"] != before["dc-b"]
    deny = ec2.describe_network_acls(NetworkAclIds=[during["dc-b"]])["NetworkAcls"][0]
    assert not [e for e in deny["Entries"] if e["RuleAction"] == "allow"]  # deny-all
    actions.heal_dc("dc-b", configuration=cfg)
    assert {dc: acl_of(ec2, sn) for dc, sn in world["subnets"].items()} == before
    assert {a["NetworkAclId"] for a in ec2.describe_network_acls()["NetworkAcls"]} == acls_before  # deny ACL gone


def test_unknown_dc_is_refused(aws):
    _, _, cfg = aws
    with pytest.raises(ValueError, match="valid: dc-a, dc-b, dc-c"):
        actions.kill_dc("dc-z", configuration=cfg)

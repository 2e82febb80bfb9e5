"""The real AWS Pulumi program under pulumi.runtime mocks, for each AWS stack."""

from collections import Counter

import pytest

from dcdrill.infra import stack
from dcdrill.infra.aws import plan
from dcdrill.infra.ports import CLIENT_PORT, MIRROR_REST_PORT
from dcdrill.infra.topology import from_config
from tests.infra.aws.program_mocks import ACCOUNT, WORLD, run_program


@pytest.mark.parametrize("name", ["aws-3az-tiebreaker", "aws-3az", "aws-2region-tiebreaker", "aws-3az-kraft"])
def test_stack_builds_as_described(name):
    mocks, t, inv = run_program(name)
    instances = mocks.of("aws:ec2/instance:Instance")
    assert len(instances) == len(t.hosts())
    per_zone = Counter(i.inputs["availabilityZone"] for i in instances)
    assert per_zone == Counter(t.dc(h.dc).zone for h in t.hosts())
    for i in instances:
        tags = i.inputs["tags"]
        assert set(tags) >= {"cluster", "dc", "az_id", "role", "node_id"}
        assert tags["az_id"] == "az-" + t.dc(tags["dc"]).zone
        assert i.inputs.get("associatePublicIpAddress") is False
    volumes = mocks.of("aws:ebs/volume:Volume")
    assert len(volumes) == t.total_brokers + t.total_voters  # ZooKeeper nodes or KRaft controllers
    assert all(v.inputs["type"] == "gp3" for v in volumes)
    assert len(mocks.of("aws:ec2/volumeAttachment:VolumeAttachment")) == len(volumes)
    records = mocks.of("aws:route53/record:Record")
    assert sorted(r.inputs["name"] for r in records) == sorted(h.name for h in t.hosts())
    zone = mocks.of("aws:route53/zone:Zone")[0]
    assert len(zone.inputs["vpcs"]) == len(plan.regions(t))  # the private zone spans every VPC
    assert len(mocks.of("aws:ec2/vpc:Vpc")) == len(plan.regions(t))
    # a subnet a DC, and one for the SSM endpoints in each zone a region's DCs use
    endpoint_zones = {(dc.region, dc.zone) for dc in t.datacenters}
    assert len(mocks.of("aws:ec2/subnet:Subnet")) == len(t.datacenters) + len(endpoint_zones)
    # inventory: same schema as the lab, ssh as the lab's login user (through SSM: the control adds
    # the tunnel, tests/infra/aws/test_ssm_tunnel.py), instance ids as hosts, each host's region
    b1 = inv["all"]["children"]["kafka_broker"]["hosts"][f"b1.dc-a.{t.domain}"]
    assert inv["all"]["vars"]["ansible_connection"] == "ssh" and inv["all"]["vars"]["ansible_user"] == "dcdrill"
    assert b1["ansible_host"].endswith("-id") and b1["aws_region"] == t.dc("dc-a").region
    assert b1["rack"] == "dc-a" and inv["all"]["vars"]["service_manager"] == "systemd"
    # every instance gets the login user; only the client hosts get the agents' Python
    assert all("useradd --create-home --shell /bin/bash dcdrill" in i.inputs["userData"] for i in instances)
    agents = {n for g in inv["all"]["children"].values() for n, hv in g["hosts"].items() if "dcdrill_agent_dir" in hv}
    assert agents == {h.name for h in t.hosts() if h.role == "client"}


@pytest.mark.parametrize(
    "patch,rule",
    [
        ({"zone": "eu-central-1a"}, "aws-zone-region"),
        ({"zone": None}, "aws-zone-missing"),
    ],
)
def test_bad_aws_input_is_refused_before_any_resource(patch, rule):
    config = stack.load_config("aws-3az-tiebreaker")
    dcs = [dict(d) for d in config["dcdrill:cluster"]["datacenters"]]
    dcs[0].update(patch)
    cluster = {**config["dcdrill:cluster"], "datacenters": dcs}
    with pytest.raises(Exception, match=rule):
        run_program("aws-3az-tiebreaker", {"dcdrill:cluster": cluster})


def test_overlapping_vpc_cidrs_are_refused():
    config = stack.load_config("aws-2region-tiebreaker")
    cfg = {
        **config,
        "dcdrill:aws": {
            "vpcCidrs": {"eu-west-1": "10.20.0.0/16", "eu-central-1": "10.20.128.0/17", "eu-north-1": "10.22.0.0/16"}
        },
    }
    assert [v.rule for v in plan.check(from_config(cfg), cfg)] == ["aws-cidr-overlap"]


@pytest.mark.parametrize("name", ["aws-3az-tiebreaker", "aws-3az", "aws-2region-tiebreaker"])
def test_deployable_and_locked_down(name):
    """Private hosts reach SSM and S3 through endpoints (no NAT, no internet gateway), every disk
    is encrypted, the stack's bucket is private and encrypted, and the stack is secured like
    `local`: TLS, SCRAM, ACLs, and a locked-down ZooKeeper."""
    mocks, t, inv = run_program(name)
    assert t.tls and t.sasl and t.acls and inv["all"]["vars"]["zookeeper_secure"] is True
    assert not mocks.of("aws:ec2/natGateway:NatGateway") and not mocks.of("aws:ec2/internetGateway:InternetGateway")
    endpoints = mocks.of("aws:ec2/vpcEndpoint:VpcEndpoint")
    for region in plan.regions(t):
        services = {
            e.inputs["serviceName"]: e.inputs
            for e in endpoints
            if e.inputs["serviceName"].startswith(f"com.amazonaws.{region}.")
        }
        assert set(services) == {f"com.amazonaws.{region}.{s}" for s in ("ssm", "ssmmessages", "ec2messages", "s3")}
        assert services[f"com.amazonaws.{region}.s3"]["vpcEndpointType"] == "Gateway"
        ssm = services[f"com.amazonaws.{region}.ssm"]
        assert ssm["privateDnsEnabled"] is True and ssm["subnetIds"]
        # SSM's interfaces in subnets of their own, a zone each, none a DC's (a cut of a DC would
        # break every DC's sessions that ride its zone's interface): no fault names them.
        zones = {dc.zone for dc in t.datacenters if dc.region == region}
        own = {f"{s.name}-id": s.inputs for s in mocks.of("aws:ec2/subnet:Subnet")}
        for service in ("ssm", "ssmmessages", "ec2messages"):
            ids = services[f"com.amazonaws.{region}.{service}"]["subnetIds"]
            assert sorted(own[i]["availabilityZone"] for i in ids) == sorted(zones)
            assert not set(ids) & set(inv["all"]["vars"]["aws_subnet_ids"].values())
            assert all("dc" not in own[i]["tags"] for i in ids)
    for i in mocks.of("aws:ec2/instance:Instance"):
        assert i.inputs["rootBlockDevice"]["encrypted"] is True and i.inputs["associatePublicIpAddress"] is False
    assert all(v.inputs["encrypted"] is True for v in mocks.of("aws:ebs/volume:Volume"))
    [block] = mocks.of("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert all(
        block.inputs[k] is True
        for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    [sse] = mocks.of("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    # No password or private key in Pulumi's state: they live on the controller (0600) and reach
    # the hosts through Ansible (no_log), never as a resource input or a stack output.
    state = repr([r.inputs for r in mocks.resources]) + repr(inv)
    assert "PRIVATE KEY" not in state and "password" not in state.lower()


def test_replicated_stack_builds_both_clusters_and_mirrormaker():
    """aws-2region-replicated: each cluster in its region's VPC (peered), MM2 on its own host in
    the target's DC, each resource tagged with its own cluster, and outputs shaped as the lab's."""
    mocks, d, outs = run_program("aws-2region-replicated", whole=True)
    instances = {i.inputs["tags"]["Name"]: i.inputs for i in mocks.of("aws:ec2/instance:Instance")}
    assert sorted(instances) == sorted(h.name for h in d.hosts())
    mm = instances["mm1.dc-b.dcdrill.internal"]
    assert mm["tags"]["role"] == "kafka_mirror" and mm["tags"]["cluster"] == "west"
    assert mm["availabilityZone"] == "eu-central-1a" and mm["instanceType"] == "m6i.large"
    assert {n: i["tags"]["cluster"] for n, i in instances.items() if ".dc-a." in n} == {
        h.name: "east" for h in d.cluster("east").hosts()
    }
    dc_subnets = [s for s in mocks.of("aws:ec2/subnet:Subnet") if "dc" in s.inputs["tags"]]  # the rest: SSM's
    assert {s.inputs["tags"]["dc"]: s.inputs["tags"]["cluster"] for s in dc_subnets} == {"dc-a": "east", "dc-b": "west"}
    assert (
        len(mocks.of("aws:ec2/vpc:Vpc")) == 2
        and len(mocks.of("aws:ec2/vpcPeeringConnection:VpcPeeringConnection")) == 1
    )
    assert len(mocks.of("aws:ebs/volume:Volume")) == 12  # brokers and controllers; not MM2, not clients
    # MM2 reaches the brokers of both regions: its group in its own region, the other by CIDR.
    rules = [r.inputs for r in mocks.of("aws:ec2/securityGroupRule:SecurityGroupRule")]
    client = [r for r in rules if r["fromPort"] == CLIENT_PORT]
    assert any(r.get("cidrBlocks") == ["10.21.0.0/16"] and "MirrorMaker" in r["description"] for r in client)
    assert sum(bool(r.get("sourceSecurityGroupId")) and "MirrorMaker" in r["description"] for r in client) == 1
    assert all(WORLD not in (r.get("cidrBlocks") or []) for r in rules)
    assert any(r["fromPort"] == MIRROR_REST_PORT for r in rules)
    # Outputs as the lab's: the home cluster's inventory, every cluster's, and MM2's.
    assert set(outs) == {"inventory", "inventories", "mirrors"} and outs["inventory"] == outs["inventories"]["east"]
    west = outs["inventories"]["west"]["all"]
    assert west["vars"]["kafka_broker_custom_properties"] == {"log.message.timestamp.type": "LogAppendTime"}
    assert west["vars"]["aws_regions"] == {"dc-a": "eu-west-1", "dc-b": "eu-central-1"}
    assert set(west["vars"]["aws_subnet_ids"]) == {"dc-a", "dc-b"}
    mirrors = outs["mirrors"]["all"]
    [(name, mm_vars)] = mirrors["children"]["kafka_mirror"]["hosts"].items()
    assert name == "mm1.dc-b.dcdrill.internal" and mirrors["vars"]["ansible_connection"] == "ssh"
    assert mm_vars["aws_region"] == "eu-central-1" and mm_vars["ansible_host"].endswith("-id")
    assert mm_vars["kafka_mirror_flows"] == [{"source": "east", "target": "west"}]
    assert mm_vars["kafka_mirror_replication_factor"] == 3
    assert mirrors["vars"]["service_manager"] == "systemd" and mirrors["vars"]["java_kafka_libs_folder"] == "kafka4"
    assert [c["alias"] for c in mirrors["vars"]["kafka_mirror_clusters"]] == ["east", "west"]


def test_replicated_stack_shares_the_stretched_programs_checks():
    """The AWS checks run over every cluster's DCs at once: a cluster's zone outside its region is
    refused before any resource, and CIDRs for both clusters' regions are not 'unused'."""
    config = stack.load_config("aws-2region-replicated")
    d = stack.deployment_of(config)
    assert plan.check(d, config) == []
    clusters = [dict(c) for c in config["dcdrill:clusters"]]
    clusters[1] = {**clusters[1], "datacenters": [{**clusters[1]["datacenters"][0], "zone": "eu-west-1b"}]}
    with pytest.raises(Exception, match="aws-zone-region"):
        run_program("aws-2region-replicated", {"dcdrill:clusters": clusters})


def test_a_flow_table_lacking_what_the_probes_dial_is_refused_by_plan(monkeypatch, capsys):
    from dcdrill import cli
    from dcdrill.infra import flows

    real = flows.table
    monkeypatch.setattr(flows, "table", lambda d: [f for f in real(d) if f.key != ("client", "zookeeper", 2181)])
    assert cli.main(["plan", "--stack", "aws-3az-tiebreaker"]) == 2
    out = capsys.readouterr()
    assert (
        "[flow-missing] the stack's flow table (infra/flows.py) lacks client -> zookeeper:2181 "
        "(needed by infra/observe/host_probes.py zookeeper_quorum)" in out.out + out.err
    )
    monkeypatch.setattr(flows, "table", real)
    assert cli.main(["plan", "--stack", "aws-3az-tiebreaker"]) == 0


@pytest.mark.parametrize("name", ["aws-3az", "aws-2region-tiebreaker"])
def test_every_resource_carries_the_stack_tag_and_the_fault_drivers_policy_is_conditioned_on_it(name):
    """Four example stacks share `cluster: main`; the stack tag (the providers' default tags)
    tells them apart, and the fault driver's policy allows changes only where it is theirs."""
    import json

    mocks, t, inv = run_program(name)
    tag = f"dcdrill/{name}"
    providers = mocks.of("pulumi:providers:aws")
    assert providers and all(
        json.loads(p.inputs["defaultTags"])["tags"] == {plan.STACK_TAG: tag}
        if isinstance(p.inputs["defaultTags"], str)
        else p.inputs["defaultTags"]["tags"] == {plan.STACK_TAG: tag}
        for p in providers
    )
    assert inv["all"]["vars"]["aws_stack_tag"] == tag  # what the fault driver checks
    # The subnets sit on an ACL of the stack's own (tagged by default), never the VPC's default one.
    acls = mocks.of("aws:ec2/networkAcl:NetworkAcl")
    assert len(acls) == len(plan.regions(t))
    assert sum(len(a.inputs["subnetIds"]) for a in acls) == len(t.datacenters)
    [policy] = mocks.of("aws:iam/policy:Policy")
    doc = json.loads(policy.inputs["policy"])
    swap = next(st for st in doc["Statement"] if st["Action"] == "ec2:ReplaceNetworkAclAssociation")
    assert swap["Condition"] == {"StringEquals": {"aws:ResourceTag/dcdrill-stack": tag}}
    assert "${stackTag}" not in policy.inputs["policy"]


@pytest.mark.parametrize("name", ["aws-3az-tiebreaker", "aws-2region-replicated"])
def test_fis_gets_a_role_of_the_stacks_own_that_only_the_fault_driver_may_pass_to_it(name):
    """stop-dc and a cut both ways run as FIS experiments (chaos/faults/aws_fis.py): FIS assumes a
    role that may act on this stack's tagged instances and subnets only, with ACLs it tags itself."""
    import json

    mocks, _, outs = run_program(name, whole=True)
    tag = f"dcdrill/{name}"
    [role] = [r for r in mocks.of("aws:iam/role:Role") if r.name == "fis-role"]
    arn = f"arn:aws:iam::{ACCOUNT}:role/fis-role-0a1b2c3"
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "fis.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        }
    ]
    [inline] = mocks.of("aws:iam/rolePolicy:RolePolicy")
    for st in json.loads(inline.inputs["policy"])["Statement"]:
        actions = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        if st["Resource"] == "*" or st["Action"] == "ec2:GetManagedPrefixListEntries":  # reads
            assert all(a.split(":")[1].startswith(("Describe", "Get")) for a in actions)
        elif st["Action"] == "kms:CreateGrant":  # for EC2 only, starting a volume with a customer key
            assert st["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}
        else:  # every change is to the stack's own resources, or to the ACLs FIS itself made
            cond = json.dumps(st["Condition"])
            assert (
                tag in cond
                or '"aws:RequestTag/managedByFIS": "true"' in cond
                or '"aws:ResourceTag/managedByFIS": "true"' in cond
            ), st["Sid"]
    [policy] = mocks.of("aws:iam/policy:Policy")
    [passing] = [st for st in json.loads(policy.inputs["policy"])["Statement"] if st["Action"] == "iam:PassRole"]
    assert passing["Resource"] == arn
    inventories = [
        outs["inventory"],
        *outs.get("inventories", {}).values(),
        *([outs["mirrors"]] if "mirrors" in outs else []),
    ]
    assert all(inv["all"]["vars"]["aws_fis_role_arn"] == arn for inv in inventories)


def test_the_stack_attaches_its_fault_driver_policy_to_the_role_named_so_destroy_can_detach_it():
    """issue 69 item 4: a policy the stack owns, attached by hand to the CI role, stops `pulumi
    destroy` (AWS deletes no attached policy). Named in dcdrill:aws.faultDriverRole, the stack
    attaches it itself: the attachment depends on the policy, so destroy removes it first."""
    aws_keys = {**stack.load_config("aws-3az-tiebreaker").get("dcdrill:aws", {}), "faultDriverRole": "github-dcdrill"}
    mocks, _, _ = run_program("aws-3az-tiebreaker", {"dcdrill:aws": aws_keys})
    [attachment] = [
        r for r in mocks.of("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if r.name.startswith("fault")
    ]
    assert attachment.inputs == {
        "role": "github-dcdrill",
        "policyArn": f"arn:aws:iam::{ACCOUNT}:policy/fault-driver-0a1b2c3",
    }
    mocks, _, _ = run_program("aws-3az-tiebreaker")  # unnamed: the policy is the user's to attach
    assert [r.name for r in mocks.of("aws:iam/rolePolicyAttachment:RolePolicyAttachment")] == ["ssm-ssm"]

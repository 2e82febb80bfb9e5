"""The stack config's schema: every malformed stack below exits 2 from `dcdrill plan` naming its
key path, without a traceback and within seconds; the JSON Schema shipped for editors is current
and agrees with the shipped stacks."""

import copy
import json
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from dcdrill import cli
from dcdrill.infra import schema

ROOT = Path(__file__).resolve().parents[2]
LOCAL = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())
AWS = yaml.safe_load((ROOT / "Pulumi.aws-3az.yaml").read_text())
KRAFT = yaml.safe_load((ROOT / "Pulumi.local-kraft.yaml").read_text())


def cluster(**kv):
    return lambda c: c["config"]["dcdrill:cluster"].update(kv)


def dc0(**kv):
    return lambda c: c["config"]["dcdrill:cluster"]["datacenters"][0].update(kv)


def repl(**kv):
    return lambda c: c["config"]["dcdrill:cluster"]["replication"].update(kv)


def lab(**kv):
    return lambda c: c["config"].setdefault("dcdrill:lab", {}).update(kv)


def aws(**kv):
    return lambda c: c["config"].setdefault("dcdrill:aws", {}).update(kv)


def top(**kv):
    return lambda c: c["config"].update({f"dcdrill:{k}": v for k, v in kv.items()})


def acl(**kv):
    return lambda c: c["config"]["dcdrill:cluster"]["acls"].append(
        {"principal": "workload", "resource": "topic", "name": "x", "operations": ["read"], **kv}
    )


# (case, base stack, change, what the error must name)
MALFORMED = [
    (
        "misspelled minInsync",
        LOCAL,
        repl(minInSync=3),
        "dcdrill:cluster.replication.minInSync: unknown key; did you mean 'minInsync'",
    ),
    ("misspelled tls", LOCAL, cluster(tsl=True), "dcdrill:cluster.tsl: unknown key; did you mean 'tls'"),
    (
        "misspelled profile key",
        LOCAL,
        top(profil="consistency-first"),
        "dcdrill:profil: unknown key; did you mean 'dcdrill:profile'",
    ),
    ("unknown profile", LOCAL, top(profile="fast"), "dcdrill:profile: Input should be"),
    ("no profile value", LOCAL, top(profile=None), "dcdrill:profile: Input should be"),
    ("unknown backend", LOCAL, top(backend="gcp"), "dcdrill:backend: Input should be 'local' or 'aws'"),
    (
        "no cluster",
        LOCAL,
        lambda c: c["config"].pop("dcdrill:cluster"),
        "has dcdrill:cluster (one stretched cluster) or dcdrill:clusters",
    ),
    ("cluster is a list", LOCAL, top(cluster=[1, 2]), "dcdrill:cluster: Input should be a valid dictionary"),
    ("cluster is text", LOCAL, top(cluster="main"), "dcdrill:cluster: Input should be a valid dictionary"),
    ("no datacenters", LOCAL, cluster(datacenters=[]), "dcdrill:cluster.datacenters: List should have at least 1 item"),
    (
        "datacenters not a list",
        LOCAL,
        cluster(datacenters={"dc-a": 2}),
        "dcdrill:cluster.datacenters: Input should be a valid list",
    ),
    (
        "a DC is a number",
        LOCAL,
        cluster(datacenters=[3]),
        "dcdrill:cluster.datacenters[0]: Input should be a valid dictionary",
    ),
    (
        "a DC without a name",
        LOCAL,
        lambda c: c["config"]["dcdrill:cluster"]["datacenters"][0].pop("name"),
        "datacenters[0].name: required",
    ),
    (
        "newline in a DC name",
        LOCAL,
        dc0(name="dc-a\nallow.everyone.if.no.acl.found=true"),
        "datacenters[0].name: 'dc-a\\nallow",
    ),
    ("DC name over 28 chars", LOCAL, dc0(name="a" * 29), "datacenters[0].name:"),
    ("upper-case DC name", LOCAL, dc0(name="DC-A"), "datacenters[0].name: 'DC-A' is not a DNS label"),
    ("DC name with a dot", LOCAL, dc0(name="dc.a"), "datacenters[0].name: 'dc.a' is not a DNS label"),
    ("DC name is a number", LOCAL, dc0(name=7), "datacenters[0].name: Input should be a valid string"),
    (
        "repeated DC",
        LOCAL,
        lambda c: c["config"]["dcdrill:cluster"]["datacenters"][1].update(name="dc-a"),
        "dcdrill:cluster.datacenters: DC names must be unique",
    ),
    (
        "brokers as text",
        LOCAL,
        dc0(brokers="two"),
        "datacenters[0].brokers: Input should be a valid integer (got 'two')",
    ),
    (
        "brokers as quoted number",
        LOCAL,
        dc0(brokers="2"),
        "datacenters[0].brokers: Input should be a valid integer (got '2')",
    ),
    ("brokers as float", LOCAL, dc0(brokers=2.5), "datacenters[0].brokers: Input should be a valid integer"),
    ("brokers as bool", LOCAL, dc0(brokers=True), "datacenters[0].brokers: Input should be a valid integer"),
    ("negative brokers", LOCAL, dc0(brokers=-1), "datacenters[0].brokers: Input should be greater than or equal to 0"),
    ("10^8 brokers", LOCAL, dc0(brokers=10**8), "datacenters[0].brokers: Input should be less than or equal to 32"),
    ("10 ZooKeepers", LOCAL, dc0(zookeepers=10), "datacenters[0].zookeepers: Input should be less than or equal to 9"),
    (
        "10 controllers",
        KRAFT,
        dc0(controllers=10),
        "datacenters[0].controllers: Input should be less than or equal to 9",
    ),
    (
        "controllers on a ZooKeeper stack",
        LOCAL,
        dc0(controllers=1),
        "datacenters[0].controllers: a zookeeper stack has no KRaft controllers (dc-a has 1); "
        "give the DC zookeepers instead",
    ),
    (
        "zookeepers on a KRaft stack",
        KRAFT,
        dc0(zookeepers=1),
        "datacenters[0].zookeepers: a kraft stack has no ZooKeeper nodes (dc-a has 1); give the DC controllers instead",
    ),
    (
        "ZooKeeper with 4.x",
        LOCAL,
        cluster(kafkaVersion="4.3.1"),
        "kafkaVersion: Kafka 4.3.1 has no ZooKeeper mode (4.0 removed it)",
    ),
    (
        "KRaft on 3.9",
        KRAFT,
        cluster(kafkaVersion="3.9.1"),
        "kafkaVersion: dcdrill runs KRaft stacks on Kafka 4.x (4.3.1), not 3.9.1",
    ),
    (
        "a version setup does not fetch",
        KRAFT,
        cluster(kafkaVersion="4.0.0"),
        "dcdrill:cluster.kafkaVersion: Input should be '3.9.1' or '4.3.1' (got '4.0.0')",
    ),
    (
        "a version as a number",
        KRAFT,
        cluster(kafkaVersion=4.3),
        "dcdrill:cluster.kafkaVersion: Input should be '3.9.1' or '4.3.1' (got 4.3)",
    ),
    (
        "unknown coordination",
        KRAFT,
        cluster(coordination="etcd"),
        "dcdrill:cluster.coordination: Input should be 'zookeeper' or 'kraft'",
    ),
    (
        "nine DCs",
        LOCAL,
        cluster(datacenters=[{"name": f"d{i}", "brokers": 1, "zookeepers": 1} for i in range(9)]),
        "dcdrill:cluster.datacenters: List should have at most 8 items",
    ),
    ("factor 10^8", LOCAL, repl(factor=10**8), "replication.factor: Input should be less than or equal to 16"),
    ("factor 0", LOCAL, repl(factor=0), "replication.factor: Input should be greater than or equal to 1"),
    ("minInsync as text", LOCAL, repl(minInsync="three"), "replication.minInsync: Input should be a valid integer"),
    (
        "unclean as 'yes'",
        LOCAL,
        repl(uncleanLeaderElection="yes"),
        "replication.uncleanLeaderElection: Input should be a valid boolean",
    ),
    (
        "replication is a list",
        LOCAL,
        cluster(replication=[4, 3]),
        "dcdrill:cluster.replication: Input should be a valid dictionary",
    ),
    ("acks 2", LOCAL, cluster(producer={"acks": 2}), "producer.acks: Input should be '0', '1' or 'all' (got '2')"),
    ("acks true", LOCAL, cluster(producer={"acks": True}), "producer.acks: Input should be"),
    (
        "misspelled producer key",
        LOCAL,
        cluster(producer={"ack": "all"}),
        "producer.ack: unknown key; did you mean 'acks'",
    ),
    ("tls as text", LOCAL, cluster(tls="on"), "dcdrill:cluster.tls: Input should be a valid boolean"),
    (
        "sasl admin is the client",
        LOCAL,
        cluster(sasl={"admin": "workload", "client": "workload"}),
        "dcdrill:cluster.sasl: the workload's user must not be the admin",
    ),
    (
        "sasl user with '='",
        LOCAL,
        cluster(sasl={"admin": "ad=min", "client": "workload"}),
        "sasl.admin: 'ad=min' is not a user name",
    ),
    (
        "sasl unknown key",
        LOCAL,
        cluster(sasl={"admin": "admin", "clients": "w"}),
        "sasl.clients: unknown key; did you mean 'client'",
    ),
    (
        "ACL for everyone",
        LOCAL,
        acl(principal="*", resource="cluster", operations=["all"]),
        "acls[3].principal: '*' (every user) is refused",
    ),
    ("ACL unknown resource", LOCAL, acl(resource="queue"), "acls[3].resource: Input should be"),
    ("ACL unknown operation", LOCAL, acl(operations=["fly"]), "acls[3].operations[0]: Input should be"),
    ("ACL no operations", LOCAL, acl(operations=[]), "acls[3].operations: List should have at least 1 item"),
    ("ACL unknown pattern", LOCAL, acl(pattern="glob"), "acls[3].pattern: Input should be 'literal' or 'prefixed'"),
    ("ACL name with a newline", LOCAL, acl(name="x\ny"), "acls[3].name: 'x\\ny' is not a Kafka resource name"),
    ("waive a safety rule", LOCAL, top(acceptRisks=["sasl-needs-tls"]), "dcdrill:acceptRisks[0]: Input should be"),
    (
        "waive a shape rule",
        LOCAL,
        top(acceptRisks=["factor-exceeds-brokers"]),
        "dcdrill:acceptRisks[0]: Input should be",
    ),
    (
        "acceptRisks as text",
        LOCAL,
        top(acceptRisks="quorum-dc-loss"),
        "dcdrill:acceptRisks: Input should be a valid list",
    ),
    (
        "public lab subnet",
        LOCAL,
        lab(subnetPrefix="8.8"),
        "dcdrill:lab.subnetPrefix: 8.8.0.0/16 is not a private range",
    ),
    ("lab subnet not two octets", LOCAL, lab(subnetPrefix="10.77.1"), "dcdrill:lab.subnetPrefix: must be two octets"),
    (
        "lab subnet as number",
        LOCAL,
        lab(subnetPrefix=10.77),
        "dcdrill:lab.subnetPrefix: Input should be a valid string",
    ),
    ("negative latency", LOCAL, lab(latencyMs=-5), "dcdrill:lab.latencyMs: Input should be greater than or equal to 0"),
    (
        "latency over 10 s",
        LOCAL,
        lab(latencyMs=10_001),
        "dcdrill:lab.latencyMs: Input should be less than or equal to 10000",
    ),
    ("heap 0", LOCAL, lab(brokerHeapMb=0), "dcdrill:lab.brokerHeapMb: Input should be greater than or equal to 128"),
    ("negative jitter", LOCAL, lab(jitterMs=-1), "dcdrill:lab.jitterMs: Input should be greater than or equal to 0"),
    ("loss over 100", LOCAL, lab(lossPct=101), "dcdrill:lab.lossPct: Input should be less than or equal to 100"),
    ("negative loss", LOCAL, lab(lossPct=-0.5), "dcdrill:lab.lossPct: Input should be greater than or equal to 0"),
    (
        "link loss over 100",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-b"], "lossPct": 150}]),
        "dcdrill:lab.links[0].lossPct: Input should be less than or equal to 100",
    ),
    (
        "link negative delay",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-b"], "latencyMs": -1}]),
        "dcdrill:lab.links[0].latencyMs: Input should be greater than or equal to 0",
    ),
    (
        "link delay over 10 s",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-c"], "latencyMs": 20_000}]),
        "dcdrill:lab.links[0].latencyMs: Input should be less than or equal to 10000",
    ),
    (
        "link to an unknown DC",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-x"], "latencyMs": 40}]),
        "dcdrill:lab.links[0].between: unknown DC 'dc-x' (this stack's DCs: dc-a, dc-b, dc-c)",
    ),
    (
        "link to itself",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-a"]}]),
        "dcdrill:lab.links[0].between: a link joins two different DCs, not dc-a with itself",
    ),
    (
        "link of three DCs",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-b", "dc-c"]}]),
        "dcdrill:lab.links[0].between: List should have at most 2 items",
    ),
    (
        "bandwidth 0",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-b"], "rateMbit": 0}]),
        "dcdrill:lab.links[0].rateMbit: Input should be greater than 0",
    ),
    (
        "misspelled link key",
        LOCAL,
        lab(links=[{"between": ["dc-a", "dc-b"], "latency": 4}]),
        "dcdrill:lab.links[0].latency: unknown key; did you mean 'latencyMs'",
    ),
    ("unknown shaper", LOCAL, lab(shaper="tc"), "dcdrill:lab.shaper: Input should be 'auto', 'netem' or 'forwarder'"),
    ("misspelled lab key", LOCAL, lab(latency=5), "dcdrill:lab.latency: unknown key; did you mean 'latencyMs'"),
    ("aws settings on a lab stack", LOCAL, aws(dataVolumeGb=10), "dcdrill:aws is for the other backend"),
    (
        "negative data volume",
        AWS,
        aws(dataVolumeGb=-5),
        "dcdrill:aws.dataVolumeGb: Input should be greater than or equal to 8",
    ),
    ("bad client CIDR", AWS, aws(clientCidrs=["10.0.0.0/33"]), "dcdrill:aws.clientCidrs[0]: not an IPv4 CIDR"),
    (
        "IPv6 everything as a client CIDR",
        AWS,
        aws(clientCidrs=["::/0"]),
        "dcdrill:aws.clientCidrs[0]: not an IPv4 CIDR",
    ),
    ("IPv6 VPC", AWS, aws(vpcCidrs={"eu-west-1": "fd00::/48"}), "dcdrill:aws.vpcCidrs.eu-west-1: not an IPv4 CIDR"),
    ("two DCs in one AZ", AWS, dc0(zone="eu-west-1b"), "[aws-zone-shared] dc-b and dc-a are both in eu-west-1b"),
    ("bad region", AWS, dc0(region="Europe"), "datacenters[0].region: 'Europe' is not an AWS region name"),
    ("bad AMI", AWS, aws(ami={"eu-west-1": "debian"}), "dcdrill:aws.ami.eu-west-1: 'debian' is not an AMI id"),
    (
        "a role's ARN for its name",
        AWS,
        aws(faultDriverRole="arn:aws:iam::123456789012:role/ci"),
        "dcdrill:aws.faultDriverRole: 'arn:aws:iam::123456789012:role/ci' is not an IAM role's name",
    ),
    # The model's rules (infra/rules.py) and the AWS backend's, after the schema: exit 2 naming them.
    (
        "world open in two halves",
        AWS,
        aws(clientCidrs=["0.0.0.0/1", "128.0.0.0/1"]),
        "[aws-world-open] dcdrill:aws.clientCidrs[1]: 128.0.0.0/1",
    ),
    (
        "VPC too small",
        AWS,
        aws(vpcCidrs={"eu-west-1": "10.20.0.0/24"}),
        "[aws-vpc-size] dcdrill:aws.vpcCidrs.eu-west-1: 10.20.0.0/24",
    ),
    ("public VPC", AWS, aws(vpcCidrs={"eu-west-1": "8.8.0.0/16"}), "[aws-vpc-size]"),
    ("factor over brokers", LOCAL, repl(factor=5), "[factor-exceeds-brokers] replication factor 5 > 4 brokers"),
    ("sasl without tls", LOCAL, cluster(tls=False), "[sasl-needs-tls]"),
]


@pytest.mark.parametrize("case,base,change,expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_every_malformed_stack_exits_2_naming_its_key(case, base, change, expected, stack_dir, capsys):
    cfg = copy.deepcopy(base)
    change(cfg)
    (stack_dir / "Pulumi.bad.yaml").write_text(yaml.safe_dump(cfg))
    started = time.monotonic()
    for argv in (["plan", "--stack", "bad"], ["plan", "--stack", "bad", "--matrix"]):
        assert cli.main(argv) == 2, case
        out = capsys.readouterr()
        assert expected in out.out + out.err, (case, out.out + out.err)
        assert "Traceback" not in out.err
    assert time.monotonic() - started < 5


def test_shipped_json_schema_is_current_and_agrees_with_the_shipped_stacks():
    shipped = json.loads((ROOT / "docs" / "stack.schema.json").read_text())
    assert shipped == json.loads(json.dumps(schema.json_schema())), "run: dcdrill schema > docs/stack.schema.json"
    validator = jsonschema.Draft202012Validator(shipped)
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert not list(validator.iter_errors(doc)), path.name
        assert path.read_text().startswith("# yaml-language-server: $schema=docs/stack.schema.json")
    # An editor sees the same misspellings the schema refuses.
    bad = copy.deepcopy(LOCAL)
    bad["config"]["dcdrill:cluster"]["replication"]["minInSync"] = 3
    bad["config"]["dcdrill:profil"] = "x"
    messages = " ".join(e.message for e in validator.iter_errors(bad))
    assert "minInSync" in messages and "dcdrill:profil" in messages
    # Other providers' namespaces are theirs.
    assert not list(validator.iter_errors({"config": {**LOCAL["config"], "aws:region": "eu-west-1"}}))

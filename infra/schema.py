"""The stack config's schema: what `Pulumi.<stack>.yaml` may say under `dcdrill:`, as pydantic
models. Shape, types, ranges, names and size limits live here; what the numbers mean for losing
a DC lives in infra/rules.py. `dcdrill schema` exports it as JSON Schema for editors.

Every refusal names its key path (`dcdrill:cluster.datacenters[0].brokers`), and an unknown key
names the nearest valid one, because a misspelled key silently taking its default is how a
stack ends up weaker than its author thinks.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dcdrill.infra.constants import ACKS, DEFAULT_KAFKA_VERSION, KAFKA_VERSIONS, PROFILES, kafka_release

# Size limits: far above any drill, far below what exhausts this machine (10^8 brokers, or a
# --matrix over factor 10^8, once did).
MAX_DATACENTERS = 8
MAX_BROKERS_PER_DC = 32
MAX_ZOOKEEPERS = 9
MAX_CONTROLLERS = 9
MAX_FACTOR = 16
MAX_ACLS = 200

# DC and cluster names become DNS labels (b1.dc-a.lab), namespace names (dcd-dc-a, 32 chars at
# most) and lines of server.properties and /etc/hosts, so nothing but a DNS label gets through.
DNS_LABEL = r"^[a-z]([a-z0-9-]{0,26}[a-z0-9])?$"
DOMAIN = r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z]([a-z0-9-]{0,61}[a-z0-9])?)*$"
USER = r"^[A-Za-z][A-Za-z0-9._-]{0,63}$"  # a SCRAM user name (no '=' or ',': SCRAM escapes them)
REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
ZONE = r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$"
INSTANCE_TYPE = r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"
AMI = r"^ami-[0-9a-f]{8,17}$"
IAM_ROLE_NAME = r"^[A-Za-z0-9+=,.@_-]{1,64}$"  # IAM's own limits on a role's name

# The lab's /16 must be private: the lab routes it, and only it, into its namespaces.
PRIVATE_NETS = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]

ACL_RESOURCES = ("topic", "group", "cluster", "transactional_id")
ACL_PATTERNS = ("literal", "prefixed")
ACL_OPERATIONS = (
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
)
# The rules dcdrill:acceptRisks may waive: the profile's promises, the quorum's and the exposures
# (infra/rules.py EXPOSURE_RULES), each a risk a team may knowingly take. Shape and safety rules
# (sasl-needs-tls, acl-shape, ...) cannot be waived.
RISK_RULES = (
    "consistency-min-insync",
    "consistency-acks",
    "availability-headroom",
    "availability-unclean",
    "quorum-dc-loss",
    "quorum-even-voters",
    "unauthenticated-listener",
    "workload-cluster-all",
)


class Spec(BaseModel):
    """Strict: no coercion from strings, and an unknown key is refused with its nearest match."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            valid = [f.alias or name for name, f in cls.model_fields.items()]
            for key in raw:
                if key not in valid:
                    near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
                    hint = f"; did you mean {near[0]!r}?" if near else f"; valid: {', '.join(valid)}"
                    raise PydanticCustomError("unknown_key", "unknown key{hint}", {"key": str(key), "hint": hint})
        return raw


def _private_prefix(value: str) -> str:
    try:
        net = ipaddress.ip_network(f"{value}.0.0/16")
    except ValueError:
        raise ValueError('must be two octets, like "10.77"') from None
    if not any(net.subnet_of(p) for p in PRIVATE_NETS):
        raise ValueError(f"{net} is not a private range (10/8, 172.16/12, 192.168/16): the lab routes it")
    return value


def _cidr(value: str) -> str:
    try:
        return str(ipaddress.IPv4Network(value))
    except ValueError as exc:
        raise ValueError(f"not an IPv4 CIDR: {exc}") from None


def _acks(value: Any) -> str:
    """YAML reads `acks: 1` as a number and `acks: all` as text; both mean the same setting."""
    if isinstance(value, bool):
        return value  # refused below, as a bool is not an acks value
    text = str(value).lower()
    return "all" if text == "-1" else text


def matching(pattern: str, what: str):
    """A string type that must match `pattern`; the error says what it should be, not the regex."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern.strip("^$"), value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return Annotated[str, AfterValidator(check), WithJsonSchema({"type": "string", "pattern": pattern})]


def _not_everyone(value: str) -> str:
    if value == "*":
        raise ValueError("'*' (every user) is refused: an ACL names the user it trusts")
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]
Name = matching(DNS_LABEL, "a DNS label: lower-case letters, digits and '-', starting with a letter, at most 28")
User = Annotated[
    matching(USER, "a user name: a letter, then letters, digits, '.', '_' or '-' (64 at most)"),
    BeforeValidator(_not_everyone),
]
Region = matching(REGION, "an AWS region name like eu-west-1")
Delay = Annotated[float, Field(ge=0, le=10_000)]  # ms; strict floats accept whole numbers too


class DatacenterSpec(Spec):
    name: Name
    brokers: int = Field(0, ge=0, le=MAX_BROKERS_PER_DC)
    zookeepers: int = Field(0, ge=0, le=MAX_ZOOKEEPERS)  # coordination: zookeeper
    controllers: int = Field(0, ge=0, le=MAX_CONTROLLERS)  # coordination: kraft (the quorum's voters)
    region: Region | None = None  # aws only
    zone: matching(ZONE, "an AZ name like eu-west-1a") | None = None  # aws only


class ReplicationSpec(Spec):
    factor: int = Field(3, ge=1, le=MAX_FACTOR)
    min_insync: int = Field(2, ge=1, le=MAX_FACTOR, alias="minInsync")
    unclean_leader_election: bool = Field(False, alias="uncleanLeaderElection")


class ProducerSpec(Spec):
    acks: Annotated[
        Literal[ACKS], BeforeValidator(_acks), WithJsonSchema({"enum": [0, 1, -1, "0", "1", "all", "-1"]})
    ] = "all"


class SaslSpec(Spec):
    admin: User = "admin"
    client: User = "workload"

    @model_validator(mode="after")
    def _distinct(self):
        if self.admin == self.client:
            raise ValueError(
                f"the workload's user must not be the admin ({self.admin!r}): the drill would "
                "run as a super user and prove nothing about the ACLs"
            )
        return self


class AclSpec(Spec):
    principal: User
    resource: Literal[ACL_RESOURCES]
    name: matching(r"^[A-Za-z0-9._-]{1,249}$", "a Kafka resource name (letters, digits, '.', '_', '-')") = (
        "kafka-cluster"
    )
    pattern: Literal[ACL_PATTERNS] = "literal"
    operations: Annotated[
        list[Literal[ACL_OPERATIONS]],
        BeforeValidator(lambda v: [v] if isinstance(v, str) else v),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "enum": list(ACL_OPERATIONS)},
                    {"type": "array", "minItems": 1, "items": {"enum": list(ACL_OPERATIONS)}},
                ]
            }
        ),
    ] = Field(min_length=1)  # one operation may be written without brackets


class ClusterSpec(Spec):
    name: Name = "main"
    coordination: Literal["zookeeper", "kraft"] = "zookeeper"
    # unset: the coordination's default (DEFAULT_KAFKA_VERSION); only versions setup fetches
    kafka_version: Literal[tuple(KAFKA_VERSIONS)] | None = Field(None, alias="kafkaVersion")
    datacenters: list[DatacenterSpec] = Field(min_length=1, max_length=MAX_DATACENTERS)
    replication: ReplicationSpec = ReplicationSpec()
    producer: ProducerSpec = ProducerSpec()
    domain: matching(DOMAIN, "a DNS domain like lab or dcdrill.internal") | None = None
    tls: bool = False
    sasl: Annotated[
        SaslSpec | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "boolean"},
                    {"type": "null"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "admin": {"type": "string", "pattern": USER},
                            "client": {"type": "string", "pattern": USER},
                        },
                    },
                ]
            }
        ),
    ] = None
    acls: list[AclSpec] = Field(default_factory=list, max_length=MAX_ACLS)

    @field_validator("sasl", mode="before")
    @classmethod
    def _sasl_switch(cls, raw: Any) -> Any:
        """`sasl: true` means the default users, `sasl: false` none."""
        return {} if raw is True else None if raw is False else raw

    @model_validator(mode="after")
    def _coordination_keys(self):
        """Each coordination has its own voters' key, and 4.x has no ZooKeeper: a stack that
        mixes them would be configured as something else than its author reads."""
        # (the other coordination's key, what it holds, this coordination's key)
        wrong, holds, right = {
            "zookeeper": ("controllers", "KRaft controllers", "zookeepers"),
            "kraft": ("zookeepers", "ZooKeeper nodes", "controllers"),
        }[self.coordination]
        bad = [
            f"datacenters[{i}].{wrong}: a {self.coordination} stack has no {holds} ({dc.name} has "
            f"{getattr(dc, wrong)}); give the DC {right} instead"
            for i, dc in enumerate(self.datacenters)
            if getattr(dc, wrong)
        ]
        version, kafka4 = self.version, kafka_release(self.version) >= (4, 0)
        if self.coordination == "zookeeper" and kafka4:
            bad.append(
                f"kafkaVersion: Kafka {version} has no ZooKeeper mode (4.0 removed it); "
                f"ZooKeeper stacks run {DEFAULT_KAFKA_VERSION['zookeeper']}, or use coordination: kraft"
            )
        if self.coordination == "kraft" and not kafka4:
            bad.append(
                f"kafkaVersion: dcdrill runs KRaft stacks on Kafka 4.x "
                f"({', '.join(v for v in KAFKA_VERSIONS if kafka_release(v) >= (4, 0))}), not {version}"
            )
        if bad:
            raise ValueError("; ".join(bad))
        return self

    @property
    def version(self) -> str:
        return self.kafka_version or DEFAULT_KAFKA_VERSION[self.coordination]

    @field_validator("datacenters")
    @classmethod
    def _unique(cls, dcs: list[DatacenterSpec]) -> list[DatacenterSpec]:
        names = [dc.name for dc in dcs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"DC names must be unique; repeated: {', '.join(dupes)}")
        return dcs


Percent = Annotated[float, Field(ge=0, le=100)]


class LinkSpec(Spec):
    """One DC pair's own shape, both directions; unset keys take the lab-wide values."""

    between: list[Name] = Field(min_length=2, max_length=2)
    latency_ms: Delay | None = Field(None, alias="latencyMs")
    jitter_ms: Delay | None = Field(None, alias="jitterMs")
    loss_pct: Percent | None = Field(None, alias="lossPct")
    rate_mbit: float | None = Field(None, gt=0, le=100_000, alias="rateMbit")  # no cap when unset

    @field_validator("between")
    @classmethod
    def _two_dcs(cls, pair: list[str]) -> list[str]:
        if pair[0] == pair[1]:
            raise ValueError(f"a link joins two different DCs, not {pair[0]} with itself")
        return pair


class LabSpec(Spec):
    latency_ms: Delay = Field(5.0, alias="latencyMs")  # one-way inter-DC delay, every pair
    jitter_ms: Delay = Field(0.0, alias="jitterMs")
    loss_pct: Percent = Field(0.0, alias="lossPct")
    links: list[LinkSpec] = Field(default_factory=list, max_length=64)  # per-pair overrides
    shaper: Literal["auto", "netem", "forwarder"] = "auto"  # auto: netem where the kernel has it
    subnet_prefix: Annotated[str, AfterValidator(_private_prefix)] = Field("10.77", alias="subnetPrefix")
    broker_heap_mb: int = Field(384, ge=128, le=16_384, alias="brokerHeapMb")
    zookeeper_heap_mb: int = Field(96, ge=32, le=4_096, alias="zookeeperHeapMb")
    controller_heap_mb: int = Field(256, ge=128, le=16_384, alias="controllerHeapMb")  # KRaft controllers
    mirror_heap_mb: int = Field(256, ge=128, le=16_384, alias="mirrorHeapMb")  # MirrorMaker 2
    # Each Kafka and ZooKeeper host's data root on a disk that loses, at the `power-loss` fault,
    # every write not yet durable: fsync'd, or older than writebackS (the kernel's own write-back,
    # Linux's dirty_expire_centisecs: 30 s). Costs a FUSE round trip per write (docs/benchmarks.md).
    power_loss: bool = Field(False, alias="powerLoss")
    writeback_s: float = Field(30.0, ge=1, le=600, alias="writebackS")


InstanceType = matching(INSTANCE_TYPE, "an EC2 instance type like m6i.large")


class AwsSpec(Spec):
    vpc_cidrs: dict[Region, Cidr] = Field(default_factory=dict, alias="vpcCidrs")
    client_cidrs: list[Cidr] | None = Field(None, alias="clientCidrs", max_length=50)
    broker_instance_type: InstanceType = Field("m6i.large", alias="brokerInstanceType")
    zookeeper_instance_type: InstanceType = Field("t3.medium", alias="zookeeperInstanceType")
    data_volume_gb: int = Field(100, ge=8, le=16_384, alias="dataVolumeGb")
    keep_data_volumes: bool = Field(False, alias="keepDataVolumes")  # kept after `pulumi destroy` when true
    ami: dict[Region, matching(AMI, "an AMI id like ami-0123456789abcdef0")] = Field(default_factory=dict)
    # The role the fault driver runs as (your CI's): the stack attaches its policy there itself,
    # so `pulumi destroy` detaches it before deleting it (an attached policy cannot be deleted).
    fault_driver_role: matching(IAM_ROLE_NAME, "an IAM role's name, not its ARN") | None = Field(
        None, alias="faultDriverRole"
    )


MIRROR_MODES = ("active-passive", "active-active")
MIRROR_PLACEMENTS = ("target", "source")  # the DC MirrorMaker 2 runs in: the target's or the source's
REPLICATION_POLICIES = ("default", "identity")  # DefaultReplicationPolicy ("east.topic") or Identity ("topic")
MAX_CLUSTERS = 4
MIRROR_USER = "mirrormaker"  # MM2's own SCRAM principal on both clusters, allowed only what MM2 does
NODE_ID_SPACE = 1000  # broker ids stay below it: KRaft controllers' ids start above it (ctl1 is 1001)
# What Python's re accepts and java.util.regex.Pattern refuses or reads otherwise.
PYTHON_ONLY_REGEX = (
    ("(?P<", "a named group: Java writes (?<name>...)"),
    ("(?P=", "a named backreference"),
    ("(?#", "an inline comment"),
    ("\\Z", "end of input: Java's \\Z allows a final line break"),
)


class MirrorSpec(Spec):
    """MirrorMaker 2 from one cluster to another (active-active: both ways), in dedicated mode.
    The settings are MM2's, under their camelCase names; defaults suit a drill (MM2's own in
    roles/kafka_mirror/defaults/main.yml's comments)."""

    source: Name
    target: Name
    mode: Literal[MIRROR_MODES] = "active-passive"
    placement: Literal[MIRROR_PLACEMENTS] = "target"
    topics: str = Field("dcdrill-.*", min_length=1, max_length=200)  # a Java regex of source topic names
    replication_factor: int = Field(2, ge=1, le=MAX_FACTOR, alias="replicationFactor")  # of the remote topics
    replication_policy: Literal[REPLICATION_POLICIES] = Field("default", alias="replicationPolicy")
    # unset: beside MM2 (its placement's cluster), which KIP-716 recommends when MM2 runs at the target
    offset_syncs_topic_location: Literal["source", "target"] | None = Field(None, alias="offsetSyncsTopicLocation")
    refresh_topics_interval_s: int = Field(5, ge=1, le=86_400, alias="refreshTopicsIntervalS")
    refresh_groups_interval_s: int = Field(5, ge=1, le=86_400, alias="refreshGroupsIntervalS")
    sync_group_offsets: bool = Field(True, alias="syncGroupOffsets")
    sync_group_offsets_interval_s: int = Field(1, ge=1, le=86_400, alias="syncGroupOffsetsIntervalS")
    emit_checkpoints_interval_s: int = Field(1, ge=1, le=86_400, alias="emitCheckpointsIntervalS")

    @field_validator("topics")
    @classmethod
    def _regex(cls, value: str) -> str:
        if bad := [c for c in value if ord(c) < 32 or ord(c) == 127]:
            raise ValueError(f"a control character ({bad[0]!r}) in a topic regex: it would end MM2's property line")
        for construct, meaning in PYTHON_ONLY_REGEX:
            if construct in value:
                raise ValueError(f"{construct!r} ({meaning}) is Python's syntax, not Java's; MM2 reads a Java regex")
        return value  # whether Java compiles it: the mirror-topics-regex rule (infra/java_regex.py)


class StackSpec(Spec):
    """The `dcdrill:` keys of a stack's `config:` (other namespaces, like `aws:region`, belong to
    their providers and are not read here). A stretched stack has one `cluster`; a replicated
    one has `clusters`, each in DCs of its own, joined by `mirrors`."""

    backend: Literal["local", "aws"] = Field("local", alias="dcdrill:backend")
    profile: Literal[PROFILES] = Field("consistency-first", alias="dcdrill:profile")
    cluster: ClusterSpec | None = Field(None, alias="dcdrill:cluster")
    clusters: list[ClusterSpec] | None = Field(None, alias="dcdrill:clusters", min_length=2, max_length=MAX_CLUSTERS)
    mirrors: list[MirrorSpec] = Field(default_factory=list, alias="dcdrill:mirrors", max_length=MAX_CLUSTERS * 2)
    accept_risks: list[Literal[RISK_RULES]] = Field(default_factory=list, alias="dcdrill:acceptRisks")
    lab: LabSpec | None = Field(None, alias="dcdrill:lab")
    aws: AwsSpec | None = Field(None, alias="dcdrill:aws")
    # SASL passwords the user chose, by cluster and user, each set with `pulumi config set --secret
    # --path 'dcdrill:passwords.<cluster>.<user>'`: only Pulumi decrypts them (infra/pulumi_passwords.py).
    # Which users a cluster has is the model's to say: infra/deployment.py checks the names.
    passwords: dict[str, dict[str, dict[str, str]]] | None = Field(None, alias="dcdrill:passwords")

    @model_validator(mode="after")
    def _backend_settings(self):
        other = {"local": ("aws", "dcdrill:aws"), "aws": ("lab", "dcdrill:lab")}[self.backend]
        if getattr(self, other[0]) is not None:
            raise ValueError(f"{other[1]} is for the other backend; this stack's backend is {self.backend}")
        if (self.cluster is None) == (self.clusters is None):
            raise ValueError(
                "a stack has dcdrill:cluster (one stretched cluster) or dcdrill:clusters "
                "(replicated clusters joined by dcdrill:mirrors), "
                + ("not both" if self.cluster else "and has neither")
            )
        if self.cluster is not None and self.mirrors:
            raise ValueError("dcdrill:mirrors joins dcdrill:clusters; a stack with one dcdrill:cluster mirrors nothing")
        names = [c.name for c in self.all_clusters]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"dcdrill:clusters: cluster names must be unique; repeated: {', '.join(dupes)}")
        owner: dict[str, str] = {}
        for c in self.all_clusters:
            for dc in c.datacenters:
                if dc.name in owner:
                    raise ValueError(
                        f"dcdrill:clusters: DC {dc.name} is in both {owner[dc.name]} and {c.name}: "
                        "replicated clusters live in DCs of their own"
                    )
                owner[dc.name] = c.name
        self._check_mirrors(names)
        self._check_node_ids()
        if self.lab is not None:
            known = list(owner)
            pairs: dict[frozenset, int] = {}
            for n, link in enumerate(self.lab.links):
                if (pair := frozenset(link.between)) in pairs:
                    raise ValueError(
                        f"dcdrill:lab.links[{n}]: {' and '.join(link.between)} are linked already by "
                        f"dcdrill:lab.links[{pairs[pair]}]; one entry per DC pair"
                    )
                pairs[pair] = n
                for dc in link.between:
                    if dc not in known:
                        raise ValueError(
                            f"dcdrill:lab.links[{n}].between: unknown DC {dc!r} (this stack's DCs: {', '.join(known)})"
                        )
        return self

    def _check_mirrors(self, names: list[str]) -> None:
        """Mirrors join known clusters, each flow (source -> target) once, with no loop through any
        number of mirrors (records would be copied round forever), between clusters secured alike
        (MM2 connects to both with one security setup)."""
        seen: dict[tuple[str, str], int] = {}
        for n, m in enumerate(self.mirrors):
            if m.source not in names or m.target not in names or m.source == m.target:
                continue  # the rules name it (infra/mirror_rules.py: mirror-unknown-cluster, mirror-same-cluster)
            flows = [(m.source, m.target)] + ([(m.target, m.source)] if m.mode == "active-active" else [])
            for flow in flows:
                if flow in seen:
                    raise ValueError(
                        f"dcdrill:mirrors[{n}]: the flow {flow[0]} -> {flow[1]} is declared already "
                        f"by dcdrill:mirrors[{seen[flow]}]; each flow once"
                    )
                seen[flow] = n
            by_name = {c.name: c for c in self.all_clusters}
            a, b = by_name[m.source], by_name[m.target]
            if (a.tls, a.sasl is not None) != (b.tls, b.sasl is not None):

                def what(c):
                    return ", ".join(k for k, on in (("tls", c.tls), ("sasl", c.sasl is not None)) if on) or "neither"

                raise ValueError(
                    f"dcdrill:mirrors[{n}]: {a.name} has {what(a)} and {b.name} has {what(b)}: "
                    "mirrored clusters must be secured alike (tls, sasl)"
                )
            for c in (a, b):
                if c.sasl is not None and MIRROR_USER in (c.sasl.client, c.sasl.admin):
                    role = "client" if c.sasl.client == MIRROR_USER else "admin"
                    raise ValueError(
                        f"dcdrill:clusters[{names.index(c.name)}].sasl.{role}: {MIRROR_USER!r} is "
                        "MirrorMaker 2's user on a mirrored cluster; give this one a user of its own"
                    )
        if loop := _flow_loop(seen, self.mirrors):
            raise ValueError(
                "dcdrill:mirrors: the flows " + " -> ".join(loop) + " make a loop: records would be "
                "copied round it forever (active-active between two clusters is the one loop allowed)"
            )

    def _check_node_ids(self) -> None:
        """Broker ids go on from cluster to cluster, below the controllers' (CONTROLLER_ID_BASE)."""
        brokers = sum(dc.brokers for c in self.all_clusters for dc in c.datacenters)
        if brokers >= NODE_ID_SPACE:
            raise ValueError(
                f"dcdrill:clusters: {brokers} brokers in all; broker ids must stay below "
                f"{NODE_ID_SPACE}, where KRaft controllers' ids begin"
            )

    @property
    def all_clusters(self) -> list[ClusterSpec]:
        return [self.cluster] if self.cluster is not None else list(self.clusters or [])


def _flow_loop(flows: dict[tuple[str, str], int], mirrors: list[MirrorSpec]) -> list[str] | None:
    """A cycle of flows (cluster names, first repeated at the end), other than one active-active
    mirror's own pair; None without one. At most MAX_CLUSTERS clusters: a plain search."""
    nexts: dict[str, list[str]] = {}
    for a, b in flows:
        nexts.setdefault(a, []).append(b)

    def walk(path: list[str]):
        for b in nexts.get(path[-1], []):
            if b == path[0]:
                pair = (
                    len(path) == 2
                    and flows[(path[0], path[1])] == flows[(path[1], path[0])]
                    and mirrors[flows[(path[0], path[1])]].mode == "active-active"
                )
                if not pair:
                    return path + [b]
            elif b not in path and (found := walk(path + [b])):
                return found
        return None

    return next((loop for start in sorted(nexts) if (loop := walk([start]))), None)


def key_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def problems(error: ValidationError) -> list[str]:
    """One line per error: `key.path: what is wrong`."""
    lines = []
    for e in error.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith(("function-", "literal["))))
        if e["type"] == "unknown_key":
            if not loc:  # `pulumi config set k v` in this project writes dcdrill:k
                e["msg"] += (
                    "; a key of your own belongs in a namespace of your own "
                    "(`pulumi config set --secret myteam:key ...`): dcdrill reads only dcdrill: keys"
                )
            loc += (e["ctx"]["key"],)
        message = re.sub(r" or instance of \w+", "", e["msg"].removeprefix("Value error, "))
        if e["type"] == "missing":
            message = "required"
        elif e["type"] not in ("unknown_key", "value_error") and not isinstance(e.get("input"), (dict, list)):
            message += f" (got {e.get('input')!r})"
        lines.append(f"{key_path(loc) or 'config'}: {message}")
    return lines


def dcdrill_keys(config: dict) -> dict:
    return {k: v for k, v in config.items() if str(k).startswith("dcdrill:")}


class ConfigError(ValueError):
    """The stack config cannot be read into a model: its message names every bad key path."""


def parse(config: Any, where: str = "") -> StackSpec:
    """The validated `dcdrill:` config. Raises ConfigError listing every problem."""
    if not isinstance(config, dict):
        raise ConfigError(f"{where or 'the stack'}: config must be a mapping of keys, got {type(config).__name__}")
    try:
        return StackSpec.model_validate(dcdrill_keys(config))
    except ValidationError as exc:
        head = f"{where}: " if where else ""
        raise ConfigError(head + "invalid stack config:\n  " + "\n  ".join(problems(exc))) from None


def json_schema() -> dict:
    """JSON Schema of a whole `Pulumi.<stack>.yaml`, for editors (yaml-language-server)."""
    inner = StackSpec.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dcdrill stack (Pulumi.<stack>.yaml)",
        "type": "object",
        "properties": {
            "config": {
                **{k: v for k, v in inner.items() if k != "$defs"},
                # Other namespaces (aws:region, ...) belong to their providers; dcdrill's own must be known.
                "additionalProperties": True,
                "propertyNames": {"anyOf": [{"enum": sorted(inner["properties"])}, {"not": {"pattern": "^dcdrill:"}}]},
            },
            "encryptionsalt": {"type": "string"},
            "secretsprovider": {"type": "string"},
        },
        "$defs": inner.get("$defs", {}),
    }

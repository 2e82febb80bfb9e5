"""The stack's passwords as Pulumi secrets: each cluster's SASL users' and, where ZooKeeper is
locked down, its DIGEST-MD5 users'. Pulumi keeps them in the stack's state, encrypted by the
stack's secrets provider (its passphrase by default), and exports them as one secret output,
`passwords`: {cluster: {"sasl": {user: password}, "zookeeper": {...}}}. `lab up` copies each
cluster's into the 0600 files the roles read (infra/passwords.py), never onto a command line.

A password set with `pulumi config set --secret --path 'dcdrill:passwords.<cluster>.<user>'` is
used as given. Every other one is made once, by a Passwords resource, and kept: a second
`pulumi up` changes none, and a user added later gets one of its own. A lab configured before
Pulumi kept them has its users' passwords in the files already: the resource adopts those when
it is created, since the clusters know their users by them.
"""

from __future__ import annotations

import json
import secrets

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from dcdrill.infra import ansible, passwords
from dcdrill.infra.constants import state_dir
from dcdrill.infra.deployment import Deployment


def _adopted(path: str) -> dict:
    """The passwords a file written before Pulumi kept them holds ({} when there is none)."""
    try:
        found = json.loads((state_dir() / path).read_text())
    except (OSError, ValueError):
        return {}
    return {u: pw for u, pw in found.items() if isinstance(pw, str) and pw} if isinstance(found, dict) else {}


def _made(users: list[str], kept: dict | None = None) -> dict:
    kept = kept or {}
    return {u: kept.get(u) or secrets.token_urlsafe(24) for u in sorted(users)}


class PasswordsProvider(ResourceProvider):
    """Random passwords, one per user, made in the provider (never in the program, which runs on
    every `pulumi up`), so the state holds them and later runs keep them."""

    def create(self, props):
        return CreateResult(
            id_="passwords", outs={**props, "passwords": _made(props["users"], _adopted(props["adopt"]))}
        )

    def diff(self, id_, olds, news):
        return DiffResult(changes=sorted(olds.get("users") or []) != sorted(news["users"]), replaces=[])

    def update(self, id_, olds, news):
        kept = rpc.unwrap_rpc_secret(olds.get("passwords")) or {}
        return UpdateResult(outs={**news, "passwords": _made(news["users"], kept)})


class Passwords(Resource):
    passwords: pulumi.Output[dict]

    def __init__(self, name: str, users: list[str], adopt: str, opts: pulumi.ResourceOptions | None = None):
        """`adopt`: the file, relative to the cache, whose passwords a new resource keeps."""
        super().__init__(
            PasswordsProvider(),
            name,
            {"users": sorted(users), "adopt": adopt, "passwords": None},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["passwords"])),
        )


def files(stack: str, cluster: str | None) -> dict[str, str]:
    """Where `lab up` writes a cluster's passwords (None: the home cluster), relative to the state folder."""
    folder = ansible.tls_dir(stack, cluster).relative_to(state_dir())
    return {kind: str(folder / name) for kind, name in passwords.FILES.items()}


def wanted(deployment: Deployment) -> dict[str, dict[str, list[str]]]:
    """{cluster: {kind: users}}: who needs a password, from the topology model."""
    out = {}
    for t in deployment.clusters:
        kinds = {}
        if t.sasl is not None:
            kinds["sasl"] = sorted(t.users)
        if t.tls and t.sasl is not None and not t.kraft:
            kinds["zookeeper"] = list(passwords.ZOOKEEPER_USERS)
        if kinds:
            out[t.name] = kinds
    return out


def merged(made: dict, given: dict | None) -> dict:
    """The made passwords, each replaced by the one the user set (dcdrill:passwords.<cluster>.<user>)
    for a SASL user of that cluster."""
    out = {}
    for cluster, kinds in sorted(made.items()):
        chosen = (given or {}).get(cluster) or {}
        out[cluster] = {
            kind: {u: (chosen.get(u) if kind == "sasl" else None) or pw for u, pw in sorted(users.items())}
            for kind, users in sorted(kinds.items())
        }
    return out


class StackPasswords(pulumi.ComponentResource):
    """Every password the stack's clusters need, as one secret output (`passwords`)."""

    def __init__(self, deployment: Deployment, given: pulumi.Output | None, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:secrets:StackPasswords", "passwords", None, opts)
        home = deployment.cluster_names[0]
        made = {
            cluster: {
                kind: Passwords(
                    f"{cluster}-{kind}",
                    users,
                    files(pulumi.get_stack(), None if cluster == home else cluster)[kind],
                    pulumi.ResourceOptions(parent=self),
                ).passwords
                for kind, users in kinds.items()
            }
            for cluster, kinds in wanted(deployment).items()
        }
        self.passwords = pulumi.Output.secret(pulumi.Output.all(made, given).apply(lambda both: merged(*both)))
        self.register_outputs({"passwords": self.passwords})

"""The stack's passwords as Pulumi secrets (infra/pulumi_passwords.py): made once by the Passwords
resource's provider and kept, adopted from a lab's files written before, replaced by the ones a
user set with `pulumi config set --secret`, and exported as a secret."""

import json

import pulumi
import pytest

from dcdrill.infra import pulumi_passwords, schema, stack
from dcdrill.infra.pulumi_passwords import PasswordsProvider


def test_each_user_gets_a_password_of_its_own_kept_across_updates_and_a_new_user_one_more(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))
    p = PasswordsProvider()
    made = p.create({"users": ["admin", "workload"], "adopt": "nowhere.json"}).outs
    first = made["passwords"]
    assert sorted(first) == ["admin", "workload"] and len(set(first.values())) == 2
    assert all(len(pw) >= 32 for pw in first.values())
    assert not p.diff("passwords", made, {"users": ["workload", "admin"], "adopt": "moved.json"}).changes
    assert p.diff("passwords", made, {"users": ["admin", "mirrormaker", "workload"], "adopt": "x"}).changes
    # Pulumi hands the provider its secret outputs wrapped: the kept ones come through unwrapped
    wrapped = {**made, "passwords": pulumi.runtime.rpc.wrap_rpc_secret(first)}
    after = p.update("passwords", wrapped, {"users": ["admin", "mirrormaker", "workload"], "adopt": "x"}).outs
    assert {u: after["passwords"][u] for u in first} == first
    assert after["passwords"]["mirrormaker"] not in first.values()


def test_a_labs_earlier_passwords_are_adopted_when_the_resource_is_created(tmp_path, monkeypatch):
    """The clusters know their users by the passwords the files hold: new ones would lock them out."""
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path))
    files = pulumi_passwords.files("local", None)
    assert files == {
        "sasl": "stacks/local/tls/credentials.json",
        "zookeeper": "stacks/local/tls/zookeeper-credentials.json",
    }
    assert (
        pulumi_passwords.files("local-replicated", "west")["sasl"]
        == "stacks/local-replicated/clusters/west/tls/credentials.json"
    )
    (tmp_path / files["sasl"]).parent.mkdir(parents=True)
    (tmp_path / files["sasl"]).write_text(json.dumps({"admin": "old-admin", "gone": "old-gone"}))
    made = PasswordsProvider().create({"users": ["admin", "workload"], "adopt": files["sasl"]}).outs["passwords"]
    assert made["admin"] == "old-admin" and made["workload"] != "old-gone" and "gone" not in made


def test_who_needs_a_password_comes_from_the_topology():
    assert pulumi_passwords.wanted(stack.load_deployment("local")) == {
        "main": {"sasl": ["admin", "workload"], "zookeeper": ["kafka", "quorum"]}
    }
    kraft = pulumi_passwords.wanted(stack.load_deployment("local-kraft"))
    assert list(kraft.values()) == [{"sasl": ["admin", "workload"]}]  # no ZooKeeper to log in to
    replicated = pulumi_passwords.wanted(stack.load_deployment("local-replicated"))
    assert sorted(replicated) == ["east", "west"] and all("mirrormaker" in k["sasl"] for k in replicated.values())


def test_a_password_the_user_set_replaces_the_made_one_for_that_cluster_only():
    made = {
        "east": {"sasl": {"admin": "m1", "workload": "m2"}, "zookeeper": {"kafka": "m3"}},
        "west": {"sasl": {"admin": "m4"}},
    }
    given = {"east": {"admin": "chosen"}}
    assert pulumi_passwords.merged(made, given) == {
        "east": {"sasl": {"admin": "chosen", "workload": "m2"}, "zookeeper": {"kafka": "m3"}},
        "west": {"sasl": {"admin": "m4"}},
    }
    assert pulumi_passwords.merged(made, None) == made


@pytest.mark.parametrize(
    "passwords,error",
    [
        ({"nowhere": {"admin": {"secure": "v1:x"}}}, "dcdrill:passwords.nowhere: no such cluster (this stack's: main)"),
        (
            {"main": {"nobody": {"secure": "v1:x"}}},
            "dcdrill:passwords.main.nobody: no such SASL user (this cluster's: admin, workload)",
        ),
        (
            {"main": {"admin": {"plain": "hunter2"}}},
            "dcdrill:passwords.main.admin: not a secret; set it with `pulumi config set --secret",
        ),
    ],
)
def test_a_chosen_password_names_a_user_of_a_cluster_and_is_a_secret(passwords, error):
    cfg = {**stack.load_config("local"), "dcdrill:passwords": passwords}
    with pytest.raises(schema.ConfigError) as exc:
        stack.deployment_of(cfg, "local")
    assert error in str(exc.value)
    stack.deployment_of({**stack.load_config("local"), "dcdrill:passwords": {"main": {"admin": {"secure": "v1:x"}}}})


def test_the_program_exports_them_as_one_secret_output():
    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            outs = dict(args.inputs)
            if args.typ.startswith("pulumi-python:dynamic"):
                outs["passwords"] = {u: f"pw-{args.name}-{u}" for u in args.inputs["users"]}
            return [f"{args.name}-id", outs]

        def call(self, args):
            return {}

    pulumi.runtime.set_mocks(Mocks(), project="dcdrill", stack="local-replicated", preview=False)
    d = stack.load_deployment("local-replicated")
    seen = {}

    @pulumi.runtime.test
    def go():
        out = pulumi_passwords.StackPasswords(d, None).passwords

        def check(args):
            value, secret = args
            seen.update(value=value, secret=secret)

        return pulumi.Output.all(out, pulumi.Output.from_input(out.is_secret())).apply(check)

    go()
    assert seen["value"]["west"]["sasl"]["mirrormaker"] == "pw-west-sasl-mirrormaker"
    assert sorted(seen["value"]) == ["east", "west"] and seen["secret"] is True

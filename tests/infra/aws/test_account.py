"""The account preflight (infra/aws/account.py) against AWS's own API models: botocore's Stubber
(each request and answer held to the service's model) and moto's server on loopback. Nothing
reaches AWS."""

import boto3
from botocore.stub import Stubber

from dcdrill import cli
from dcdrill.infra import stack
from dcdrill.infra.aws import account, iam
from tests import iam_model

STACK = "aws-3az"  # eu-west-1a/b/c: 6 m6i.large (2 vCPUs) and 6 t3.medium (2 vCPUs)
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]


def _stubbed(quota: float, zones=ZONES, fis_role=True):
    """A client factory whose every client answers from a Stubber, and the calls it was asked."""
    calls, made = [], {}

    def client(service, region):
        if (service, region) in made:
            return made[service, region]
        c = made[service, region] = boto3.client(
            service, region_name=region, aws_access_key_id="x", aws_secret_access_key="y"
        )
        stub = Stubber(c)
        if service == "ec2":
            stub.add_response(
                "describe_instance_types",
                {
                    "InstanceTypes": [
                        {"InstanceType": t, "VCpuInfo": {"DefaultVCpus": 2}} for t in ("m6i.large", "t3.medium")
                    ]
                },
                {"InstanceTypes": ["m6i.large", "t3.medium"]},
            )
            names = [f"com.amazonaws.{region}.{s}" for s in account.SSM_SERVICES]
            stub.add_response(
                "describe_vpc_endpoint_services",
                {"ServiceDetails": [{"ServiceName": n, "AvailabilityZones": zones} for n in names]},
                {"ServiceNames": names},
            )
        elif service == "service-quotas":
            stub.add_response(
                "get_service_quota",
                {"Quota": {"QuotaCode": account.VCPU_QUOTA[1], "Value": quota}},
                {"ServiceCode": "ec2", "QuotaCode": account.VCPU_QUOTA[1]},
            )
        elif service == "iam":
            if fis_role:
                role = {
                    "Path": "/aws-service-role/fis.amazonaws.com/",
                    "RoleName": account.FIS_ROLE,
                    "RoleId": "AROAEXAMPLEEXAMPLE01",
                    "Arn": f"arn:aws:iam::123456789012:role/aws-service-role/fis.amazonaws.com/{account.FIS_ROLE}",
                    "CreateDate": "2026-01-01T00:00:00Z",
                }
                stub.add_response("get_role", {"Role": role}, {"RoleName": account.FIS_ROLE})
            else:
                stub.add_client_error("get_role", "NoSuchEntity", http_status_code=404)
        stub.activate()
        c.meta.events.register("before-parameter-build.*.*", lambda model, **_: calls.append(model.name))
        return c

    return client, calls


def _findings(client):
    return account.findings(stack.load_deployment(STACK), stack.backend(STACK).config, client)


def test_an_account_with_room_for_the_stack_lacks_nothing_and_is_only_read():
    client, calls = _stubbed(quota=32)
    assert _findings(client) == []
    assert sorted(calls) == sorted(
        ["DescribeInstanceTypes", "GetServiceQuota", "DescribeVpcEndpointServices", "GetRole"]
    )
    assert all(c.startswith(("Describe", "Get", "List")) for c in calls)  # read-only
    # The fault driver's policy (the CI role's) allows each, as AWS authorizes it.
    prefix = {"DescribeInstanceTypes": "ec2", "DescribeVpcEndpointServices": "ec2", "GetServiceQuota": "servicequotas"}
    actions = {f"{prefix.get(c, 'iam')}:{c}" for c in calls}
    policy = iam.fault_driver_policy(
        "dcdrill/aws-3az", "arn:aws:iam::123456789012:role/fis-role-0a1b2c3", "bucket-0a1b2c3"
    )
    assert iam_model.problems(policy, actions) == []


def test_a_vcpu_quota_below_the_stacks_instances_is_named():
    [finding] = _findings(_stubbed(quota=16)[0])
    assert not isinstance(finding, account.Unread)
    assert (
        finding.startswith("eu-west-1: the stack's instances need 24 vCPUs") and "quota (L-1216C47A) is 16" in finding
    )


def test_a_zone_without_the_ssm_endpoints_is_named():
    found = _findings(_stubbed(quota=32, zones=ZONES[:2])[0])
    assert found == [
        f"eu-west-1: endpoint service com.amazonaws.eu-west-1.{s} is not offered in eu-west-1c"
        for s in account.SSM_SERVICES
    ]


def test_fis_without_its_role_yet_is_fine_the_driver_makes_it():
    assert _findings(_stubbed(quota=32, fis_role=False)[0]) == []


def test_what_cannot_be_read_is_a_warning_not_a_refusal(moto_endpoint, monkeypatch):
    """moto's server serves EC2 and IAM but not EC2's quotas: the quota is unread, nothing lacks."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example")
    [unread] = _findings(account.boto3_client)
    assert isinstance(unread, account.Unread) and "the EC2 vCPU quota (L-1216C47A) could not be read" in unread


def test_check_refuses_an_account_that_lacks_room_naming_it(monkeypatch, capsys):
    from dcdrill.infra.aws.backend import AwsBackend

    monkeypatch.setattr(AwsBackend, "require_support", lambda self: None)
    monkeypatch.setattr(account, "boto3_client", _stubbed(quota=8)[0])
    assert cli.main(["drill", "--stack", STACK, "--experiment", "kill-dc", "--check"]) == 2
    assert "the AWS account cannot run stack aws-3az yet: eu-west-1: the stack's instances need 24 vCPUs" in (
        capsys.readouterr().err
    )

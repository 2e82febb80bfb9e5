"""`lab down` when `pulumi destroy` fails part way: what the state still holds is named, and the
stack's folder (its keys and inventories) stays for the next try."""

import json

import pytest

from dcdrill.infra import ansible, lifecycle, pulumi_cli

EXPORT = {
    "deployment": {
        "resources": [
            {"type": "pulumi:pulumi:Stack", "urn": "urn:pulumi:aws-3az::dcdrill::pulumi:pulumi:Stack::dcdrill-aws-3az"},
            {
                "type": "pulumi:providers:aws",
                "urn": "urn:pulumi:aws-3az::dcdrill::pulumi:providers:aws::eu-west-1",
                "id": "p",
            },
            {
                "type": "aws:s3/bucketV2:BucketV2",
                "urn": "urn:pulumi:aws-3az::dcdrill::dcdrill:aws:Bucket$aws:s3/bucketV2:BucketV2::fault-states",
                "id": "stack-bucket-0a1b2c3",
            },
            {"type": "aws:ec2/vpc:Vpc", "urn": "urn:pulumi:aws-3az::dcdrill::aws:ec2/vpc:Vpc::vpc-eu-west-1"},
        ]
    }
}


def test_a_failed_destroy_names_what_is_left_and_keeps_the_stacks_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    home = ansible.inventory_path("aws-3az")
    home.parent.mkdir(parents=True)
    home.write_text(json.dumps({"all": {"hosts": {}, "vars": {}}}))

    def destroy(stack):
        raise pulumi_cli.PulumiError("pulumi on stack aws-3az failed:\n  error: BucketNotEmpty")

    monkeypatch.setattr(pulumi_cli, "destroy", destroy)
    monkeypatch.setattr(pulumi_cli, "ensure_stack", lambda stack: None)
    monkeypatch.setattr(pulumi_cli, "run", lambda stack, *argv, capture=False: json.dumps(EXPORT))
    with pytest.raises(pulumi_cli.PulumiError) as failed:
        lifecycle.down("aws-3az")
    said = str(failed.value)
    assert "error: BucketNotEmpty" in said and "2 resources of stack aws-3az could not be deleted" in said
    assert "\n  aws:s3/bucketV2:BucketV2 fault-states (stack-bucket-0a1b2c3)" in said
    assert "\n  aws:ec2/vpc:Vpc vpc-eu-west-1 (no id)" in said and "providers" not in said
    assert home.exists()  # its keys and inventories are still needed to finish the teardown

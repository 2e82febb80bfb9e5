"""The AWS driver: the same faults on EC2, by the tags the Pulumi program sets."""

"""What the control needs before it can drive an AWS stack, checked before a drill starts
(`dcdrill drill --check`, and every drill's preflight): AWS's session-manager-plugin, through
which ssh reaches the hosts over SSM (infra/aws/ssm_tunnel.py; `dcdrill setup` builds it), and
credentials boto3 can find, and the `aws` extra itself (boto3, pulumi_aws). Each missing piece is
named with how to install it."""

from __future__ import annotations

from dcdrill.infra.aws import ssm_tunnel

# boto3's providers that would dial a metadata service (169.254.x): a preflight reads files and the
# environment only, so it sends nothing anywhere.
DIALING_PROVIDERS = ("iam-role", "container-role")


def _credentials() -> bool:
    import botocore.session

    session = botocore.session.get_session()
    resolver = session.get_component("credential_provider")
    for name in DIALING_PROVIDERS:
        resolver.remove(name)
    return resolver.load_credentials() is not None


AWS_MODULES = ("boto3", "botocore", "pulumi_aws")  # what `pip install 'dcdrill[aws]'` brings


def missing() -> list[str]:
    """One sentence per missing prerequisite, with how to get it; empty when all are there."""
    import importlib.util

    out = []
    if lacking := [m for m in AWS_MODULES if importlib.util.find_spec(m) is None]:
        out.append(f"{', '.join(lacking)} (the `aws` extra): pip install 'dcdrill[aws,verify]'")
    if ssm_tunnel.plugin() is None:
        out.append(
            f"AWS's {ssm_tunnel.PLUGIN} (ssh reaches the hosts through SSM with it): `dcdrill setup` "
            "builds it (with Go), or install AWS's package: https://docs.aws.amazon.com/systems-manager/"
            "latest/userguide/session-manager-working-with-install-plugin.html"
        )
    if not lacking and not _credentials():
        out.append(
            "AWS credentials (none in the environment or a profile; an instance role is not probed): "
            "export AWS_PROFILE or AWS_* keys, or the CI recipe's OIDC role (docs/ci/)"
        )
    return out

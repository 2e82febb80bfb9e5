"""The exit codes every `dcdrill` command shares, and the extras (pyproject.toml) that bring the
heavy modules: a missing one is named with the line that installs it."""

from __future__ import annotations

EXIT_PASS = 0  # verdict pass, or the command did what it was asked
EXIT_FAIL = 1  # verdict fail
EXIT_BAD_INPUT = 2  # bad input: a stack, a setting, an experiment or a drill record
EXIT_NO_FAULT = 3  # the fault was not injected, or its heal failed: the drill proves nothing
EXIT_NOT_STEADY = 4  # the steady state was not met before the fault

# What each exit code means, for --help epilogs.
MEANINGS = (
    "0 ok / verdict pass, 1 verdict fail, 2 bad input, 3 fault not injected or heal failed, "
    "4 steady state not met before the fault"
)

# The modules each extra brings.
EXTRAS = {"pyspark": "verify", "matplotlib": "verify", "junitparser": "verify", "pulumi_aws": "aws", "boto3": "aws"}


def verdict_code(summary: dict) -> int:
    return EXIT_PASS if summary["verdict"] == "pass" else EXIT_FAIL


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The install line for a module an extra brings; None for any other missing module."""
    extra = EXTRAS.get((exc.name or "").split(".")[0])
    return None if extra is None else f"{exc.name} is not installed: pip install 'dcdrill[{extra}]'"


def missing_extras(extra: str) -> list[str]:
    """The modules of `extra` this Python cannot import."""
    import importlib.util

    return [m for m, e in EXTRAS.items() if e == extra and importlib.util.find_spec(m) is None]

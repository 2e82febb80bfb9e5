"""Topic regexes checked by Java's own rules: MirrorMaker 2 compiles `topics` with
java.util.regex.Pattern, whose syntax is not Python's (`(?<name>…)` is Java's named group and an
error in Python; `a{` is a literal in Python and an error in Java).

The check runs infra/java/RegexCheck.java with the machine's JDK (Kafka's own, `make setup`
installs it), about a second per call, once per process for each set of regexes. Without a JDK
it falls back to Python's `re`, which the schema already narrowed to what both read alike.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

CHECKER = Path(__file__).parent / "java" / "RegexCheck.java"


@functools.lru_cache(maxsize=64)
def _java_verdicts(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    java = shutil.which("java")
    if java is None:
        return None
    try:
        done = subprocess.run(
            [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", str(CHECKER), *patterns],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(patterns):  # a JRE without the source launcher
        return None
    return tuple(lines)


def problems(patterns: list[str]) -> dict[str, str]:
    """{regex: what is wrong with it} for each regex Java refuses (Python's when no JDK answers)."""
    verdicts = _java_verdicts(tuple(sorted(set(patterns))))
    if verdicts is not None:
        return {p: v.removeprefix("error ") for p, v in zip(sorted(set(patterns)), verdicts) if v != "ok"}
    out = {}
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            out[p] = f"{exc} (Python's rules: no JDK answered)"
    return out

"""The Python a client host runs dcdrill's agents and workload with: an environment of its own,
installed by roles/dcdrill_agent from files the control sends, since the hosts have no route to
PyPI (AWS's none, the lab's none) and no copy of the control's files:

- the wheels of what the agents import, at the control's own versions, for CPython 3.11 on
  x86-64 Linux (the lab's hosts, and Amazon Linux 2023's python3.11), downloaded by setup;
- dcdrill's own modules as one zip (the layers an agent runs: infra, record, validation, and
  the roles' defaults infra/ports.py reads).

    python -m dcdrill.infra.agent_runtime download    # setup's step: the wheels into the cache
    python -m dcdrill.infra.agent_runtime check       # exit 0 if they are there
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from dcdrill.infra import workload_jar

# What infra/observe/agent.py, infra/observe/kafka_admin.py and validation/ import, and what those need.
PACKAGES = (
    "annotated-types",
    "cffi",
    "confluent-kafka",
    "cryptography",
    "kafka-python",
    "pip",
    "pycparser",
    "pydantic",
    "pydantic-core",
    "PyYAML",
    "typing-extensions",
    "typing-inspection",
)
PYTHON_VERSION = "3.11"
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
JAVA_WORKLOAD_JAR = "dcdrill-workload.jar"  # its name in the bundle (validation/java_client.py)
JAVA_UNAVAILABLE = "UNAVAILABLE.txt"  # in its place when the control could not compile it
LAYERS = ("infra", "record", "validation")  # dcdrill's subpackages an agent imports
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entries' time: the same modules give the same bytes


def pins() -> list[str]:
    """Each package at the version this control runs (the agents speak the same record format)."""
    return [f"{name}=={metadata.version(name)}" for name in PACKAGES]


def wheels_dir(cache: Path) -> Path:
    key = hashlib.sha256(" ".join(pins()).encode()).hexdigest()[:12]
    return cache / "agent" / f"wheels-{key}"


def downloaded(cache: Path) -> bool:
    return (wheels_dir(cache) / ".complete").exists()


def download(cache: Path) -> Path:
    """The wheels into the cache, once per set of versions (PyPI, as setup's other Python steps)."""
    out = wheels_dir(cache)
    if downloaded(cache):
        return out
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            *[a for p in (*PLATFORMS, "any") for a in ("--platform", p)],
            "-d",
            str(out),
            *pins(),
        ],
        check=True,
    )
    (out / ".complete").write_text("\n".join(pins()) + "\n")
    return out


def bundle(cache: Path) -> Path:
    """dcdrill's modules an agent runs, as a zip named by its content (written once per content)."""
    from dcdrill.infra.constants import SHIPPED

    root = Path(__file__).parent.parent  # dcdrill/ as imported (in a checkout its layers are links)
    modules = [root / "__init__.py"] + sorted(
        p for layer in LAYERS for p in (root / layer).rglob("*.py") if "__pycache__" not in p.parts
    )
    # (name in the zip, file): the modules, and the roles' defaults infra/ports.py reads, where an
    # installed dcdrill keeps them (dcdrill/shipped)
    files = [(f"dcdrill/{f.relative_to(root)}", f) for f in modules] + [
        (f"dcdrill/shipped/{f.relative_to(SHIPPED)}", f) for f in sorted(SHIPPED.glob("roles/*/defaults/main.yml"))
    ]
    # The Java workload (validation/java_client.py): its compiled program and log settings. A
    # control that cannot compile it (no javac, no Kafka jars in its cache) ships why instead:
    # the java client then says so on the host, and the other clients run as ever.
    files += [(f"dcdrill/validation/jvm/{f.name}", f) for f in sorted(workload_jar.SOURCES.glob("log4j*.properties"))]
    try:
        files.append((f"dcdrill/validation/jvm/{JAVA_WORKLOAD_JAR}", workload_jar.ensure()))
    except workload_jar.WorkloadJarUnavailable as exc:
        why = cache / "agent" / "java-workload-unavailable.txt"
        why.parent.mkdir(parents=True, exist_ok=True)
        why.write_text(f"{exc}\n")
        files.append((f"dcdrill/validation/jvm/{JAVA_UNAVAILABLE}", why))
    digest = hashlib.sha256()
    for name, f in files:
        digest.update(name.encode() + b"\0" + f.read_bytes())
    out = cache / "agent" / f"dcdrill-{digest.hexdigest()[:12]}.zip"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for name, f in files:
                info = zipfile.ZipInfo(name, FIXED_TIME)
                info.external_attr = 0o644 << 16
                z.writestr(info, f.read_bytes(), zipfile.ZIP_DEFLATED)
        tmp.replace(out)
        # Earlier contents' zips go: a lab brought up again gets this one (its inventory is
        # written anew), and each change of the modules would otherwise leave 2 MB behind.
        for older in out.parent.glob("dcdrill-*.zip"):
            if older != out:
                older.unlink(missing_ok=True)
    return out


def wheels_archive(cache: Path) -> Path:
    """The wheels as one stored (uncompressed: wheels are zips already) zip beside their folder:
    one copy per host instead of one per wheel. Written once."""
    folder = wheels_dir(cache)
    out = folder.with_suffix(".zip")
    if not out.exists():
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            for f in sorted(folder.glob("*.whl")):
                info = zipfile.ZipInfo(f.name, FIXED_TIME)
                info.external_attr = 0o644 << 16
                z.writestr(info, f.read_bytes())
        tmp.replace(out)
    return out


def inventory_vars(cache: Path) -> dict:
    """What roles/dcdrill_agent copies to the client hosts (files on this control)."""
    if not downloaded(cache):
        raise FileNotFoundError(
            f"the client hosts' Python packages are not in {wheels_dir(cache)}: run "
            "`dcdrill setup` (or `make setup` in a checkout)"
        )
    return {
        "dcdrill_agent_wheels": str(wheels_dir(cache)),
        "dcdrill_agent_wheels_archive": str(wheels_archive(cache)),
        "dcdrill_agent_bundle": str(bundle(cache)),
        "dcdrill_agent_python_version": PYTHON_VERSION,
    }  # the Python the wheels are for


def main(argv: list[str] | None = None) -> int:
    """`download`: the wheels into the cache; `check`: exit 0 if they are there, 1 if not."""
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["download"], ["check"]):
        print("usage: python -m dcdrill.infra.agent_runtime {download|check}", file=sys.stderr)
        return 2
    from dcdrill.infra.constants import cache_dir

    if argv == ["check"]:
        return 0 if downloaded(cache_dir()) else 1
    print(download(cache_dir()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

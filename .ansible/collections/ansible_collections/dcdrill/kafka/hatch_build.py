"""The wheel's build hook: the verifier's JVM kernels go into the wheel compiled (spark/kernels.py),
so an installed `dcdrill verify` needs a Java runtime and no JDK. They are compiled against the
building environment's pyspark, which an isolated build (pip from a git URL, plain `python -m
build`) does not have: that wheel goes without them and compiles them on first use. `make wheel`
builds in the project's own environment (--no-isolation) and carries them."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class KernelsBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"
    kernels_dir: Path | None = None  # the compiled kernels' folder, removed once the wheel is written

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        sys.path.insert(0, self.root)  # the tree being built, not an installed dcdrill
        out = self.kernels_dir = Path(tempfile.mkdtemp(prefix="dcdrill-wheel-kernels-"))
        try:
            from dcdrill.spark import kernels

            key = kernels.compile_jar(out / "dcdrill-kernel.jar")
        except (ImportError, RuntimeError) as exc:  # no pyspark (an isolated build) or no javac: KernelsUnavailable
            print(f"dcdrill wheel: without compiled kernels ({exc}); they compile on first use", file=sys.stderr)
            return
        (out / "dcdrill-kernel.key").write_text(key)
        for name in ("dcdrill-kernel.jar", "dcdrill-kernel.key"):
            build_data["force_include"][str(out / name)] = f"dcdrill/spark/{name}"

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        if self.kernels_dir is not None:
            shutil.rmtree(self.kernels_dir, ignore_errors=True)
            self.kernels_dir = None

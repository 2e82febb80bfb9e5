"""A Pulumi language host for Python programs, served by the pinned Python SDK itself.

Why this exists: `make setup` builds the Pulumi CLI from the Go module proxy, but the proxy
here serves no version of `github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3`
(every query answers "This module version is not available"; see README "Toolchain").
The CLI speaks to a language host over gRPC (LanguageRuntime), and the Python SDK ships a
complete LanguageRuntime servicer for Automation API inline programs. This launcher serves
that servicer the way the CLI launches any language plugin (`pulumi-language-python [flags]
ENGINE_ADDRESS`, port printed on stdout) and runs the project's `main:` folder as the program.
`pulumi up`, `preview`, `refresh` and `destroy` then work unchanged.
"""
from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

try:  # a private module: the SDK's range is wide for users' projects, so say what to do if it moves
    from pulumi.automation._server import LanguageServer
except ImportError as exc:
    from importlib.metadata import version

    raise SystemExit(f"dcdrill's language host (for the Pulumi CLI make setup builds) needs "
                     f"pulumi.automation._server, which pulumi {version('pulumi')} does not have ({exc}): "
                     f"install the version requirements.lock names, or put a Pulumi CLI of your own "
                     f"on PATH (it brings its own language host)") from None

MAX_MESSAGE = 400 * 1024 * 1024  # as the SDK's own servers allow


class ProjectLanguageServer(LanguageServer):
    def __init__(self, engine_address: str) -> None:
        super().__init__(program=self._program)
        self.engine_address = engine_address
        self.program_dir = ""

    def _program(self) -> None:
        runpy.run_path(self.program_dir, run_name="__main__")

    def Run(self, request, context):
        info = request.info
        self.program_dir = os.path.join(info.root_directory, info.program_directory) if info.program_directory \
            else (request.program or request.pwd)
        if request.pwd:
            os.chdir(request.pwd)
        if not request.args:
            request.args.append(self.engine_address)  # the servicer reads the engine address from args[0]
        return super().Run(request, context)


    def GetRequiredPlugins(self, request, context):
        """The provider plugins the stack's program uses: the AWS provider for an AWS stack, none
        for a lab stack (its resources are dynamic, served by this Python). The official host
        lists every provider package installed, which would make a lab stack need the AWS plugin
        too. The stack comes from DCDRILL_STACK (infra/pulumi_cli.py sets it); without it (a
        `pulumi` run by hand), nothing is listed and the CLI resolves plugins as resources ask."""
        return language_pb2.GetRequiredPluginsResponse(plugins=[
            plugin_pb2.PluginDependency(name=name, kind="resource", version=version)
            for name, version in required_plugins(os.environ.get("DCDRILL_STACK"))])

    def GetProgramDependencies(self, request, context):
        """`pulumi about`: the program's Python packages (this environment's), as the official host lists them."""
        from importlib import metadata

        found = sorted({(d.metadata["Name"], d.version) for d in metadata.distributions() if d.metadata["Name"]})
        return language_pb2.GetProgramDependenciesResponse(
            dependencies=[language_pb2.DependencyInfo(name=name, version=version) for name, version in found])


def required_plugins(stack: str | None) -> list[tuple[str, str]]:
    """(name, version) of the provider plugins `stack` needs: its backend's provider package's
    pulumi-plugin.json (pulumi_aws for an AWS stack)."""
    if not stack:
        return []
    from dcdrill.infra import stack as stacks

    if stacks.backend(stack).name != "aws":
        return []
    import json

    import pulumi_aws

    meta = json.loads(Path(pulumi_aws.__file__).with_name("pulumi-plugin.json").read_text())
    return [(meta["name"], meta["version"])]


def main(argv: list[str]) -> int:
    positional = [a for a in argv if not a.startswith("-")]
    engine = positional[-1] if positional else ""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=[
        ("grpc.max_send_message_length", MAX_MESSAGE), ("grpc.max_receive_message_length", MAX_MESSAGE)])
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(ProjectLanguageServer(engine), server)
    port = server.add_insecure_port("127.0.0.1:0")
    # The CLI ends its plugins with SIGINT when it is done with them: that is this host's normal
    # end, not an interruption (a KeyboardInterrupt traceback would reach the user as 22 lines of
    # diagnostics on the Stack).
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    print(port, flush=True)
    while not done.wait(1.0):
        pass
    server.stop(grace=1.0).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A dcdrill process that has run gRPC (Pulumi's Automation API does, in process) forks children
that live to exec: pyspark starts the verifier's JVM that way (dcdrill/__init__.py)."""

import subprocess
import sys

FORKS = """
import concurrent.futures, subprocess, tempfile
import dcdrill  # before grpc, as in the CLI
import grpc

server = grpc.server(concurrent.futures.ThreadPoolExecutor(2))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
channel = grpc.insecure_channel(f"127.0.0.1:{port}")  # kept: its poller stays, as Pulumi's do
grpc.channel_ready_future(channel).result(timeout=10)
server.stop(0)
died = []
for _ in range(300):
    with tempfile.TemporaryFile() as err:
        # preexec_fn makes subprocess fork rather than vfork, as pyspark's launch_gateway does
        rc = subprocess.Popen(["/bin/true"], preexec_fn=lambda: None, stderr=err, close_fds=True).wait()
        err.seek(0)
        if rc or err.read():
            died.append(rc)
print(died)
"""


def test_forked_children_of_a_process_that_ran_grpc_reach_exec():
    # Without the setting, 4 of 300 children aborted here (SIGABRT, gRPC's epoll_wait error).
    out = subprocess.run(
        [sys.executable, "-c", FORKS], capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin"}
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout + out.stderr[-2000:]

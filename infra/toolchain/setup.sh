#!/usr/bin/env bash
# make setup (in a checkout) or `dcdrill setup` (installed from a wheel): installs everything
# dcdrill needs, idempotently. Each step is skipped when its
# stamp under $DCDRILL_CACHE matches its inputs, so a second run takes seconds.
#   1. Debian packages (iproute2, sshd, iptables, chromium for the report's browser test, ...) apt-get
#   2. Python deps (pyproject.toml, locked by requirements.lock) -> .venv/   PyPI (checkout only)
#      and the client hosts' agent wheels (infra/agent_runtime.py) -> cache/agent  PyPI
#   3. Apache Kafka 3.9.x + ZooKeeper jars -> cache/kafka/libs Maven Central (kafka-pom.xml)
#      and Kafka 4.x (KRaft stacks) beside it -> cache/kafka4/libs (kafka4-pom.xml)
#      and hadoop-aws + AWS SDK for s3a:// records -> cache/s3a/libs (s3a-pom.xml)
#   3b. A class-data archive per Kafka version for the lab's JVMs -> cache/<folder>/cds-*.jsa (infra/java_archive.py)
#   4. Pulumi CLI -> cache/bin, unless `pulumi` is on PATH     Go module proxy (pulumi-go/go.mod)
#      plus the dynamic-provider launcher (the program itself runs through the Automation API)
#      and AWS's session-manager-plugin (SSH to EC2 hosts through SSM) -> cache/bin  Go module proxy (ssm-plugin/go.mod)
#   5. Pulumi home -> cache/pulumi-home (its local file backend is state: infra/pulumi_cli.py)
#   6. The verifier's JVM kernels (spark/jvm/*.java) -> cache/spark-kernel/dcdrill-kernel.jar   javac
#   7. Class-data archive for the verifier JVM -> cache/spark-cds-*.jsa (spark/java_runtime.py, spark/java_archive.py)
#   8. The lab's inter-DC forwarder (infra/lab/forwarder, Go, standard library only) -> cache/bin
#      and its power-loss disk (infra/lab/disk, Go, go-fuse from the Go module proxy) -> cache/bin;
#      skipped without Go (only the lab needs them)
#   9. actionlint (the CI recipe's linter, docs/ci/; checkout only)                    Go module proxy
# Steps 4 (the CLI's build), 8, 4b and 9 compile Go, in that order; they run beside steps 2 to 7
# (go_builds). DCDRILL_SETUP_LAB_FIRST=1 leaves 4b and 9 (not the lab's) for the next setup.
# ROOT holds the layers' folders (infra/, spark/, ...): a checkout (with pyproject.toml), or the
# installed dcdrill package, where `dcdrill setup` passes DCDRILL_CACHE and DCDRILL_PYTHON (the
# Python dcdrill runs on). cd -P: in a checkout this script may be reached through dcdrill/infra.
set -euo pipefail
ROOT=$(cd -P "$(dirname "$0")/../.." && pwd)
CHECKOUT=; [ -f "$ROOT/pyproject.toml" ] && CHECKOUT=1
CACHE=${DCDRILL_CACHE:-$ROOT/.cache}
VENV=$ROOT/.venv
PY=${DCDRILL_PYTHON:-$VENV/bin/python}
mkdir -p "$CACHE/bin" "$CACHE/stamps"
step() { printf '\n== setup: %s\n' "$*"; }
stamp_ok() { [ -f "$CACHE/stamps/$1" ] && [ "$(cat "$CACHE/stamps/$1")" = "$2" ]; }
stamp() { echo "$2" > "$CACHE/stamps/$1"; }

# 1. system packages ------------------------------------------------------------------------
need=()
for pair in ip:iproute2 tc:iproute2 sshd:openssh-server ssh:openssh-client ssh-keygen:openssh-client \
            iptables:iptables sudo:sudo ping:iputils-ping pgrep:procps java:openjdk-17-jdk-headless javac:openjdk-17-jdk-headless mvn:maven \
            ${CHECKOUT:+chromium:chromium shellcheck:shellcheck}; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  [ "$(id -u)" = 0 ] || { echo "setup needs root to apt-get install ${need[*]}" >&2; exit 1; }
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
# Go only for what is built here (the Pulumi CLI when none is on PATH, the lab's forwarder,
# actionlint): asked for at the first build, naming it.
need_go() { command -v go >/dev/null || { echo "setup needs Go >= 1.24 on PATH to build $1" >&2; exit 1; }; }
# A long build says every minute that it is still going.
with_progress() {
  local what=$1; shift
  "$@" & local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5; waited=$((waited + 5))
    [ $((waited % 60)) -ne 0 ] || echo "   ... $what: still going, $((waited / 60)) min"
  done
  wait "$pid"
}

# The Go builds (the Pulumi CLI, the session-manager-plugin, the lab's forwarder and disk,
# actionlint) are CPU work, the Python and Maven steps mostly downloads: on a bare machine the
# builds run beside them, their lines prefixed [go], and setup waits for both.
go_builds() {
  # 4. Pulumi CLI from the Go module proxy ---------------------------------------------------------
  GOMOD=$ROOT/infra/toolchain/pulumi-go
  PULUMI_VERSION=$(sed -n 's/.*github.com\/pulumi\/pulumi\/pkg\/v3 \(v[0-9.]*\).*/\1/p' "$GOMOD/go.mod" | head -1)
  key="$PULUMI_VERSION-$(sha256sum "$GOMOD/go.sum" | cut -c1-16)"
  USER_PULUMI=$(command -v pulumi || true)
  if [ -n "$USER_PULUMI" ] && [ -z "${DCDRILL_BUILD_PULUMI:-}" ]; then
    step "Pulumi CLI: yours, $USER_PULUMI (DCDRILL_BUILD_PULUMI=1 builds one instead)"
  elif ! stamp_ok pulumi "$key" || [ ! -x "$CACHE/bin/pulumi" ]; then
    step "Pulumi CLI $PULUMI_VERSION from the Go module proxy (first build: ~10 min on 2 cores)"
    need_go "the Pulumi CLI (or put your own pulumi on PATH)"
    with_progress "building the Pulumi CLI" sh -c "cd '$GOMOD' && GOFLAGS=-mod=mod go build -trimpath \
       -ldflags '-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION' \
       -o '$CACHE/bin/pulumi' github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
    stamp pulumi "$key"
  fi
  # 8. The lab's userspace forwarder: inter-DC delay on kernels without sch_netem -----------------
  key=$(cat "$ROOT"/infra/lab/forwarder/go.mod "$ROOT"/infra/lab/forwarder/*.go | sha256sum | cut -c1-16)
  if ! command -v go >/dev/null; then
    step "lab forwarder and power-loss disk: skipped, no Go here (the lab needs them, an AWS stack does not: install Go >= 1.24 and run setup again)"
  elif ! stamp_ok forwarder "$key" || [ ! -x "$CACHE/bin/dcdrill-forwarder" ]; then
    step "lab forwarder (infra/lab/forwarder) -> $CACHE/bin/dcdrill-forwarder"
    (cd "$ROOT/infra/lab/forwarder" && go vet . && go build -trimpath -o "$CACHE/bin/dcdrill-forwarder" .)
    stamp forwarder "$key"
  fi
  key=$(cat "$ROOT"/infra/lab/disk/go.mod "$ROOT"/infra/lab/disk/go.sum "$ROOT"/infra/lab/disk/*.go | sha256sum | cut -c1-16)
  if command -v go >/dev/null && { ! stamp_ok disk "$key" || [ ! -x "$CACHE/bin/dcdrill-disk" ]; }; then
    step "lab power-loss disk (infra/lab/disk) -> $CACHE/bin/dcdrill-disk"
    (cd "$ROOT/infra/lab/disk" && go vet . && go build -trimpath -o "$CACHE/bin/dcdrill-disk" .)
    stamp disk "$key"
  fi
  # What only AWS stacks and the unit tests need comes last. `make test` sets DCDRILL_SETUP_LAB_FIRST
  # so that the lab tests start without it, and builds it in the setup its unit tests run first.
  if [ -n "${DCDRILL_SETUP_LAB_FIRST:-}" ]; then
    if [ ! -x "$CACHE/bin/actionlint" ] || { ! command -v session-manager-plugin >/dev/null \
      && [ ! -x "$CACHE/bin/session-manager-plugin" ]; }; then
      step "session-manager-plugin and actionlint: left for the next setup (DCDRILL_SETUP_LAB_FIRST)"
    fi
    return 0
  fi
  # 4b. AWS's session-manager-plugin: ssh reaches an AWS stack's hosts through SSM with it
  # (infra/aws/ssm_tunnel.py). Yours if on PATH; without Go it is left out (only AWS stacks need it,
  # and `dcdrill drill --check` on one names it).
  key=$(cat "$ROOT"/infra/toolchain/ssm-plugin/go.mod "$ROOT"/infra/toolchain/ssm-plugin/go.sum | sha256sum | cut -c1-16)
  if command -v session-manager-plugin >/dev/null; then
    :
  elif ! command -v go >/dev/null; then
    step "session-manager-plugin: skipped, no Go here (AWS stacks need it: install Go >= 1.24 and run setup again)"
  elif ! stamp_ok ssm-plugin "$key" || [ ! -x "$CACHE/bin/session-manager-plugin" ]; then
    step "AWS session-manager-plugin from the Go module proxy -> $CACHE/bin (about 2 min the first time)"
    with_progress "building the session-manager-plugin" sh -c "cd '$ROOT/infra/toolchain/ssm-plugin' && \
       GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o '$CACHE/bin/session-manager-plugin' \
       github.com/aws/session-manager-plugin/src/sessionmanagerplugin-main"
    stamp ssm-plugin "$key"
  fi

  # 9. actionlint: make test lints the GitHub Actions recipe (docs/ci/github-actions.yml) -----------
  ACTIONLINT_VERSION=v1.7.12
  if [ -n "$CHECKOUT" ] && { ! stamp_ok actionlint "$ACTIONLINT_VERSION" || [ ! -x "$CACHE/bin/actionlint" ]; }; then
    step "actionlint $ACTIONLINT_VERSION from the Go module proxy -> $CACHE/bin/actionlint"
    need_go "actionlint"
    GOBIN="$CACHE/bin" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
    stamp actionlint "$ACTIONLINT_VERSION"
  fi
}
# Go's one line per module downloaded is left out: with_progress says every minute that a build goes on.
go_builds > >(sed -u -e '/^go: downloading /d' -e 's/^/  [go] /') 2>&1 &
GO_BUILDS=$!
# A step that fails here ends setup: the builds beside it end with it.
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null || true; }
stop_go_builds() { kill_tree "$GO_BUILDS"; }
trap stop_go_builds EXIT

# 2. Python virtualenv (a checkout's; an installed dcdrill already has its Python packages) ------
if [ -n "$CHECKOUT" ]; then
  key=$(cat "$ROOT/pyproject.toml" "$ROOT/requirements.lock" | sha256sum | cut -c1-16)
  if ! stamp_ok venv "$key" || [ ! -x "$VENV/bin/dcdrill" ]; then
    step "Python deps into .venv (pyproject.toml's ranges, at requirements.lock's versions)"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -c "$ROOT/requirements.lock" -e "${ROOT}[aws,verify,report,dev]"
    stamp venv "$key"
  fi
fi

# A checkout's example stacks: Pulumi writes each developer's own encryptionsalt into them at the
# first `stack init`; .gitattributes' filter keeps it out of what git sees, so none is committed.
if [ -n "$CHECKOUT" ] && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$ROOT" config filter.pulumi-salt.clean "sed '/^encryptionsalt:/d'"
  git -C "$ROOT" config filter.pulumi-salt.smudge cat
fi

# 2b. The client hosts' Python packages: wheels at this Python's versions, which roles/dcdrill_agent
# installs on each client host (the hosts reach no package index) ----------------------------------
if ! DCDRILL_CACHE="$CACHE" "$PY" -m dcdrill.infra.agent_runtime check; then
  step "the client hosts' Python packages (wheels from PyPI) -> $CACHE/agent"
  DCDRILL_CACHE="$CACHE" "$PY" -m dcdrill.infra.agent_runtime download
fi

# 3. Jars from Maven Central: each <name>-pom.xml's runtime dependencies -> $CACHE/<name>/libs --------
maven_libs() {
  local pom="$ROOT/infra/toolchain/$1-pom.xml" key
  key=$(sha256sum "$pom" | cut -c1-16)
  stamp_ok "$1" "$key" && return 0
  step "$2 from Maven Central"
  rm -rf "$CACHE/$1/libs"
  mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$CACHE/$1/libs"
  stamp "$1" "$key"
}
maven_libs kafka "Apache Kafka 3.9 + ZooKeeper jars"
maven_libs kafka4 "Apache Kafka 4.x jars (KRaft)"
maven_libs s3a "hadoop-aws + AWS SDK jars (s3a:// drill records)"

# 3b. A class-data archive per Kafka version for the lab's JVMs (infra/java_archive.py): a broker
# on loopback serves a short TLS + SCRAM load and dumps its classes as it stops. Named after the
# JDK and the jars, so it is trained again only when either changes.
(cd "$ROOT" && DCDRILL_CACHE="$CACHE" "$PY" -m dcdrill.infra.java_archive)

# 4. The Pulumi CLI's dynamic-provider launcher (the CLI itself: go_builds) ----------------------
# The program needs no language host: dcdrill runs it through the Automation API (infra/pulumi_cli.py).
# Its dynamic resources are served by `pulumi-resource-pulumi-python`, as the official release's
# two-line script does: the Python SDK's own provider, on the Python of the dcdrill that runs
# pulumi (DCDRILL_PYTHON), else the checkout's. An installed dcdrill's setup writes it only when
# missing, so it never points a checkout's at another virtualenv.
rm -f "$CACHE/bin/pulumi-language-python"  # written by an earlier setup; its module is gone
if [ -n "$CHECKOUT" ] || [ ! -x "$CACHE/bin/pulumi-resource-pulumi-python" ]; then
  cat > "$CACHE/bin/pulumi-resource-pulumi-python" <<EOS
#!/bin/sh
exec "\${DCDRILL_PYTHON:-$PY}" -u -m pulumi.dynamic "\$@"
EOS
  chmod +x "$CACHE/bin/pulumi-resource-pulumi-python"
fi

# 5. Pulumi local file backend ---------------------------------------------------------------------
mkdir -p "$CACHE/pulumi-home"

# 6. The verifier's JVM kernels, compiled against pyspark's own jars (no Spark download) -------------
# The JDK that runs Spark compiles them (spark/java_runtime.py picks it), for Java 17 so any JDK Spark
# supports can load them. Without pyspark (installed without [verify]) steps 6 and 7 wait for it.
if "$PY" -c 'import pyspark' 2>/dev/null; then
(cd "$ROOT" && "$PY" -m dcdrill.spark.kernels)

# 7. Class-data archive for the verifier's JVM (spark/java_runtime.py, spark/java_archive.py) ---------
if [ ! -f "$(cd "$ROOT" && "$PY" -c 'from dcdrill.spark.java_runtime import archive_path; print(archive_path())')" ]; then
  step "Spark class-data archive (about a minute, once per JDK and pyspark version)"
  with_progress "the class-data archive" sh -c "cd '$ROOT' && '$PY' -m dcdrill.spark.java_archive"
fi
else
  step "verifier kernels: skipped, no pyspark here (pip install 'dcdrill[verify]', then setup again)"
fi
# The Go builds, started before step 2
if ! wait "$GO_BUILDS"; then echo "setup: a Go build failed (its lines above, prefixed [go])" >&2; exit 1; fi
trap - EXIT
echo "setup: ok (python $PY, cache $CACHE)"

# dcdrill: the two commands are `make drill` and `make test`. Everything installs itself.
STACK ?= local
# EXPERIMENT: default kill-dc, or kill-source-dc on a replicated stack
EXPERIMENT ?=
DC ?=
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup lab lab-down status plan check drill test unit style bench lock clean wheel docs

setup:  ## install apt packages, .venv, Kafka jars (Maven), the Pulumi CLI (Go) and the verifier's JVM kernels (javac); idempotent
	@bash infra/toolchain/setup.sh

plan: setup  ## check the stack's topology rules and predict each DC loss
	$(BIN)/dcdrill plan --stack $(STACK)

lab: setup  ## pulumi up + Ansible until healthy
	$(BIN)/dcdrill lab up --stack $(STACK)

lab-down: setup  ## pulumi destroy: no namespace, link or JVM left
	$(BIN)/dcdrill lab down --stack $(STACK)

status: setup
	$(BIN)/dcdrill status --stack $(STACK)

check: setup  ## the drill's preflight alone: stack rules, the experiment on the stack's backend; starts nothing
	$(BIN)/dcdrill drill --stack $(STACK) $(if $(EXPERIMENT),--experiment $(EXPERIMENT),) $(if $(DC),--dc $(DC),) --check

drill: setup  ## the full drill: preflight, lab up if needed, experiment, verify, report
	$(BIN)/dcdrill drill --stack $(STACK) $(if $(EXPERIMENT),--experiment $(EXPERIMENT),) $(if $(DC),--dc $(DC),) $(if $(REPEAT),--repeat $(REPEAT),) $(if $(CLIENT),--client $(CLIENT),)

docs: setup  ## docs/report.png, the README's screenshot: docs/example-record's report in Debian's Chromium
	$(BIN)/python docs/report_screenshot.py

# ansible-lint over the whole project (the collection, roles, playbook, CI recipes), production
# profile; galaxy[no-repository] is its one finding, a warning until the project has a public
# address. It runs ansible-playbook's syntax check, which it finds on PATH.
ANSIBLE_LINT := PATH=$(abspath $(BIN)):$$PATH $(BIN)/ansible-lint --offline --profile production --nocolor -q -w 'galaxy[no-repository]'

wheel: setup  ## dist/dcdrill-<version>-py3-none-any.whl, what `pip install 'dist/...whl[verify]'` installs
	$(BIN)/python -m build --wheel --no-isolation --outdir dist .  # in .venv: its pyspark compiles the kernels in

# The style: ruff's rules and formatter (pyproject.toml's [tool.ruff]) and shellcheck on the shell scripts
STYLE := $(BIN)/ruff check -q . && $(BIN)/ruff format -q --check . && shellcheck infra/toolchain/setup.sh .ci/run

# What needs no lab: the style, the import layers, ansible-lint (production) and every test not marked `lab`
UNIT := $(STYLE) && $(BIN)/lint-imports && $(ANSIBLE_LINT) && $(BIN)/python -m pytest -q -ra --durations=30 -m "not lab" -p no:cacheprovider tests

# The lab tests start once what the lab needs is installed; the rest of setup (AWS's
# session-manager-plugin, actionlint: Go builds) runs beside them, niced, before the unit tests.
# The lab tests keep the flag: a `dcdrill setup` among them builds nothing into the shared cache.
test:  ## the lab tests on the real lab and, beside them at nice 19 so the lab keeps its CPU, everything `make unit` runs
	@DCDRILL_SETUP_LAB_FIRST=1 bash infra/toolchain/setup.sh
	@mkdir -p .cache; nice -n 19 sh -c 'bash infra/toolchain/setup.sh && $(UNIT)' > .cache/unit-tests.log 2>&1 & unit=$$!; \
	DCDRILL_SETUP_LAB_FIRST=1 $(BIN)/python -m pytest -q -ra --durations=30 -m lab tests; lab=$$?; \
	echo "== beside the lab tests (.cache/unit-tests.log): lint-imports, ansible-lint, the tests that need no lab"; \
	wait $$unit; unit=$$?; cat .cache/unit-tests.log; \
	echo "== lab tests: exit $$lab; beside them: exit $$unit"; test $$lab = 0 && test $$unit = 0

style: setup  ## ruff check, ruff format --check and shellcheck
	$(STYLE)

unit: setup  ## everything but the lab tests (marked `lab`)
	$(UNIT)

bench: setup
	$(BIN)/python tests/benchmarks/lab_bringup.py

lock:  ## renew requirements.lock: a fresh resolve of pyproject.toml's ranges with every extra
	rm -rf .cache/lock-venv && python3 -m venv .cache/lock-venv
	.cache/lock-venv/bin/pip install -q ".[aws,verify,report,dev]"
	{ echo "# make lock: pyproject.toml's ranges resolved with every extra; make setup installs these."; \
	  .cache/lock-venv/bin/pip freeze --exclude dcdrill; } > requirements.lock
	rm -rf .cache/lock-venv

clean:
	-$(BIN)/dcdrill lab down --stack $(STACK)
	rm -rf .cache .state runs

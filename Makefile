# dcdrill: the two commands are `make drill` and `make test`. Everything installs itself.
STACK ?= local
EXPERIMENT ?= kill-dc
DC ?=
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup lab lab-down status plan drill test unit integration bench clean

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

drill: setup  ## the full drill: lab up if needed, experiment, verify, report
	$(BIN)/dcdrill drill --stack $(STACK) --experiment $(EXPERIMENT) $(if $(DC),--dc $(DC),) $(if $(REPEAT),--repeat $(REPEAT),)

test: setup  ## unit tests, then the integration tests on the real lab
	$(BIN)/python -m pytest -q -ra tests

unit: setup
	$(BIN)/python -m pytest -q -ra -m "not lab" tests

bench: setup
	$(BIN)/python tests/benchmarks/lab_bringup.py

clean:
	-$(BIN)/dcdrill lab down --stack $(STACK)
	rm -rf .cache runs

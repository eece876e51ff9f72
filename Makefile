# The two commands of the README, and their parts.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv/bin
export PATH := $(VENV):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: demo lab lab-up lab-status lab-down test bootstrap lint sanity units integration molecule build clean-lab bench bench-short

demo: bootstrap  ## main job: the lab, a phase-changing workload, autotune planning and applying, a report
	scripts/demo.sh $(DEMO_ARGS)

lab: bootstrap lab-up  ## bring up the local lab and show its health

lab-up:
	ansible-playbook playbooks/lab_up.yml

lab-status: bootstrap
	ansible-playbook playbooks/lab_status.yml

lab-down: bootstrap
	ansible-playbook playbooks/lab_down.yml

test: bootstrap  ## the whole suite: lint, sanity, unit, integration, molecule
	scripts/run-tests.sh

bootstrap:
	scripts/bootstrap.sh

lint: bootstrap
	scripts/run-tests.sh lint

sanity: bootstrap
	scripts/run-tests.sh sanity

units: bootstrap
	scripts/run-tests.sh units

integration: bootstrap
	scripts/run-tests.sh integration

molecule: bootstrap
	scripts/run-tests.sh molecule

build: bootstrap
	ansible-galaxy collection build --force --output-path .build/dist

# The benchmarks need only the virtual environment (make bootstrap makes it); make bench starts the servers its
# experiments need. Results go to results/<UTC time>/. run.py prints how long the chosen set is expected to take
# first (the full set: about 10 h on 2 CPUs; BENCH_ARGS="--only ..." for a part, run.py --list for each one's time).
bench: bootstrap  ## every benchmark experiment, full size (about 10 h), servers started and stopped as needed
	$(VENV)/python benchmarks/run.py --servers start $(BENCH_ARGS)

bench-short:  ## the simulations at their short size (under 10 minutes on 2 CPUs); servers: BENCH_ARGS="--servers start"
	@test -x $(VENV)/python || { echo "make bench-short: no .venv; run make bootstrap first" >&2; exit 1; }
	$(VENV)/python benchmarks/run.py --short $(BENCH_ARGS)

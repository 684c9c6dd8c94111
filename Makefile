# Two commands do all the set-up on a fresh machine (see README):
#   make demo   installs tftrace and TensorFlow into .venv, records and analyses an example workload,
#               then sweeps intra-op threads 1..2 on another
#   make test   installs the same plus the test tools, then runs lint, type check and tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest install clean browser

$(STAMP): pyproject.toml setup.py analysis/xplane/_wire.c analysis/export/_events.c tracer/_procstat.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[cpu,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tftrace record -o tftrace-runs/demo-$$(date +%Y%m%d-%H%M%S) --name demo \
		examples/eager_matmul.py --size 1500 --repeat 5
	$(BIN)/tftrace summary $$(ls -d tftrace-runs/demo-* | tail -n 1)
	$(BIN)/tftrace threads $$(ls -d tftrace-runs/demo-* | tail -n 1)
	$(BIN)/tftrace analyze $$(ls -d tftrace-runs/demo-* | tail -n 1)
	$(BIN)/tftrace report $$(ls -d tftrace-runs/demo-* | tail -n 1)
	$(BIN)/tftrace sweep --intra 1,2 --inter 1 --repeat 3 --name demo \
		examples/matmul_scaling.py --size 1500

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python .ci/typecheck.py

# First the tests that time nothing, side by side on every core; then the end-to-end known
# answers one at a time, with the cores to themselves (tests/README.md).
pytest: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile -m side_by_side
	$(BIN)/python -m pytest -m "not side_by_side"

# The report and export tests render pages in headless Chromium (Debian's package).
browser:
	@command -v chromium >/dev/null 2>&1 || \
		(apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test: browser lint typecheck pytest

clean:
	rm -rf $(VENV) tftrace-runs .typecheck

# kernelscope: `make run` (the main job) and `make test`. Both set up .venv first.
# On a machine without a GPU everything runs on the CPU path: Triton under its
# interpreter, Numba under the CUDA simulator, CUDA C++ compile-checked by nvcc.
PYTHON ?= python3
NPM ?= npm
VENV ?= .venv
TEST_WORKERS ?= 2
BIN := $(VENV)/bin
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)
export NO_MKDOCS_2_WARNING := 1

.PHONY: run test install check bench site serve clean

$(BIN)/kernelscope: pyproject.toml requirements/cpu.txt
	# --system-site-packages: a GPU box's own CUDA torch is reused, not downloaded again
	$(PYTHON) -m venv --system-site-packages $(VENV)
ifeq ($(HAS_GPU),yes)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[bench,test,docs]'
else
	# The CPU path: the pinned CPU torch through pip, then the rest through uv, which fetches and installs
	# in parallel (a third of pip's time). Not on a GPU box: uv does not see the system's CUDA torch.
	$(BIN)/python -m pip install -q uv -r requirements/cpu.txt
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[bench,test,docs]'
endif
	@touch $@

# The chart library the site ships (vega, vega-lite, vega-embed), pinned by package-lock.json.
node_modules/.package-lock.json: package.json package-lock.json
	@command -v $(NPM) >/dev/null || { echo "npm not found: the site ships its chart library from npm; install Node.js 18+" >&2; exit 1; }
	$(NPM) ci --no-audit --no-fund --loglevel=error

install: $(BIN)/kernelscope node_modules/.package-lock.json

## run: check every variant, run the asv suite, then build the site from results/
run: install
	PATH=$(abspath $(BIN)):$$PATH bash scripts/run

## test: the test suite (CPU path without a GPU; add -m gpu on a GPU box), in TEST_WORKERS processes
## (pytest-xdist; tests that share a fixture made once per module, such as one asv run, stay in one process)
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

## site: build the results site into site/ (strict: a broken link or a missing file fails)
site: install
	$(BIN)/mkdocs build --strict

## serve: the site at http://127.0.0.1:8000, rebuilt on every change
serve: install
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .asv site node_modules

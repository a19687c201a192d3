# kernelscope: `make run` (the main job) and `make test`. Both set up .venv first.
# On a machine without a GPU everything runs on the CPU path: Triton under its
# interpreter, Numba under the CUDA simulator, CUDA C++ compile-checked by nvcc.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)

.PHONY: run test install check bench clean

$(BIN)/kernelscope: pyproject.toml requirements/cpu.txt
	# --system-site-packages: a GPU box's own CUDA torch is reused, not downloaded again
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
ifneq ($(HAS_GPU),yes)
	$(BIN)/python -m pip install -q -r requirements/cpu.txt
endif
	$(BIN)/python -m pip install -q -e '.[bench,test,docs]'
	@touch $@

install: $(BIN)/kernelscope

## run: check every variant against the float64 reference, then the asv suite
run: install
	PATH=$(abspath $(BIN)):$$PATH bash scripts/run

## test: the test suite (CPU path without a GPU; add -m gpu on a GPU box)
test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .asv

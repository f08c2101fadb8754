# Everything a fresh machine needs: `make demo` and `make test` create the venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fxlint-installed

.PHONY: demo test test-portability venv clean

$(STAMP): pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

## lint every scenario model in models/ and print the findings (a model file's DEVICE = "cuda" lints it for
## that device, simulated without a GPU: docs/device.md)
demo: $(STAMP)
	$(VENV)/bin/fxlint lint --zoo models --fail-on never

## run the test suite (fails when no test ran), then the CPU-dependent tests with the CPU paths forced down
test: $(STAMP)
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory test-portability

# The kernel model must hold on any x86-64 CPU: rerun the tests of what depends on the CPU with ATen's
# kernels and oneDNN forced down (README: "On every CPU"). CLI subprocess tests are left to the main run.
PORTABILITY_MODES ?= ATEN_CPU_CAPABILITY=avx2 ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 FXLINT_TEST_MKLDNN=0
PORTABILITY_TESTS := tests/test_kernel_sweep.py tests/test_kernels.py tests/test_kernel_registry.py \
	tests/test_kernel_probe.py tests/test_layout_models.py tests/test_fxl201_noncontiguous_matmul.py \
	tests/test_fxl202_noncontiguous_conv.py tests/test_fxl203_noncontiguous_norm.py \
	tests/test_fxl204_layout_pessimization.py

## the CPU-dependent tests once per forced-down CPU mode (half the sweep's sample in each)
test-portability: $(STAMP)
	FXLINT_SWEEP_SCALE=0.5 $(PY) -m tests._portability check $(PORTABILITY_MODES) -- \
		-q -p no:cacheprovider $(PORTABILITY_TESTS) \
		--deselect tests/test_kernel_probe.py::test_cli_no_probe_and_env \
		--deselect tests/test_layout_models.py::test_zoo_demo_lists_the_layout_scenarios

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

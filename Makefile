# Everything a fresh machine needs: `make demo` and `make test` create the venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fxlint-installed

.PHONY: demo test test-portability check venv clean docs docs-screenshot

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
	$(PY) -m pytest -q -n auto --dist loadscope
	$(MAKE) --no-print-directory test-portability

# The kernel model must hold on any x86-64 CPU: rerun the tests of what depends on the CPU with ATen's
# kernels and oneDNN forced down (docs/how-it-works.md: "On every CPU"). CLI subprocess tests are left to the main run.
PORTABILITY_MODES ?= ATEN_CPU_CAPABILITY=avx2 ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 FXLINT_TEST_MKLDNN=0
PORTABILITY_TESTS := tests/test_kernel_sweep.py tests/test_kernels.py tests/test_kernel_registry.py \
	tests/test_kernel_probe.py tests/test_layout_models.py tests/test_fxl201_noncontiguous_matmul.py \
	tests/test_fxl202_noncontiguous_conv.py tests/test_fxl203_noncontiguous_norm.py \
	tests/test_fxl204_layout_pessimization.py tests/test_fxl207_noncontiguous_rnn.py

## the CPU-dependent tests once per forced-down CPU mode (half the sweep's sample in each)
test-portability: $(STAMP)
	FXLINT_SWEEP_SCALE=0.5 $(PY) -m tests._portability check $(PORTABILITY_MODES) -- \
		-q -p no:cacheprovider -n auto --dist loadscope $(PORTABILITY_TESTS) \
		--deselect tests/test_kernel_probe.py::test_cli_no_probe_and_env \
		--deselect tests/test_layout_models.py::test_zoo_demo_lists_the_layout_scenarios

## regenerate the generated pages (docs/rules, docs/cli.md, docs/report.schema.json) and build the documentation site into site/
docs: $(STAMP)
	$(VENV)/bin/fxlint docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@echo "docs: built the site; open file://$(CURDIR)/site/index.html (or run $(VENV)/bin/mkdocs serve)"

## redraw docs/img/report.png: `fxlint report` on a bundled model, shot in headless Chromium
docs-screenshot: $(STAMP)
	$(PY) docs/_tools/report_screenshot.py

## static checks (pyproject.toml): ruff and mypy over the package; tests/test_static.py runs them too
check: $(STAMP)
	@status=0; $(PY) -m ruff check fxlint || status=1; $(PY) -m mypy || status=1; exit $$status

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache

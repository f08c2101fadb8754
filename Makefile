# Everything a fresh machine needs: `make demo` and `make test` create their venv first.
# Two venvs: `make demo` needs only fxlint's runtime (torch, networkx, tabulate: requirements.txt) in
# .venv-demo, ready in about a minute; `make test` and the rest use the full development venv .venv
# (requirements-dev.txt: transformers, timm, Lightning, MkDocs, Playwright...).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fxlint-installed
DEMO_VENV ?= .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.fxlint-installed
# no byte-compiling at install time (torch ships thousands of modules): Python compiles what it imports
PIP_INSTALL := -m pip install --quiet --no-compile

.PHONY: demo test test-portability check venv demo-venv clean docs docs-screenshot

$(STAMP): pyproject.toml requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_INSTALL) -r requirements-dev.txt
	$(PY) $(PIP_INSTALL) --no-deps --no-build-isolation -e .
	$(PY) -m fxlint.util.compat --install-pth
	touch $(STAMP)

# a venv without its own pip (ensurepip takes longer than the rest of the set-up but the wheel): this
# Python's pip installs into it (`pip --python`)
$(DEMO_STAMP): pyproject.toml requirements.txt
	$(PYTHON) -m venv --without-pip $(DEMO_VENV)
	$(PYTHON) -m pip --python $(DEMO_VENV)/bin/python install --quiet --no-compile -r requirements.txt
	$(PYTHON) -m pip --python $(DEMO_VENV)/bin/python install --quiet --no-compile --no-deps --no-build-isolation -e .
	touch $(DEMO_STAMP)

venv: $(STAMP)

demo-venv: $(DEMO_STAMP)

## lint every scenario model in models/ and print the findings (a model file's DEVICE = "cuda" lints it for
## that device, simulated without a GPU: docs/device.md); runs in the lean .venv-demo
demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/fxlint lint --zoo models --fail-on never

## run the test suite (fails when no test ran), then the CPU-dependent tests with the CPU paths forced down
test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadscope --durations=25
	$(MAKE) --no-print-directory test-portability

# The kernel model must hold on any x86-64 CPU: rerun the tests of what depends on the CPU with ATen's
# kernels and oneDNN forced down (docs/how-it-works.md: "On every CPU"). CLI subprocess tests are left to the main run.
PORTABILITY_MODES ?= ATEN_CPU_CAPABILITY=avx2 ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 FXLINT_TEST_MKLDNN=0
PORTABILITY_TESTS := tests/test_kernel_sweep.py tests/test_kernels.py tests/test_kernel_registry.py \
	tests/test_kernel_probe.py tests/test_layout_models.py tests/test_fxl201_noncontiguous_matmul.py \
	tests/test_fxl202_noncontiguous_conv.py tests/test_fxl203_noncontiguous_norm.py \
	tests/test_fxl204_layout_pessimization.py tests/test_fxl207_noncontiguous_rnn.py \
	tests/test_fxl209_conv_backward_copy.py

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
	rm -rf $(VENV) $(DEMO_VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache

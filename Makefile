# Everything a fresh machine needs: `make demo` and `make test` create the venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fxlint-installed

.PHONY: demo test venv clean

$(STAMP): pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

## lint every scenario model in models/ and print the findings
demo: $(STAMP)
	$(VENV)/bin/fxlint lint --zoo models --fail-on never

## run the test suite (fails when no test ran)
test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

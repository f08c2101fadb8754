"""Scenario models from the seed articles (shared/seeds). Each module defines
``make() -> (module, example_inputs)`` and ``EXPECTED``, the rule codes a lint
must report on it; ``make demo`` lints them all."""

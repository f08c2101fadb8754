"""fxlint's own cost: analysis time against Dynamo capture and Inductor compile time.

    python bench/lint_speed.py [--json out.json]

Same as ``fxlint bench --lint-speed``; see fxlint/benchmarks/lint_speed.py.
"""

from __future__ import annotations

import sys

from fxlint.cli.app import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--lint-speed", *sys.argv[1:]]))

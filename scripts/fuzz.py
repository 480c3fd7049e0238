#!/usr/bin/env python3
"""Differential fuzzer: `scripts/fuzz.py --seed S --count N --target cpu` (same options as
`python -m tools.fuzz`; see docs/fuzzing.md)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.fuzz.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

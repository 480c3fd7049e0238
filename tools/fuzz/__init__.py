"""Differential fuzzing of the TileLang compiler: random valid tile programs (as source
text) with a float64 numpy reference built from the same random choices.

    python -m tools.fuzz --seed 0 --count 200 --target cpu
    python -m tools.fuzz --replay 1234          # one program: print its source and check it

See docs/fuzzing.md.
"""
from .gen import KINDS, Program, generate, make_inputs, module_source  # noqa: F401
from .runner import fuzz, report, run_batch, run_isolated  # noqa: F401

"""``tilelang.autotuner.param``: the argument records of the AutoTuner object API.

``AutoTuner.set_compile_args(...)`` / ``set_profile_args(...)`` fill a CompileArgs /
ProfileArgs; ``run()`` compiles and measures with them. Plain dataclasses, so
``dataclasses.replace`` makes variants."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..profiler import TensorSupplyType
from . import AutotuneResult  # noqa: F401  (upstream's module exports it too)


@dataclass
class CompileArgs:
    """How each candidate is compiled (the arguments of tilelang.compile)."""
    out_idx: Any = None
    execution_backend: str = "auto"
    target: Any = "auto"
    target_host: Any = None
    verbose: bool = False
    pass_configs: dict | None = None

    def compile_program(self, program):
        from .. import compile as _compile

        return _compile(program, out_idx=self.out_idx, target=None if self.target == "auto" else self.target,
                        pass_configs=self.pass_configs)


@dataclass
class ProfileArgs:
    """How each candidate is measured and checked."""
    warmup: int = 25
    rep: int = 100
    timeout: int = 30
    backend: str = "event"
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None
    cache_input_tensors: bool = True

"""``tvm.transform.PassContext(config={...})``: the pass configs of compilations in the block."""
from __future__ import annotations

import threading

_local = threading.local()


def current_config() -> dict:
    """The merged configs of the PassContexts entered on this thread (innermost wins)."""
    merged = {}
    for c in getattr(_local, "stack", []):
        merged.update(c)
    return merged


class PassContext:
    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None,
                 trace=None, trace_stack=None, make_traceable=None, num_evals=0, tuning_api_database=None):
        self.opt_level = opt_level
        self.config = {getattr(k, "value", None) or str(k): v for k, v in (config or {}).items()}

    def __enter__(self):
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self.config)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()
        return False

    @staticmethod
    def current():
        return PassContext(config=current_config())

"""Every script in examples/ runs on the CPU at its --small sizes and checks itself against its
float64 reference: main([...]) returns 0 (or None) without raising. A few options get a run of
their own (ReLU epilogue, attention layouts / causal / GQA / head dim 128, an empty KV split)."""
import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples")

CASES = [
    ("gemm", []),
    ("gemm", ["--relu"]),
    ("elementwise", []),
    ("softmax", []),
    ("rmsnorm", []),
    ("layernorm", []),
    ("attention_fwd", []),
    ("attention_fwd", ["--causal"]),
    ("attention_fwd", ["--layout", "bshd", "--causal", "--kv-heads", "2"]),
    ("attention_fwd", ["--layout", "bshd", "--dim", "128", "--kv-heads", "1"]),
    ("flash_decoding", []),
    ("flash_decoding", ["--seq", "9", "--splits", "4"]),  # the last split has no keys
    ("splitk_gemm", []),
    ("dynamic_gemm", []),
]


def load_example(name):
    path = os.path.join(EXAMPLES, name + ".py")
    spec = importlib.util.spec_from_file_location(f"tilelang_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name,extra", CASES, ids=[" ".join([n] + e) for n, e in CASES])
def test_example(name, extra, capsys):
    rc = load_example(name).main(["--target", "cpu", "--small"] + extra)
    out = capsys.readouterr().out
    assert rc in (0, None), f"{name} {' '.join(extra)} returned {rc}:\n{out}"
    assert "MISMATCH" not in out

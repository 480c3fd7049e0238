"""A fixed-seed batch of the differential fuzzer (tools/fuzz, docs/fuzzing.md) on the CPU
target: random valid tile programs (copies, element-wise chains, reductions, GEMMs,
pipelined loops, atomics, control flow, cumsum, attention, dynamic sizes) must match
their float64 numpy reference, and `for/while ... else` must be rejected.

A failure prints each program's source and seed; `python -m tools.fuzz --replay SEED`
reruns one. TILELANG_FUZZ_COUNT overrides the number of programs."""
import io
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.fuzz import fuzz, report  # noqa: E402

SEED = 20261201
COUNT = int(os.environ.get("TILELANG_FUZZ_COUNT", "240"))


# Batches run in forked children, which cannot use a CUDA context the parent made; on the GPU
# machine run `python -m tools.fuzz --target cuda` instead (docs/fuzzing.md).
@pytest.mark.cpu_target
def test_fuzz_smoke_cpu():
    summary = fuzz(SEED, COUNT, target="cpu", batch=12, jobs=2)
    out = io.StringIO()
    report(summary, out=out)
    bad = summary["mismatch"] + summary["crash"] + summary["rejected"]
    assert not bad, out.getvalue()[:20000]


@pytest.mark.cpu_target
def test_fuzz_smoke_hopper_kind_cpu():
    """The opt-in Hopper-sized kind (attention-backward GEMM chains over staged tiles), a few
    programs: valid, and matching numpy on the CPU target."""
    summary = fuzz(SEED, 8, target="cpu", batch=4, jobs=2, kinds=["hopper"])
    out = io.StringIO()
    report(summary, out=out, kinds=["hopper"])
    bad = summary["mismatch"] + summary["crash"] + summary["rejected"]
    assert not bad and len(summary["ok"]) == 8, out.getvalue()[:20000]


@pytest.mark.cpu_target
@pytest.mark.parametrize("kind", ["reducers", "dtype_views", "gathers", "wide_elementwise", "async_gathers",
                                  "f16_acc_gemms", "flat_views", "fragment_windows"])
def test_fuzz_smoke_opt_in_kinds_cpu(kind):
    """Each other opt-in kind (weight 0 in the default mix), a few programs: valid, and matching
    numpy on the CPU target (their GPU runs: docs/fuzzing.md)."""
    summary = fuzz(SEED, 6, target="cpu", batch=3, jobs=2, kinds=[kind])
    out = io.StringIO()
    report(summary, out=out, kinds=[kind])
    bad = summary["mismatch"] + summary["crash"] + summary["rejected"]
    assert not bad and len(summary["ok"]) == 6, out.getvalue()[:20000]

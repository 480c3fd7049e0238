"""scripts/regression_perf.py, on a made-up checkout: each regression file runs under both
packages (the upstream side here is a stand-in package that reports other latencies), the
table pairs the functions, ratios are upstream / ours, a failing file is reported with its
error, and a second call with the same --out does not run measured files again."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_side_by_side_table_from_a_made_up_checkout(tmp_path):
    checkout = tmp_path / "upstream"
    _write(checkout / "examples/fam/example_fam.py", """
        def run_regression_perf(scale=1.0):
            return 0.25 * scale
        """)
    _write(checkout / "examples/fam/regression_fam.py", """
        import tilelang.testing
        from example_fam import run_regression_perf

        def regression_fam_small():
            tilelang.testing.process_func(run_regression_perf)

        def regression_fam_large():
            tilelang.testing.process_func(run_regression_perf, scale=4.0)

        if __name__ == "__main__":
            tilelang.testing.regression()
        """)
    # one function raising does not cost the file's other functions their rows
    _write(checkout / "examples/mixed/regression_mixed.py", """
        import tilelang.testing

        def regression_mixed_fails():
            raise NotImplementedError("T.something is not provided")

        def regression_mixed_runs():
            tilelang.testing.process_func(lambda: 2.0, "mixed_kernel")

        def regression_mixed_parses_argv():
            # (as upstream's convolution example: argparse over the process's command line)
            import argparse

            def run(argv=None):
                p = argparse.ArgumentParser()
                p.add_argument("--n", type=int, default=3)
                return float(p.parse_args(argv).n)

            tilelang.testing.process_func(run, "argv_kernel")

        if __name__ == "__main__":
            tilelang.testing.regression()
        """)
    _write(checkout / "examples/broken/regression_broken.py", """
        raise ImportError("no such kernel here")
        """)
    # the stand-in for upstream's package: every function reports 0.5 ms
    _write(tmp_path / "fake_pkg/tilelang/__init__.py", "")
    _write(tmp_path / "fake_pkg/tilelang/testing/__init__.py", """
        import json, sys
        _names = []
        def process_func(func, name=None, **kw):
            func(**kw)
            _names.append((sys._getframe(1).f_code.co_name[len("regression_"):], name or func.__module__))
        def regression():
            caller = sys._getframe(1).f_globals
            for k in sorted(caller):
                if k.startswith("regression_"):
                    caller[k]()
            print("__TILELANG_PERF_RESULTS_JSON__=" + json.dumps(
                [{"name": m, "latency": 0.5, "case": n} for n, m in _names]))
        """)
    compat = {"tests": {"examples/fam/test_fam.py::test_a": {"ours": ["passed", ""], "upstream": ["passed", ""]}}}
    (tmp_path / "compat.json").write_text(json.dumps(compat))
    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "scripts/regression_perf.py"), str(checkout), "--upstream-pkg",
           str(tmp_path / "fake_pkg"), "--out", str(out), "--timeout", "120", "--compat-results",
           str(tmp_path / "compat.json")]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    rows = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in first.stdout.splitlines() if line.startswith("| fam/")}
    assert rows["fam_small:example_fam"][2:] == ["0.2500", "0.5000", "2.00", "yes"], rows
    assert rows["fam_large:example_fam"][2:] == ["1.0000", "0.5000", "0.50", "yes"], rows
    mixed = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[1:-1]]
             for line in first.stdout.splitlines() if line.startswith("| mixed/")}
    assert mixed["mixed_runs:mixed_kernel"][2:5] == ["2.0000", "0.5000", "0.25"], mixed
    assert mixed["mixed_parses_argv:argv_kernel"][2:4] == ["3.0000", "0.5000"], mixed
    assert mixed["mixed_fails"][2].startswith("failed: NotImplementedError: T.something"), mixed
    broken = [line for line in first.stdout.splitlines() if line.startswith("| broken/")]
    assert broken and "no such kernel here" in broken[0], first.stdout
    assert "4 functions timed on both sides: median upstream / ours 0.38" in first.stdout, first.stdout
    # a second call keeps the measured file and retries only the failed one
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "fam/regression_fam.py" not in second.stderr and "broken/regression_broken.py" in second.stderr
    assert second.stdout == first.stdout


def test_check_runs_each_folders_example_tests_first(tmp_path):
    checkout = tmp_path / "upstream"
    _write(checkout / "examples/good/regression_good.py", """
        import tilelang.testing

        def regression_good():
            tilelang.testing.process_func(lambda: 1.0, "good_kernel")

        if __name__ == "__main__":
            tilelang.testing.regression()
        """)
    _write(checkout / "examples/good/test_good.py", """
        def test_one():
            assert 1 + 1 == 2

        def test_two():
            assert [1, 2] == [1, 2]
        """)
    _write(checkout / "examples/bad/regression_bad.py", """
        import tilelang.testing

        def regression_bad():
            tilelang.testing.process_func(lambda: 3.0, "bad_kernel")

        if __name__ == "__main__":
            tilelang.testing.regression()
        """)
    _write(checkout / "examples/bad/test_bad.py", """
        import pytest

        def test_right():
            pass

        def test_wrong():
            assert 0.1 + 0.2 == 0.3

        @pytest.mark.skip(reason="needs a GPU")
        def test_skipped():
            pass
        """)
    _write(checkout / "examples/untested/regression_untested.py", """
        import tilelang.testing

        def regression_untested():
            tilelang.testing.process_func(lambda: 2.0, "untested_kernel")

        if __name__ == "__main__":
            tilelang.testing.regression()
        """)
    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "scripts/regression_perf.py"), str(checkout), "--out", str(out),
           "--timeout", "120", "--sides", "ours", "--check", "ours", "--check-jobs", "2"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    cells = {line.split("|")[1].strip().split("/")[0]: line.split("|")[6].strip()
             for line in run.stdout.splitlines() if line.startswith("| ") and "/regression_" in line}
    assert cells == {"good": "ours 2/2", "bad": "ours 1/2", "untested": "ours: no tests"}, run.stdout
    state = json.loads((out / "results.json").read_text())
    assert state["bad/regression_bad.py"]["checks"]["ours"]["skipped"] == 1
    assert state["bad/regression_bad.py"]["checks"]["ours"]["failed"] == 1
    # a package that is not there is a clear error, not a silent skip
    bad = subprocess.run(cmd[:-4] + ["--check", "upstream"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--check: no package for side 'upstream'" in bad.stderr

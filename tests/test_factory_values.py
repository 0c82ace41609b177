"""A kernel factory's arguments (`analysis.memory.factory_values`,
`frontends.python.factory_calls`): a closure variable computed from one
(`halo = window - 1`) is that expression, not a second free value; a finding
that holds only for some values of an argument no call in the file gives is
a warning naming it; one that holds for every value stays an error; and the
values the file's calls give are the only ones assumed. CUDA C has no
analogue to test: a template nvcc never instantiates emits no PTX, and an
instantiated one reads its parameters as constants."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tolk_lint import lint_file
from tolk_lint.config import Settings

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
BLOCK = Settings(block=(128, 1, 1))

FACTORY = '''
from numba import cuda, float32

TPB = 128


def make_rolling_mean(window):
    halo = window - 1

    @cuda.jit
    def rolling_mean(values, out):
        sm = cuda.shared.array(TPB + 64, float32)
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + tid
        n = values.shape[0]
        sm[tid + halo] = values[i] if i < n else 0.0
        cuda.syncthreads()
        if i < n:
            out[i] = sm[tid]

    return rolling_mean
'''


def _lint(tmp_path, text: str, settings: Settings = BLOCK):
    p = tmp_path / "kernels.py"
    p.write_text(textwrap.dedent(text))
    return [d for d in lint_file(str(p), settings).diagnostics if d.code in ("TL201", "TL202")]


def _by_line(diags) -> dict[int, tuple[str, str]]:
    return {d.span.line: (d.code, d.severity.value) for d in diags}


def test_the_fixture_warns_for_the_window_and_keeps_the_error_every_window_has():
    path = ROOT / "numba" / "memory" / "factory_argument_halo.py"
    diags = [d for d in lint_file(str(path), BLOCK).diagnostics if d.code == "TL202"]
    assert _by_line(diags) == {30: ("TL202", "warning"), 38: ("TL202", "warning"), 49: ("TL202", "error")}
    for d in diags:
        # the witness shows the one free value, never a halo apart from its window
        assert "halo =" not in d.message and "window = " in d.message, d.message
    assert all(d.data.get("factory_value") for d in diags if d.severity.value == "warning")


def test_a_derived_closure_value_keeps_its_relation_in_the_witness(tmp_path):
    (d,) = _lint(tmp_path, FACTORY)
    # the index is tid + halo with halo = window - 1, and past the array's 192 elements
    index = int(d.message.split("index ")[1].split()[0])
    thread = int(d.message.split("for thread ")[1].split()[0])
    window = int(d.message.split("window = ")[1].split()[0].rstrip(";,"))
    assert index == thread + window - 1 and index >= 192, d.message


def test_the_values_the_files_calls_give_are_the_ones_assumed(tmp_path):
    assert _lint(tmp_path, FACTORY + "\nmean5 = make_rolling_mean(5)\n") == []
    assert _lint(tmp_path, FACTORY + "\nmean5 = make_rolling_mean(5)\nmean9 = make_rolling_mean(window=9)\n") == []
    (d,) = _lint(tmp_path, FACTORY + "\nmean5 = make_rolling_mean(5)\nwide = make_rolling_mean(100)\n")
    # the file makes the window-100 kernel: its store leaves `sm`, an error, and the witness says which
    assert d.severity.value == "error" and "window = 100" in d.message, d.message


def test_a_call_with_an_unknown_argument_leaves_the_window_free(tmp_path):
    text = FACTORY + "\nimport sys\nmean5 = make_rolling_mean(5)\nmean_n = make_rolling_mean(int(sys.argv[1]))\n"
    (d,) = _lint(tmp_path, text)
    assert d.severity.value == "warning" and "no call in this file gives the value" in d.message


def test_a_module_value_computed_from_an_unknown_one(tmp_path):
    text = '''
    import sys
    from numba import cuda, float32

    N = int(sys.argv[1])
    HALF = N // 2


    @cuda.jit
    def k(x):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        if t < 32:
            s[t + HALF] = x[t]
    '''
    (d,) = _lint(tmp_path, text, Settings(block=(32, 1, 1)))
    # not a factory argument: an error, and the witness's N makes t + N // 2 = 64 or more
    assert d.severity.value == "error" and "HALF" not in d.message
    thread = int(d.message.split("for thread ")[1].split()[0])
    n = int(d.message.split("N = ")[1].split()[0].rstrip(";,)"))
    assert thread + n // 2 >= 64, d.message


def test_the_corpus_factory_file_has_no_error_level_bounds_report():
    path = ROOT / "corpus" / "numba_real" / "kernel_factory.py"
    diags = lint_file(str(path), Settings(time_budget=120)).diagnostics
    rolling = [d for d in diags if d.code == "TL202" and d.kernel == "rolling_mean_shared"]
    assert rolling and all(d.severity.value == "warning" for d in rolling), [d.message for d in rolling]
    # the planted race of the twin is still an error
    assert any(d.code == "TL201" and d.severity.value == "error" and d.span.line == 125 for d in diags)


def test_a_factory_called_with_functions_of_the_file_runs_each(tmp_path):
    path = ROOT / "numba" / "memory" / "factory_device_function.py"
    diags = lint_file(str(path), BLOCK).diagnostics
    assert not [d for d in diags if d.code == "TL002"], [d.message for d in diags]
    (d,) = [d for d in diags if d.code == "TL202"]
    # the kernel made with `_put_high` stores past the array; the witness names the function
    assert d.severity.value == "error" and d.span.line == 22 and "put = _put_high" in d.message, d.message


def test_one_function_given_is_that_function(tmp_path):
    text = (ROOT / "numba" / "memory" / "factory_device_function.py").read_text()
    text = text.replace("scatter_high = make_scatter(_put_high)\n", "")
    assert _lint(tmp_path, text) == []
    diags = lint_file(str(tmp_path / "kernels.py"), BLOCK).diagnostics
    assert not [d for d in diags if d.code == "TL002"], [d.message for d in diags]



METHOD_FACTORY = """
from numba import cuda, float32

TPB = 128


class RollingMeans:
    def make(self, window):
        halo = window - 1

        @cuda.jit
        def rolling_mean(values, out):
            sm = cuda.shared.array(TPB + 64, float32)
            tid = cuda.threadIdx.x
            i = cuda.blockIdx.x * TPB + tid
            n = values.shape[0]
            sm[tid + halo] = values[i] if i < n else 0.0
            cuda.syncthreads()
            if i < n:
                out[i] = sm[tid]

        return rolling_mean

    def test_week(self):
        self.make(7)
"""


def test_a_method_template_called_through_self_takes_the_values_its_calls_give(tmp_path):
    # `self.make(7)`: the window is 7 (halo 6, in bounds); an unknown argument leaves it free
    assert _lint(tmp_path, METHOD_FACTORY) == []
    unknown = METHOD_FACTORY.replace("self.make(7)", "self.make(int(input()))")
    assert any(d.code == "TL202" for d in _lint(tmp_path, unknown))

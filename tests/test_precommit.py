"""The pre-commit hook, run for real: `pre-commit try-repo` installs this
checkout into its own virtualenv and runs the `tolk-lint` hook in a
throw-away consumer repository.

try-repo reads a git repository. This checkout's uncommitted and untracked
files are what is under test, and try-repo's shadow commit only picks up
tracked changes, so the test commits a copy of the working tree (tracked and
untracked files that git does not ignore) into a temporary repository and
points try-repo at that. pre-commit's own cache goes to a temporary
``PRE_COMMIT_HOME``. It needs pip to reach a package index (or a populated
pip cache) to build the hook's virtualenv.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest

from tolk_lint.catalog import rule_by_code

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JUNK = {".git", "__pycache__", ".pytest_cache", ".tolk_lint_cache", "build", "dist", ".venv", ".hypothesis"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

PARSE_ERROR = "from numba import cuda\n\n\n@cuda.jit\ndef scale(a:\n    a[0] = 1.0\n"
FIXED = "from numba import cuda\n\n\n@cuda.jit\ndef scale(a):\n    a[cuda.grid(1)] *= 2.0\n"
DIVERGENT = (
    "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n"
    "    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()\n"
)
DIVERGENT_FIXED = (
    "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n"
    "    if cuda.threadIdx.x < 16:\n        a[0] = 1.0\n    cuda.syncthreads()\n"
)
GIT = ["git", "-c", "user.name=tolk", "-c", "user.email=tolk@example.invalid", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main"]  # fmt: skip


def git(cwd, *args: str) -> str:
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True, text=True).stdout


def working_tree_files() -> list[str]:
    """The checkout's files, never its ``.git``: in a git worktree ``.git``
    is a file naming the real repository, and a copy of it would make the
    snapshot below commit into this checkout's own branch."""
    if os.path.exists(os.path.join(REPO, ".git")):  # a folder, or a worktree's file
        out = git(REPO, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
        return sorted({p for p in out.split("\0") if p and os.path.isfile(os.path.join(REPO, p))})
    files = []
    for root, dirs, names in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in JUNK and not d.endswith(".egg-info")]
        files += [os.path.relpath(os.path.join(root, n), REPO) for n in names if n != ".git"]
    return sorted(files)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> str:
    """A committed copy of this checkout's working tree."""
    dst = str(tmp_path_factory.mktemp("hook-repo"))
    for rel in working_tree_files():
        if rel.split("/")[0] in ("fixtures", "bench", "tests", "examples"):
            continue  # not part of the package: keep the copy small
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), os.path.join(dst, rel))
    assert os.path.exists(os.path.join(dst, ".pre-commit-hooks.yaml"))
    assert not os.path.exists(os.path.join(dst, ".git")), "the copy must be a repository of its own"
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "commit", "-q", "-m", "snapshot of the working tree")
    return dst


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> str:
    """pre-commit's cache, shared by this module's runs (one virtualenv)."""
    return str(tmp_path_factory.mktemp("pre-commit-home"))


def try_repo(hook_repo: str, consumer: str, home: str, *files: str, hook: str = "tolk-lint"):
    env = dict(os.environ, PRE_COMMIT_HOME=home, PRE_COMMIT_COLOR="never", NO_COLOR="1")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["pre-commit", "try-repo", hook_repo, hook, "--verbose", "--files", *files],
        cwd=consumer, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_manifest_is_valid():
    out = subprocess.run(["pre-commit", "validate-manifest", os.path.join(REPO, ".pre-commit-hooks.yaml")],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_hook_fails_on_a_bad_kernel_and_passes_once_fixed(hook_repo, home, tmp_path):
    consumer = str(tmp_path / "consumer")
    os.makedirs(os.path.join(consumer, "kernels"))
    git(consumer, "init", "-q")
    files = {"kernels/scale.py": (PARSE_ERROR, FIXED)}
    if rule_by_code("TL101") is not None:
        files["kernels/divergent.py"] = (DIVERGENT, DIVERGENT_FIXED)
    for rel, (bad, _) in files.items():
        with open(os.path.join(consumer, rel), "w") as f:
            f.write(bad)
    with open(os.path.join(consumer, "README.txt"), "w") as f:
        f.write("not a kernel\n")
    git(consumer, "add", "-A")

    bad = try_repo(hook_repo, consumer, home, *files, "README.txt")
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "tolk-lint" in out and "Failed" in out
    assert "kernels/scale.py:5:" in out and "TL001" in out
    if "kernels/divergent.py" in files:
        assert "kernels/divergent.py:7:9: TL101" in out
    assert "README.txt" not in out.split("tolk-lint", 1)[-1]  # the files: regex keeps it out

    for rel, (_, good) in files.items():
        with open(os.path.join(consumer, rel), "w") as f:
            f.write(good)
    git(consumer, "add", "-A")
    good = try_repo(hook_repo, consumer, home, *files)
    out = good.stdout + good.stderr
    assert good.returncode == 0, out
    assert "Passed" in out


@pytest.mark.skipif(
    importlib.util.find_spec("tolk_lint.commands.fix") is None, reason="`tolk-lint fix` is not built"
)
def test_fix_hook_removes_a_stale_noqa(hook_repo, home, tmp_path):
    consumer = str(tmp_path / "consumer")
    os.makedirs(consumer)
    git(consumer, "init", "-q")
    path = os.path.join(consumer, "k.py")
    with open(path, "w") as f:
        f.write(FIXED.replace("*= 2.0\n", "*= 2.0  # tolk: noqa: TL101\n"))  # TL003, with a safe fix
    git(consumer, "add", "-A")
    run = try_repo(hook_repo, consumer, home, "k.py", hook="tolk-lint-fix")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out  # a hook that changes files fails, as pre-commit wants
    assert "files were modified by this hook" in out
    with open(path) as f:
        assert f.read() == FIXED

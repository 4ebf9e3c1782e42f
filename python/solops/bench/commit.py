"""The commit a benchmark run measures, for its results' `commit` field.

SOLOPS_COMMIT, named by the caller, wins: the device machine gets a copy of the working tree whose
.git can lag it (there, `git rev-parse HEAD` printed a session's first commit while later sources
ran). Otherwise git's HEAD, marked "+modified" where the tracked sources differ from it (an
uncommitted change, or such a lagging copy), so that results never name a commit that did not run.
Needs neither PyTorch nor a GPU.
"""

import os
import subprocess

# The tracked paths whose contents decide what runs: the library's sources and the Python package.
SOURCE_PATHS = ("src", "include", "python", "CMakeLists.txt")


def measured_commit(cwd: str | None = None) -> str:
    if os.environ.get("SOLOPS_COMMIT"):
        return os.environ["SOLOPS_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=cwd).stdout.strip()
        same = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *SOURCE_PATHS], capture_output=True,
                              cwd=cwd).returncode == 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head if same else head + "+modified"

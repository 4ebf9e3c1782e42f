#!/usr/bin/env bash
# Every host C++ source of the release build (its compile_commands.json) parsed by clang as well:
# GCC builds the library, and accepts some code that the standard rejects and other compilers refuse
# (a user's or packager's clang build would). Syntax and semantics only, warnings off: what is checked
# is that clang accepts the code, not its style.
set -euo pipefail
cd "$(dirname "$0")/.."
clang=${CLANG:-clang++}
python3 - "$clang" <<'PY'
import json, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
clang = sys.argv[1]
entries = [e for e in json.load(open("build/release/compile_commands.json")) if e["file"].endswith(".cpp")]

def check(entry):
    args = shlex.split(entry["command"])
    kept, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg in ("-o", "-MF", "-MT"):
            skip = True
        elif not (arg.startswith("-W") or arg in ("-c", "-MD")):
            kept.append(arg)
    result = subprocess.run([clang, "-fsyntax-only", "-w", *kept], cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], result.returncode, result.stderr

with ThreadPoolExecutor(os.cpu_count()) as pool:
    failed = [(f, err) for f, rc, err in pool.map(check, entries) if rc != 0]
for f, err in failed:
    print(f"clang rejects {f}:\n{err}")
print(f"clang: {len(entries) - len(failed)} of {len(entries)} sources accepted")
sys.exit(1 if failed else 0)
PY

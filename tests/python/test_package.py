"""The installed package's two libraries keep their C++ runtime to themselves.

A toolchain that links libstdc++ statically into a shared library (some GCC installs do so by
default) exports the runtime's symbols from it unless the link hides them. Python has loaded the
system's libstdc++ with PyTorch by then, so the dynamic linker binds half of the library's runtime
calls to that copy and half to its own: locale and stream state no longer match, and formatting an
error message truncates it or crashes the process. Both libraries link with --exclude-libs,ALL; this
checks the result on whatever toolchain built the installed package.
"""

import pathlib
import shutil
import subprocess

import pytest

import solops

# Symbols of the C++ runtime itself (not template instantiations that any object may carry).
RUNTIME_SYMBOLS = {
    "__cxa_throw",
    "__cxa_begin_catch",
    "__gxx_personality_v0",
    "_ZSt9terminatev",  # std::terminate()
    "_ZNSt6locale7classicEv",  # std::locale::classic()
    "_ZNSt8ios_base4InitC1Ev",  # std::ios_base::Init::Init()
}


@pytest.mark.parametrize("library", ["libsolops.so", "libsolops_torch.so"])
def test_a_library_exports_no_cpp_runtime(library):
    # The package's folders, as solops/__init__.py searches them (an editable install has two).
    path = next((pathlib.Path(folder, library) for folder in solops.__path__ if pathlib.Path(folder, library).is_file()),
                None)
    assert path is not None, f"{library} is in none of {list(solops.__path__)}"
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to read the libraries' dynamic symbols"
    listing = subprocess.run([nm, "-D", "--defined-only", path], check=True, capture_output=True, text=True)
    exported = {line.split()[-1] for line in listing.stdout.splitlines() if line.strip()}
    assert not exported & RUNTIME_SYMBOLS, f"{library} exports the C++ runtime: {sorted(exported & RUNTIME_SYMBOLS)}"

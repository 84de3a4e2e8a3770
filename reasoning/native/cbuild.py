"""Build and load the C row kernels (_ckernels.c) for kernels.py: one shared object per
source, Python and numpy version, compiled with the system's C compiler (`cc`) into this
package's directory, or into ~/.cache/hypo when that is not writable.

    .venv/bin/python -m reasoning.native.cbuild [--force]   # scripts/setup.sh runs it

`load()` returns the module, building it first if it is missing; None (with the reason in
`last_error`) when there is no compiler or the build fails — kernels.py then uses numba.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_ckernels.c"
last_error: Optional[str] = None


def _tag() -> str:
    import numpy as np

    h = hashlib.sha256(SOURCE.read_bytes())
    h.update(f"{np.__version__} {sys.version} {sysconfig.get_platform()}".encode())
    return h.hexdigest()[:12]


def module_name() -> str:
    return f"_ckernels_{_tag()}"


def _dirs() -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hypo"
    return [HERE, cache]


def _file(d: Path, name: str) -> Path:
    return d / (name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def build(quiet: bool = True) -> Optional[Path]:
    """Compile the kernels into the first writable directory (atomically: concurrent
    builders each write a temporary file and rename it); the path, or None."""
    global last_error
    import numpy as np

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        last_error = "no C compiler (cc) on PATH"
        return None
    name = module_name()
    inc = [sysconfig.get_paths()["include"], np.get_include()]
    if not (Path(inc[0]) / "Python.h").exists():
        last_error = f"no Python.h under {inc[0]} (install the Python headers)"
        return None
    for d in _dirs():
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".build-", suffix=".so")
            os.close(fd)
        except OSError:
            continue
        cmd = [cc, "-O3", "-shared", "-fPIC", "-std=c99", f"-DHK_NAME={name}",
               *[f"-I{i}" for i in inc], str(SOURCE), "-o", tmp]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            last_error = f"{cc}: {e}"
            os.unlink(tmp)
            return None
        if r.returncode != 0:
            os.unlink(tmp)
            last_error = f"{' '.join(cmd)}\n{r.stderr.strip()}"
            return None
        out = _file(d, name)
        os.replace(tmp, out)
        for old in d.glob("_ckernels_*"):  # builds of other sources or versions
            if old != out and old.name != out.name:
                try:
                    old.unlink()
                except OSError:
                    pass
        if not quiet:
            print(f"built {out}", file=sys.stderr)
        return out
    last_error = "no writable directory for the build: " + ", ".join(map(str, _dirs()))
    return None


def load(build_missing: bool = True):
    """The kernels module (built first if missing and build_missing), or None."""
    global last_error
    name = module_name()
    path = built()
    if path is None and build_missing:
        path = build()
    if path is None:
        last_error = last_error or "not built"
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod
    except (ImportError, OSError) as e:
        last_error = f"{path}: {e}"
        return None


def built() -> Optional[Path]:
    """The current build's path, if there is one."""
    name = module_name()
    return next((p for p in (_file(d, name) for d in _dirs()) if p.exists()), None)


if __name__ == "__main__":
    if "--force" in sys.argv[1:] or built() is None:
        if build(quiet=False) is None:
            print(f"the C kernels were not built ({last_error}); numba's are used",
                  file=sys.stderr)
            sys.exit(1)

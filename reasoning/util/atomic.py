"""Atomic file writes: a temporary name in the target's directory (unique per writer), then
a rename — a reader sees the old file or the new one, never a partial one."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def write_text(path: str, text: str, mode: int = 0o644) -> None:
    """Write `text` to `path` atomically (a failed write leaves no temporary file).  A
    symbolic link is followed (the file it names is replaced, not the link); a path that
    exists and is not a regular file (/dev/stdout, a FIFO, a device) is written to as it
    is — a rename would replace the device node itself."""
    import stat

    path = os.path.realpath(path)
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def check_writable(path: str) -> None:
    """Raise OSError (with the reason) unless write_text(path, …) can succeed: its directory
    exists or can be made and takes a new file, and path is not a directory — checked before
    a long run, not after it."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise IsADirectoryError(f"{path}: is a directory (give the file's name)")
    d = os.path.dirname(real)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".check", dir=d)
    os.close(fd)
    os.remove(tmp)


def write_json(path: str, obj: Any, **dump_kw: Any) -> None:
    """json.dumps(obj, **dump_kw) written atomically."""
    write_text(path, json.dumps(obj, **dump_kw))

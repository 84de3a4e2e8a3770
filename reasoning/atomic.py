"""Atomic file writes: a temporary name in the target's directory (unique per writer), then
a rename — a reader sees the old file or the new one, never a partial one."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def write_text(path: str, text: str, mode: int = 0o644) -> None:
    """Write `text` to `path` atomically (a failed write leaves no temporary file)."""
    d = os.path.dirname(os.path.abspath(path))
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


def write_json(path: str, obj: Any, **dump_kw: Any) -> None:
    """json.dumps(obj, **dump_kw) written atomically."""
    write_text(path, json.dumps(obj, **dump_kw))

"""User-facing errors, reported as `FILE:LINE:COL: message` with the source line and a caret."""
from __future__ import annotations

import difflib

from typing import Optional

from reasoning.language.syntax import Span


class HypoError(Exception):
    """Base class of every error the `hypo` commands report without a traceback."""


class ProgramError(HypoError):
    """An error in a program, located at `span` (1-based line/column)."""

    def __init__(self, message: str, span: Optional[Span] = None, source: str = ""):
        super().__init__(message)
        self.message = message
        self.span = span or Span()
        self.source = source

    def format(self) -> str:
        s = self.span
        where = f"{s.file}:{s.line}:{s.column}" if s.line > 0 else s.file  # 0: the file itself
        head = f"{where}: error: {self.message}"
        lines = self.source.splitlines()
        if 1 <= s.line <= len(lines):
            width = 1
            if s.end_line == s.line and s.end_column > s.column:
                width = s.end_column - s.column
            text, caret = excerpt(lines[s.line - 1].expandtabs(1), s.column, width)
            return f"{head}\n    {text}\n    {caret}"
        return head

    def __str__(self) -> str:
        return self.format()


EXCERPT_COLUMNS = 160  # a longer source line is shown as a window around the column


def excerpt(text: str, column: int, width: int = 1) -> tuple[str, str]:
    """The source line and its caret line under `column` (1-based) for `width` characters;
    a line longer than EXCERPT_COLUMNS is cut to a window around the column, marked with
    `…` where cut (a generated program's 10⁵-character line gives a two-line excerpt, not
    an error message of twice its size)."""
    col = max(column - 1, 0)
    if len(text) <= EXCERPT_COLUMNS:
        return text, " " * col + "^" + "~" * (width - 1)
    start = max(0, min(col - EXCERPT_COLUMNS // 3, len(text) - EXCERPT_COLUMNS))
    end = start + EXCERPT_COLUMNS
    left = "…" if start > 0 else ""
    right = "…" if end < len(text) else ""
    shown = left + text[start:end] + right
    at = len(left) + col - start
    span = max(1, min(width, len(left) + (end - start) - at))
    return shown, " " * at + "^" + "~" * (span - 1)


class ProgramWarning:
    """Something odd but allowed in a program, located like a ProgramError (`hypo check`
    and `hypo run` print it as FILE:LINE:COL: warning: …)."""

    def __init__(self, message: str, span: Optional[Span] = None, source: str = ""):
        self.message = message
        self.span = span or Span()
        self.source = source

    def format(self) -> str:
        return ProgramError(self.message, self.span, self.source).format().replace(
            ": error: ", ": warning: ", 1)

    def __str__(self) -> str:
        return self.format()


class StreamError(HypoError):
    """A malformed stream line (reported with its line number; never fatal for the run)."""

    def __init__(self, message: str, file: str = "<stream>", line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


def did_you_mean(name: str, known) -> str:
    """' — did you mean Hot?' when a known name is close to `name` (else '')."""
    got = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not got:
        lower = {k.lower(): k for k in known}
        if name.lower() in lower:
            got = [lower[name.lower()]]
    return f" — did you mean {got[0]}?" if got else ""

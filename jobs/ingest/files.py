"""Reading producer files of a slice: JSONL, CSV and Parquet into fact rows and rejected rows.

Nothing a producer sent is lost: every line/row either becomes a fact row (validated later,
by the tick job, against the program) or a quarantine row with a reason.  Files are read in
binary with a bounded line length, so truncated JSON, wrong types, huge lines and binary
garbage are rows of the quarantine, never exceptions.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from reasoning.language.compiler import CompiledProgram
from reasoning.language.errors import ProgramError
from reasoning.stream.blocks import JSON_SPACE, MAX_LINE
from reasoning.stream.facts import MAX_TIME, parse_fact_text, structured_fact
from reasoning.stream.sources import GZIP_MAGIC, DamagedArchive, is_gzip

from jobs.errors import InputError

RAW_LIMIT = MAX_LINE
RANGE = f"ticks and times are natural numbers below 2^{MAX_TIME.bit_length() - 1}"


@dataclass
class Parsed:
    """Columns of the accepted fact rows and the list of rejected rows of one ingest."""

    tick: list = field(default_factory=list)
    pred: list = field(default_factory=list)
    args: list = field(default_factory=list)
    time: list = field(default_factory=list)
    source: list = field(default_factory=list)
    line: list = field(default_factory=list)
    rejected: list = field(default_factory=list)  # dicts with quarantine columns
    other_ticks: int = 0
    heartbeats: int = 0  # {"tick": N} lines: counted, not facts, not quarantined

    def add(self, tick: int, pred: str, args: tuple, time: int, source: str, line: int) -> None:
        self.tick.append(tick)
        self.pred.append(pred)
        self.args.append(list(args))
        self.time.append(time)
        self.source.append(source)
        self.line.append(line)

    def reject(self, code: str, reason: str, source: str, line: int, raw: str,
               raw_bytes: Optional[int] = None, tick: Optional[int] = None, pred=None,
               args=None, time=None) -> None:
        self.rejected.append({
            "tick": -1 if tick is None else tick, "stage": "ingest", "reason_code": code,
            "reason": reason, "source": source, "line": line, "raw": raw[:RAW_LIMIT],
            "raw_bytes": len(raw.encode("utf-8", "surrogatepass")) if raw_bytes is None
            else raw_bytes, "pred": pred, "args": None if args is None else list(args),
            "time": time,
        })

    def __len__(self) -> int:
        return len(self.pred)

    def reject_ticks(self, far: dict[int, str]) -> int:
        """Move the accepted rows of the ticks in `far` ({tick: reason}) to the rejected
        ones as `far_tick` (their text rebuilt from the columns); returns how many."""
        for i, t in enumerate(self.tick):
            if t in far:
                text = f"{self.pred[i]}({', '.join(map(str, self.args[i] + [self.time[i]]))})"
                self.reject("far_tick", far[t], self.source[i], self.line[i], text, tick=t,
                            pred=self.pred[i], args=self.args[i], time=self.time[i])
        return self.keep_ticks(set(self.tick) - set(far))

    def keep_ticks(self, ticks: set[int]) -> int:
        """Drop the accepted rows whose tick is not in `ticks`; returns how many."""
        keep = [i for i, t in enumerate(self.tick) if t in ticks]
        n = len(self.tick) - len(keep)
        if n:
            for col in ("tick", "pred", "args", "time", "source", "line"):
                setattr(self, col, [getattr(self, col)[i] for i in keep])
        return n


def far_ticks(known: set[int], new: set[int], max_gap: Optional[int]) -> dict[int, str]:
    """{tick: reason} of the new ticks more than max_gap ticks after the tick before them
    (the known ticks and the new ones not refused, from 0): a likely wrong tick, as
    `hypo run --max-gap` rejects it (the ticks of a gap run one tick job each, or a quiet
    stretch)."""
    if max_gap is None:
        return {}
    out, prev = {}, 0
    for t in sorted(known | new):
        if t in new and t not in known and t > prev + max_gap:
            out[t] = (f"tick {t} is more than {max_gap} ticks after tick {prev}: a likely wrong "
                      f"tick (raise --max-gap if the gap is real)")
        else:
            prev = max(prev, t)
    return out


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


DATA_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
                 ".parquet": "parquet", ".pq": "parquet"}  # a text one may end .gz too


def is_data_file(name: str) -> bool:
    """A file ingest reads by its name (a landing directory's entries; the DAG's listing)."""
    return name.lower().removesuffix(".gz").endswith(tuple(DATA_SUFFIXES))


def detect_format(path: str) -> str:
    low = path.lower().removesuffix(".gz")  # a compressed text file: by its inner name
    for suffix, fmt in DATA_SUFFIXES.items():
        if low.endswith(suffix):
            return fmt
    if low != path.lower():
        return "jsonl"
    with open(path, "rb") as fh:
        head = fh.read(4)
    return "parquet" if head == b"PAR1" else "jsonl"


def check_files(files: list[str]) -> None:
    for f in files:
        if not os.path.exists(f):
            raise InputError(f"{f}: no such file")
        if os.path.isdir(f):
            raise InputError(f"{f}: is a directory (pass the files, e.g. {f}/*.jsonl)")
        if not os.access(f, os.R_OK):
            raise InputError(f"{f}: permission denied")


SPOOL_MAX_BYTES = 4 << 30  # bytes read from one pipe or device (HYPO_SPOOL_MAX_BYTES)


def spool_limit() -> int:
    """The bytes one pipe or device may spool: HYPO_SPOOL_MAX_BYTES, else SPOOL_MAX_BYTES."""
    raw = os.environ.get("HYPO_SPOOL_MAX_BYTES")
    if raw is None or raw == "":
        return SPOOL_MAX_BYTES
    if not raw.isdigit() or len(raw) > 18 or int(raw) < 1:
        raise InputError(f"HYPO_SPOOL_MAX_BYTES={raw!r}: a whole number of bytes, at least 1")
    return int(raw)


def clean_spool(tmpdir: str) -> list[tuple[str, int]]:
    """Remove the spool files of ingests that ended without removing them (killed: their
    process is gone; or named before spool files carried their process id): [(name,
    bytes)] removed, for the caller to report."""
    if not os.path.isdir(tmpdir):
        return []
    out = []
    for name in sorted(os.listdir(tmpdir)):
        m = re.match(r"spool-(\d+)-", name)
        if m is not None:
            try:
                os.kill(int(m.group(1)), 0)
                continue  # that ingest still runs
            except ProcessLookupError:
                pass
            except (PermissionError, OverflowError):
                continue
        elif not name.startswith("spool-"):
            continue
        path = os.path.join(tmpdir, name)
        try:
            size = os.path.getsize(path)
            os.unlink(path)
        except OSError:
            continue
        out.append((name, size))
    return out


def spool_streams(files: list[str], tmpdir: str) -> dict[str, str]:
    """Copy every file that is not a regular file (a FIFO, a shell's `<(…)` pipe, a device)
    to a regular file under tmpdir, read once: ingest reads a file more than once (its
    SHA-256 makes a re-ingest idempotent, then its rows), and a pipe's second read would
    wait for ever for another writer.  At most spool_limit() bytes each (`/dev/zero` wrote
    14 GB in a minute, issue 44.10): past it the copy is removed and the ingest refused.
    The copies carry the process id (clean_spool).  Returns {spooled path: the name given}."""
    import stat
    import tempfile

    limit = spool_limit()
    out: dict[str, str] = {}
    for i, f in enumerate(files):
        if stat.S_ISREG(os.stat(f).st_mode):
            continue
        os.makedirs(tmpdir, exist_ok=True)
        base = os.path.basename(f)
        gz = ".gz" if base.lower().endswith(".gz") else ""
        ext = os.path.splitext(base.removesuffix(gz))[1]  # the format by name, else sniffed
        if ext.lower() not in DATA_SUFFIXES:
            ext = ""
        ext += gz
        fd, tmp = tempfile.mkstemp(prefix=f"spool-{os.getpid()}-", suffix=ext,
                                   dir=os.path.abspath(tmpdir))
        try:
            with open(f, "rb") as src, os.fdopen(fd, "wb") as dst:
                n = 0
                while chunk := src.read(1 << 20):
                    n += len(chunk)
                    if n > limit:
                        raise InputError(
                            f"{f}: more than {limit} bytes from a pipe or device (ingest "
                            f"copies a file that is not a regular one into the lake's spool "
                            f"first): land the data as a file, or raise HYPO_SPOOL_MAX_BYTES")
                    dst.write(chunk)
            if not ext:  # a nameless pipe of gzip data (`<(gzip -c …)`): by its magic bytes
                with open(tmp, "rb") as fh:
                    if fh.read(2) == GZIP_MAGIC:
                        os.replace(tmp, tmp + ".gz")
                        tmp += ".gz"
        except BaseException:
            os.unlink(tmp)
            raise
        out[tmp] = os.path.abspath(f)
        files[i] = tmp
    return out


def rename_sources(parsed: "Parsed", names: dict[str, str]) -> None:
    """The rows read from spooled copies name the file the user gave (spool_streams)."""
    if not names:
        return
    parsed.source = [names.get(s, s) for s in parsed.source]
    for r in parsed.rejected:
        r["source"] = names.get(r["source"], r["source"])


def raw_lines(path: str) -> Iterator[tuple[int, bytes, int, bool]]:
    """(line number, bytes (at most MAX_LINE+1), total length, too long) per line (a gzip
    file decompressed: its damage raises DamagedArchive)."""
    import gzip
    import zlib

    gz = is_gzip(path)
    fh = gzip.open(path, "rb") if gz else open(path, "rb")
    try:
        yield from _raw_lines(fh)
    except (OSError, EOFError, zlib.error) as e:
        if not gz:
            raise
        raise DamagedArchive(f"damaged gzip data: {e}") from None
    finally:
        fh.close()


def _raw_lines(fh) -> Iterator[tuple[int, bytes, int, bool]]:
    no = 0
    while True:
        chunk = fh.readline(MAX_LINE + 1)
        if not chunk:
            return
        no += 1
        if no == 1 and chunk.startswith(b"\xef\xbb\xbf"):  # a byte-order mark (Excel's
            chunk = chunk[3:]                              # "CSV UTF-8" writes one)
        if len(chunk) > MAX_LINE and not chunk.endswith(b"\n"):
            total = len(chunk)
            while True:  # skip the rest of the over-long line
                more = fh.readline(1 << 20)
                total += len(more)
                if not more or more.endswith(b"\n"):
                    break
            yield no, chunk, total, True
            continue
        yield no, chunk, len(chunk), False


def decode(b: bytes) -> tuple[str, bool]:
    try:
        return b.decode("utf-8"), True
    except UnicodeDecodeError:
        return b.decode("utf-8", "backslashreplace"), False


def _tick_of(value: Any, want: Optional[int]) -> tuple[Optional[int], Optional[tuple[str, str]]]:
    """The row's tick (None: none given) or a (code, reason) rejection."""
    if value is None:
        if want is None:
            return None, ("no_tick", 'no "tick" in the row and no --tick given')
        return want, None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None, ("wrong_type", '"tick" must be a natural number')
    if value >= MAX_TIME:
        return None, ("out_of_range", f'"tick" out of range ({RANGE})')
    if want is not None and value != want:
        return value, ("wrong_tick", f"row belongs to tick {value}, not to the slice {want} "
                                     f"being ingested")
    return value, None


def _structured(obj: dict) -> tuple[Optional[tuple], Optional[str]]:
    """(pred, args, time) of a {"pred", "args", "time"} row, or why its types are wrong
    (stream.structured_fact: `hypo run` reads the same rows)."""
    f, bad = structured_fact(obj)
    return (None, bad) if f is None else ((f.pred, f.args, f.time), None)


def _from_obj(out: Parsed, obj: Any, raw: str, nbytes: int, cp: CompiledProgram,
              want: Optional[int], source: str, no: int, last: Optional[list] = None) -> None:
    """One row of a file into `out`; `last` (JSONL: a stream read in arrival order, as
    `hypo run` reads it) holds the file's last accepted tick (read_jsonl), and a fact or
    heartbeat of an earlier tick is refused as `hypo run` refuses it (issue 44.12)."""
    if not isinstance(obj, dict):
        out.reject("bad_json", "expected a JSON object", source, no, raw, nbytes)
        return
    tick, why = _tick_of(obj.get("tick"), want)
    if why is None and last is not None and tick is not None and tick < last[0]:
        why = ("out_of_order", f"out of order: tick {tick} after tick {last[0]} (a stream is "
                               f"read in arrival order)")
    if len(obj) == 1 and "tick" in obj:  # {"tick": N}: a live producer's progress
        if why is not None and why[0] != "wrong_tick":  # (stream.Heartbeat); the lake's
            out.reject(why[0], why[1], source, no, raw, nbytes, tick)  # ticks are the
            return  # DAG's, so it only counts them
        out.heartbeats += 1
        return
    if "fact" in obj:
        text = obj["fact"]
        if not isinstance(text, str):
            out.reject("wrong_type", '"fact" must be a string', source, no, raw, nbytes, tick)
            return
        if why is not None:
            if why[0] == "wrong_tick" and want is not None:
                out.other_ticks += 1
            out.reject(why[0], why[1], source, no, raw, nbytes, tick)
            return
        try:
            f = parse_fact_text(text, cp)
        except ProgramError as e:
            col = f" at column {e.span.column}" if e.span.column else ""
            out.reject("parse_error", f"{e.message}{col}", source, no, raw, nbytes, tick)
            return
        if abs(f.time) >= MAX_TIME:
            out.reject("out_of_range", f"timestamp out of range ({RANGE})", source, no, raw,
                       nbytes, tick)
            return
        out.add(tick, f.pred, f.args, f.time, source, no)
        return
    if "pred" in obj:
        got, bad = _structured(obj)
        if bad is not None:
            code = "out_of_range" if "out of range" in bad else "wrong_type"
            out.reject(code, bad, source, no, raw, nbytes, tick)
            return
        if why is not None:
            if why[0] == "wrong_tick" and want is not None:
                out.other_ticks += 1
            out.reject(why[0], why[1], source, no, raw, nbytes, tick, *got)
            return
        out.add(tick, got[0], got[1], got[2], source, no)
        return
    out.reject("bad_json", 'expected "fact", or "pred", "args" and "time"', source, no, raw,
               nbytes, tick)


def text_lines(path: str, out: Parsed, trim) -> Iterator[tuple[int, str, int]]:
    """(line number, trimmed text, bytes) of the non-blank lines of a text file; over-long and
    non-UTF-8 lines go to quarantine with their reason, and so does the rest of a damaged
    gzip file (one row: the lines before it are kept)."""
    last = 0
    try:
        for item in _text_lines(path, out, trim):
            last = item[0]
            yield item
    except DamagedArchive as e:
        out.reject("bad_encoding", f"{e} (after line {last}; the rest of the file is "
                   f"lost)", path, last + 1, "", 0)


def _text_lines(path: str, out: Parsed, trim) -> Iterator[tuple[int, str, int]]:
    for no, b, total, too_long in raw_lines(path):
        text, ok = decode(b)
        if too_long:
            out.reject("too_long", f"line longer than {MAX_LINE} bytes ({total} bytes)", path, no,
                       text, total)
            continue
        line = trim(text)
        if not line.strip(JSON_SPACE):
            continue
        if not ok:
            out.reject("bad_encoding", "line is not UTF-8 text", path, no, line, total)
            continue
        yield no, line, total


def read_jsonl(path: str, cp: CompiledProgram, want: Optional[int], out: Parsed) -> None:
    last = [-1] if want is None else None  # the last accepted tick (a slice: one tick)
    for no, line, total in text_lines(path, out, lambda t: t.strip(JSON_SPACE)):
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            msg = getattr(e, "msg", "too deeply nested").removesuffix(" at")
            col = f" at column {e.colno}" if hasattr(e, "colno") else ""
            out.reject("bad_json", f"invalid JSON ({msg}{col})", path, no, line, total)
            continue
        except ValueError:  # an integer past Python's 4 300 digits
            out.reject("bad_json", "invalid JSON (an integer of more than 4 300 digits)", path,
                       no, line, total)
            continue
        nf, nh = len(out.tick), out.heartbeats
        _from_obj(out, obj, line, total, cp, want, path, no, last)
        if last is not None and len(out.tick) > nf:
            last[0] = out.tick[-1]
        elif last is not None and out.heartbeats > nh:
            last[0] = obj["tick"]


def _small_int(v: str, pattern: str):
    """A CSV field as an int when it is one of at most 19 digits (larger ones: int64 range
    exceeded, kept as text and refused with a reason), else the text."""
    if re.fullmatch(pattern, v) and len(v.lstrip("-")) <= 19:
        return int(v)
    if re.fullmatch(pattern, v):
        return MAX_TIME * (-1 if v.startswith("-") else 1)  # out of range, refused below
    return v


def read_csv(path: str, cp: CompiledProgram, want: Optional[int], out: Parsed) -> None:
    header: Optional[list[str]] = None
    for no, line, total in text_lines(path, out, lambda t: t.rstrip("\r\n")):
        try:
            fields = next(csv.reader(io.StringIO(line)))
        except (csv.Error, StopIteration) as e:
            out.reject("bad_csv", f"invalid CSV ({e})", path, no, line, total)
            continue
        if header is None:
            header = [h.strip().lower() for h in fields]
            if "fact" not in header and not {"pred", "time"} <= set(header):
                out.reject("bad_csv", "the CSV header must name a `fact` column or `pred`, "
                                      "`args`, `time` columns", path, no, line, total)
                return
            continue
        if len(fields) != len(header):
            out.reject("wrong_type", f"expected {len(header)} fields, got {len(fields)}", path, no,
                       line, total)
            continue
        row: dict[str, Any] = dict(zip(header, fields))
        if "tick" in row:
            v = row["tick"].strip()
            row["tick"] = _small_int(v, r"[0-9]+") if v != "" else None
        if "time" in row:
            v = row["time"].strip()
            row["time"] = _small_int(v, r"-?[0-9]+")
        if "fact" in row and "pred" not in row:
            pass
        elif "pred" in row:
            row.pop("fact", None)
            row["pred"] = row["pred"].strip()
            row["args"] = row.get("args", "")
        _from_obj(out, row, line, total, cp, want, path, no)


def read_parquet(path: str, cp: CompiledProgram, want: Optional[int], out: Parsed) -> bool:
    """False if the file is not readable Parquet at all (the caller keeps a copy)."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
    except Exception as e:  # noqa: BLE001 - any decoding failure of a producer's file
        out.reject("unreadable_file", f"not a readable Parquet file ({type(e).__name__}: "
                                      f"{str(e)[:200]})", path, 0, "", os.path.getsize(path))
        return False
    if "fact" not in names and not {"pred", "time"} <= names:
        out.reject("unreadable_file", "Parquet file needs a `fact` column or `pred`, `args`, "
                                      "`time` columns", path, 0, "", os.path.getsize(path))
        return False
    cols = [c for c in ("tick", "fact", "pred", "args", "time") if c in names]
    no = 0
    try:
        for batch in pf.iter_batches(batch_size=65536, columns=cols):
            for row in batch.to_pylist():
                no += 1
                raw = json.dumps(row, default=str, ensure_ascii=False)
                if row.get("fact") is not None and "pred" in row and row.get("pred") is None:
                    row.pop("pred")
                if "fact" in row and row.get("fact") is None and "pred" in row:
                    row.pop("fact")
                _from_obj(out, row, raw, len(raw.encode()), cp, want, path, no)
    except Exception as e:  # noqa: BLE001 - a corrupt row group: the rest of the file
        out.reject("unreadable_file", f"Parquet file unreadable after row {no} "
                                      f"({type(e).__name__}: {str(e)[:200]})", path, no + 1, "",
                   os.path.getsize(path))
        return False
    return True


def read_files(files: list[str], cp: CompiledProgram, want: Optional[int]) -> tuple[Parsed, list]:
    """Parse every file; returns the rows and the files that were unreadable as a whole."""
    out = Parsed()
    unreadable = []
    for f in files:
        fmt = detect_format(f)
        if fmt == "jsonl":
            read_jsonl(f, cp, want, out)
        elif fmt == "csv":
            read_csv(f, cp, want, out)
        elif not read_parquet(f, cp, want, out):
            unreadable.append(f)
    return out, unreadable

"""Writing results: all or nothing, never a mix of two runs, with the user's file permissions.

Two writers, and nothing in sieve writes a file any other way:

* :func:`write_run` / :func:`open_run` write a run's result folder (``sieve characterize``,
  ``sieve roofline`` and the coming ``sieve run`` / ``sieve sweep``). Every file of the run is
  written into a temporary folder beside the target (``.<name>.<random>.tmp``); only when all
  of them are complete is that folder swapped in, replacing the folder of the previous run as a
  whole. An error part-way (a bad value found late, a full disk, Ctrl-C) leaves the previous
  run's folder exactly as it was and nothing of the new run. Each run folder holds
  ``manifest.json`` (command, file names, sizes and SHA-256), which is also how sieve knows a
  folder is one of its own: it replaces an empty folder or an earlier run's folder, and refuses
  a folder holding files it did not write (your notes are never deleted).
* :func:`atomic_write` (with :func:`write_bytes` / :func:`write_text` / :func:`write_json`)
  replaces one file: written
  to a temporary file in the same folder, renamed into place when complete.

A run folder may also hold **stores**: subfolders of small per-item files that outlive the
replacement of the folder (``sieve sweep`` keeps each finished run in ``runs/``, see
:mod:`sieve.experiments.store`). A store is recognised by its marker file (:data:`STORE_MARKER`,
format :data:`STORE_FORMAT`) and holds only files of the names :func:`store_name_ok` accepts;
:func:`check_out_dir` accepts a folder holding such stores (also one with no manifest yet: a
sweep killed before its end), and a new run folder swapped in carries every store of the folder
it replaces (hard links, copies where the filesystem has none), so finished runs are never lost
and never mixed with foreign files.

Files are created with mode ``0666 & ~umask`` and folders with ``0777 & ~umask``, as any other
program's files (``tempfile`` would make them private). Every filesystem failure becomes one
:class:`~sieve.errors.OutputError` line naming the path and the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sieve.errors import ConfigError, OutputError

__all__ = [
    "MANIFEST",
    "MANIFEST_FORMAT",
    "RunFolder",
    "STORE_FORMAT",
    "STORE_MARKER",
    "check_out_file",
    "lock_out_dir",
    "atomic_write",
    "check_out_dir",
    "open_run",
    "open_store",
    "store_name_ok",
    "write_bytes",
    "write_json",
    "write_run",
    "write_text",
]

#: Name of the manifest every run folder holds.
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "sieve-run"
MANIFEST_VERSION = 1
#: Marker file of a store subfolder, and its format name.
STORE_MARKER = "store.json"
STORE_FORMAT = "sieve-store"
#: Names a store may hold besides its marker: items keyed by a hex digest, the store's cache
#: file, and the temporary files of an interrupted atomic write (removed when seen).
_STORE_ITEM = re.compile(r"(?:[0-9a-f]{8,64}|cache)\.json\Z")
_TMP_NAME = re.compile(r"\..+\.[0-9a-f]{8}\.tmp\Z")


# --------------------------------------------------------------------------------------------
# Permissions
# --------------------------------------------------------------------------------------------


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux >= 4.7)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # pragma: no cover - other systems
    os.umask(old)
    return old


def _file_mode() -> int:
    return 0o666 & ~_umask()


def _fail(path: Path | str, exc: OSError, doing: str = "cannot write") -> OutputError:
    reason = exc.strerror or type(exc).__name__
    return OutputError(f"output {str(path)!r}: {doing} ({reason})")


# --------------------------------------------------------------------------------------------
# One file
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Open a temporary file next to ``path``; rename it to ``path`` on success only.

    The file gets mode ``0666 & ~umask``. Filesystem errors become :class:`OutputError`.
    """
    path = Path(path)
    if not str(path).strip():
        raise ConfigError("output file: empty path")
    if path.is_dir():
        raise OutputError(f"output {str(path)!r}: is a folder, expected a file name")
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _fail(path, exc) from None
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.chmod(tmp, _file_mode())  # O_CREAT already applied the umask; be explicit
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _fail(path, exc) from None
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Replace the single file ``path`` with ``data``, atomically (a run's several files go
    through :func:`write_run` instead)."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8), atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_section(path: str | Path, begin: str, end: str, text: str, *,
                  heading: str | None = None, new_file: str = "") -> Path:
    """Replace the generated part of a Markdown file, atomically: everything from ``begin`` to
    ``end`` (markers such as ``<!-- perf:trace:begin``; ``text`` carries both) becomes
    ``text``. A file without that part gets ``text`` appended, under ``## heading`` if given;
    a missing file starts as ``new_file``. The benchmarks' ``--write`` use this."""
    p = Path(path)
    doc = p.read_text() if p.exists() else new_file
    pat = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    if pat.search(doc):
        doc = pat.sub(lambda _: text, doc)
    else:
        doc = (doc.rstrip("\n") + "\n\n" + (f"## {heading}\n\n" if heading else "") + text
               + "\n")
    return write_text(p, doc)


def write_json(path: str | Path, obj: Any) -> Path:
    """Replace ``path`` with ``obj`` as indented, key-sorted JSON, atomically."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=jsonable) + "\n")


def jsonable(obj: Any) -> Any:
    """The ``default=`` of every ``json.dumps`` in sieve: numpy scalars and arrays as Python
    numbers and lists, tuples and sets as lists, paths as strings; anything else is a
    TypeError."""
    try:
        import numpy as np

        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


# --------------------------------------------------------------------------------------------
# Run folders
# --------------------------------------------------------------------------------------------


def _as_path(out_dir: Any, flag: str) -> Path:
    if not isinstance(out_dir, (str, os.PathLike)):
        raise ConfigError(f"{flag}: expected a folder path, got {out_dir!r}")
    text = os.fspath(out_dir)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{flag}: empty folder name (give a folder, e.g. {flag} results)")
    if "\0" in text:
        raise ConfigError(f"{flag}: {text!r} is not a valid path (NUL character)")
    if os.path.islink(text) and not os.path.exists(text):  # would create its target's folders
        raise ConfigError(f"{flag} {text!r}: a symbolic link to {os.readlink(text)!r}, which "
                          "does not exist; give a folder, or make the link's target first")
    return Path(os.path.realpath(text))  # a symlinked folder is replaced where it really is


def _own_json(path: Path) -> Any:
    """One of sieve's own small JSON files in an output folder (a manifest, a store marker),
    read once and never past :data:`sieve.limits.MAX_TEXT_FILE_BYTES`; None when it cannot be
    read, is larger (not one of ours: a planted file is never read whole) or is not JSON."""
    from sieve.limits import MAX_TEXT_FILE_BYTES
    from sieve.validate import strict_json

    try:
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TEXT_FILE_BYTES + 1)
        if len(raw) > MAX_TEXT_FILE_BYTES:
            return None
        return strict_json(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _previous_run_files(p: Path) -> set[str] | None:
    """Names listed in the manifest of an earlier run in ``p``, or None if it is not one."""
    m = _own_json(p / MANIFEST)
    if not isinstance(m, dict) or m.get("format") != MANIFEST_FORMAT:
        return None
    files = m.get("files")
    if not isinstance(files, dict) or not all(isinstance(k, str) for k in files):
        return None
    return set(files) | {MANIFEST}


def store_name_ok(name: str) -> bool:
    """Whether a store may hold a file of this name (its marker, ``<hex>.json`` items,
    ``cache.json``, or a temporary file of an interrupted atomic write)."""
    return name == STORE_MARKER or bool(_STORE_ITEM.match(name) or _TMP_NAME.match(name))


def _is_store(p: Path) -> bool:
    """Whether ``p`` is a store folder (a marker of the store format; no symlink)."""
    if p.is_symlink() or not p.is_dir():
        return False
    m = _own_json(p / STORE_MARKER)
    return isinstance(m, dict) and m.get("format") == STORE_FORMAT


def _store_foreign(p: Path) -> list[str]:
    """Entries of a store that sieve did not write (anything but plain files of its names)."""
    out = []
    for e in sorted(os.listdir(p)):
        q = p / e
        if not store_name_ok(e) or q.is_symlink() or not q.is_file():
            out.append(f"{p.name}/{e}")
    return out


def _stores(p: Path) -> list[str]:
    """Names of the store subfolders of folder ``p``."""
    try:
        return [e for e in sorted(os.listdir(p)) if _is_store(p / e)]
    except OSError:
        return []


def open_store(folder: str | os.PathLike, name: str, *, flag: str = "--out",
               what: str = "") -> Path:
    """Create (or reuse) the store ``folder/name`` and return its path; an existing store's
    temporary files (of an interrupted write) are removed. Call :func:`check_out_dir` on
    ``folder`` first.

    Raises:
        OutputError: ``folder/name`` exists and is not a store, holds files sieve did not
            write, or cannot be created.
    """
    name = _check_name(name)
    p = _as_path(folder, flag) / name
    try:
        if p.exists() or p.is_symlink():
            if not _is_store(p):
                raise OutputError(f"{flag} {str(p.parent)!r}: {name!r} exists and is not a "
                                  "sieve store; give a new or empty folder")
            foreign = _store_foreign(p)
            if foreign:
                raise OutputError(f"{flag} {str(p.parent)!r}: holds files sieve did not write "
                                  f"({', '.join(foreign[:3])}); give a new or empty folder")
            for e in os.listdir(p):
                if _TMP_NAME.match(e):
                    with contextlib.suppress(OSError):
                        os.unlink(p / e)
            return p
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(p, 0o777)
    except OSError as exc:
        raise _fail(p, exc) from None
    marker = {"format": STORE_FORMAT, "version": 1, "what": what}
    write_text(p / STORE_MARKER, json.dumps(marker, indent=2, sort_keys=True) + "\n")
    return p


def check_out_file(path: str | os.PathLike, *, flag: str) -> Path:
    """Check, before any work, that a file can be written at ``path`` (a regular file or a new
    one, in a folder that exists or can be made in a writable one): the late refusal of an
    unwritable ``--cache`` after a whole sweep (issue 18)."""
    p = _as_path(path, flag)
    if p.is_dir():
        raise OutputError(f"{flag} {str(p)!r}: is a folder, not a file")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{flag} {str(p)!r}: cannot write (permission denied)")
    anc = p.parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {str(p)!r}: cannot write in {str(anc)!r}")
    try:  # permissions say little to root or on special file systems (/proc): try it
        fd, probe = tempfile.mkstemp(prefix=".sieve-probe.", dir=anc)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{flag} {str(p)!r}: cannot write in {str(anc)!r} "
                          f"({exc.strerror or exc})") from None
    return p


def check_out_dir(out_dir: str | os.PathLike, *, flag: str = "--out") -> Path:
    """Check, before a run computes anything, that its results can go to ``out_dir``.

    Accepted: a folder that does not exist yet (its missing parents are created when the run is
    written), an empty folder, or the folder of an earlier sieve run (it has a
    ``manifest.json`` listing every file in it), each possibly holding stores (module doc)
    that hold only sieve's files; the folder it would be created in must be writable.

    Returns:
        The absolute path.

    Raises:
        ConfigError: empty or invalid path, or the current folder (or one above it).
        OutputError: the path is a file, a folder holding files sieve did not write, or a
            place that cannot be written.
    """
    p = _as_path(out_dir, flag)
    cwd = Path(os.path.realpath(os.getcwd()))
    if p == cwd or p in cwd.parents:
        raise ConfigError(f"{flag} {os.fspath(out_dir)!r}: is the current folder or one above "
                          f"it; give a new or empty folder for the results")
    try:
        if p.exists():
            if not p.is_dir():
                raise OutputError(f"{flag} {str(p)!r}: exists and is not a folder")
            if os.path.ismount(p):  # the finished folder replaces it by a rename
                raise OutputError(f"{flag} {str(p)!r}: is a mount point, which sieve cannot "
                                  "replace with the finished results; give a folder inside it")
            entries = sorted(os.listdir(p))
            if entries:
                known = _previous_run_files(p)
                stores = set(_stores(p))
                foreign = [e for e in entries if e not in stores and (known is None
                                                                       or e not in known)]
                for e in sorted(stores):
                    foreign += _store_foreign(p / e)
                if foreign:
                    shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
                    raise OutputError(
                        f"{flag} {str(p)!r}: holds files sieve did not write ({shown}); "
                        f"give a new or empty folder, or the folder of an earlier run")
        anc = p.parent
        while not anc.exists():
            anc = anc.parent
        if not anc.is_dir():
            raise OutputError(f"{flag} {str(p)!r}: {str(anc)!r} is not a folder")
        if not os.access(anc, os.W_OK | os.X_OK):
            raise OutputError(f"{flag} {str(p)!r}: cannot write in {str(anc)!r} "
                              f"(permission denied)")
    except OSError as exc:
        raise OutputError(f"{flag} {str(p)!r}: cannot use ({exc.strerror or exc})") from None
    return p


def _check_name(name: Any) -> str:
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\0" in name or name.startswith(".") or name == MANIFEST):
        raise ConfigError(f"run folder: {name!r} is not a plain file name (no folders, no "
                          f"leading dot, not {MANIFEST})")
    return name


class RunFolder:
    """A run folder being written; see :func:`open_run`. Files go to a hidden temporary folder
    beside the target until :meth:`commit`."""

    def __init__(self, target: Path, command: str, flag: str):
        self.target, self.command, self.flag = target, command, flag
        self._files: dict[str, dict[str, Any]] = {}
        self._created: list[Path] = []
        self._tmp: Path | None = None
        self.paths: list[Path] = []  # set by commit()
        anc = target.parent
        missing = []
        while not anc.exists():
            missing.append(anc)
            anc = anc.parent
        try:
            for d in reversed(missing):
                os.mkdir(d, 0o777)
                self._created.append(d)
            for _ in range(100):
                tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
                try:
                    os.mkdir(tmp, 0o777)  # the umask applies, unlike tempfile.mkdtemp's 0700
                except FileExistsError:
                    continue
                self._tmp = tmp
                break
            else:  # pragma: no cover
                raise FileExistsError(17, "no free temporary name")
        except OSError as exc:
            self._cleanup()
            raise _fail(target, exc) from None

    def write(self, name: str, data: bytes | str) -> Path:
        """Add one file (bytes, or str written as UTF-8) to the run."""
        name = _check_name(name)
        if self._tmp is None:
            raise ConfigError("run folder: already committed or discarded")
        if name in self._files:
            raise ConfigError(f"run folder: {name!r} written twice")
        if isinstance(data, str):
            data = data.encode("utf-8")
        path = self._tmp / name
        try:
            with open(path, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise _fail(self.target / name, exc) from None
        self._files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        return self.target / name

    def commit(self) -> list[Path]:
        """Write the manifest and swap the folder in; returns the paths (manifest last)."""
        if self._tmp is None:
            raise ConfigError("run folder: already committed or discarded")
        manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION,
                    "command": self.command, "files": dict(sorted(self._files.items()))}
        carried = _stores(self.target) if self.target.is_dir() else []
        clash = sorted(set(carried) & set(self._files))
        if clash:
            raise ConfigError(f"run folder: {clash[0]!r} is a store of {str(self.target)!r} "
                              "and cannot be replaced by a file")
        if carried:
            manifest["stores"] = carried
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        try:
            with open(self._tmp / MANIFEST, "xb") as fh:
                fh.write(text.encode())
                fh.flush()
                os.fsync(fh.fileno())
            check_out_dir(self.target, flag=self.flag)  # still ours to replace?
            for name in carried:
                self._carry(name)
            self._swap()
        except OSError as exc:
            raise _fail(self.target, exc) from None
        self._tmp = None
        self._created = []
        self.paths = [self.target / n for n in self._files] + [self.target / MANIFEST]
        return self.paths

    def _carry(self, name: str) -> None:
        """Link (or copy) the store ``name`` of the target into the new folder."""
        src, dst = self.target / name, self._tmp / name
        os.mkdir(dst, 0o777)
        for e in sorted(os.listdir(src)):
            if _TMP_NAME.match(e):
                continue
            try:
                os.link(src / e, dst / e)
            except OSError:  # no hard links here (or another filesystem): copy
                shutil.copy2(src / e, dst / e)

    def _swap(self) -> None:
        tmp, target = self._tmp, self.target
        if not target.exists():
            os.rename(tmp, target)
            return
        old = target.parent / f".{target.name}.{secrets.token_hex(4)}.old"
        os.rename(target, old)
        try:
            os.rename(tmp, target)
        except BaseException:
            os.rename(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        """Drop everything written so far; the target is left as it was."""
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        for d in reversed(self._created):
            with contextlib.suppress(OSError):
                os.rmdir(d)  # only if still empty
        self._created = []


@contextlib.contextmanager
def open_run(out_dir: str | os.PathLike, command: str, *, flag: str = "--out"
             ) -> Iterator[RunFolder]:
    """Write a run folder file by file; all files appear together when the block ends.

    ``with open_run("out", "sweep") as run: run.write("a.csv", text)``. If the block raises
    (Ctrl-C included), nothing is written and an earlier run's folder stays as it was.

    Raises:
        ConfigError, OutputError: see :func:`check_out_dir`; OutputError for any filesystem
            failure while writing.
    """
    with lock_out_dir(out_dir, flag=flag):
        target = check_out_dir(out_dir, flag=flag)
        run = RunFolder(target, command, flag)
        try:
            yield run
            run.commit()
        except BaseException:
            run.discard()
            raise


#: Result folders this process holds the lock of (path -> nesting depth).
_HELD: dict[str, int] = {}


@contextlib.contextmanager
def lock_out_dir(out_dir: str | os.PathLike, *, flag: str = "--out") -> Iterator[Path]:
    """Hold the result folder ``out_dir`` for this process: a second sieve writing the same
    folder is refused in one line (naming the holder's pid) instead of racing it to the
    final rename. Re-entrant within a process (a sweep holds it and its writer takes it
    again). The lock is an ``flock`` on a hidden file in the nearest existing folder above
    the target (``.sieve-lock.<hash of the path>``), removed on release; a killed holder's
    lock is released by the kernel. While it is held, temporary folders left beside the
    target by a killed earlier writer (``.NAME.XXXXXXXX.tmp`` / ``.old``) are removed.
    Without ``fcntl`` (not POSIX) it only nests."""
    target = _as_path(out_dir, flag)
    key = str(target)
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield target
        finally:
            _HELD[key] -= 1
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    fd, lock = None, None
    if fcntl is not None:
        anc = target.parent
        while not anc.exists():
            anc = anc.parent
        lock = anc / f".sieve-lock.{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as exc:
                raise _fail(target, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                try:
                    holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
                finally:
                    os.close(fd)
                raise OutputError(f"{flag} {key!r}: another sieve (pid {holder}) is writing "
                                  "this folder; wait for it to finish, or give another "
                                  "folder") from None
            try:  # the previous holder may have removed the file between our open and lock
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    _HELD[key] = 1
    try:
        _remove_stale_temporaries(target)
        yield target
    finally:
        del _HELD[key]
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)


def _remove_stale_temporaries(target: Path) -> None:
    """Folders ``.NAME.XXXXXXXX.tmp`` / ``.old`` beside ``target`` that an earlier writer,
    killed before it could clean up, left behind (the lock is held: none is being written)."""
    if not target.parent.is_dir():
        return
    pat = re.compile(re.escape(f".{target.name}.") + r"[0-9a-f]{8}\.(tmp|old)\Z")
    for e in os.listdir(target.parent):
        if pat.match(e):
            p = target.parent / e
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)


def write_run(out_dir: str | os.PathLike, files: Mapping[str, bytes | str], *, command: str,
              flag: str = "--out") -> list[Path]:
    """Write already-rendered files (name -> bytes or text) as one run folder, all or nothing.

    Returns:
        The paths written, in the order given, then ``manifest.json``.
    """
    with open_run(out_dir, command, flag=flag) as run:
        for name, data in files.items():
            run.write(name, data)
    return run.paths

"""Content-hash cache: findings per file content, keyed by file bytes, file kind, the
running code (version and sources, ``build_identity``) and settings, so an unchanged
tree re-lints almost instantly.

One SQLite database per settings fingerprint (``sqlite3`` from the standard library): a
run reads the entries it asks for, one by one, not the whole cache, and writes what it
learned in one transaction (what other runs wrote meanwhile is kept).

The cache lives in the project, so it is never trusted as it is found: every entry is
signed with a key kept outside the project, over the settings fingerprint, its key and
its value (a cache committed to a repository, edited by hand, or an entry moved to
another key does not verify and is ignored; a key inside the project, another user's,
or one open to others is refused and the cache is off, with a notice), every entry is
checked for shape before use, and the database is opened only when it is a regular
file of bounded size reached without a symbolic link.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sqlite3
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ddplint.source import FileTooLarge, read_source_bytes

MAX_ENTRIES = 200_000
#: A results file larger than this is not read (a link to /dev/zero, a forged giant).
MAX_CACHE_BYTES = 512 * 1024 * 1024
#: Signed into every entry: entries of another format do not verify and are not read
#: (5: project facts as typed records, encoded positionally by ``project.encoding``;
#: 7: object kinds in them; 8: the configs' answers an outcome rests on).
FORMAT = 8
#: Keys asked of the database in one query (``ResultCache.get_many``; SQLite allows 999
#: parameters in its oldest builds).
READ_BATCH = 500
#: How long a run waits for another run's write to the database to end.
LOCK_TIMEOUT_SECONDS = 5.0
_SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT, signature TEXT)"


_OWN_GITIGNORE = "# created by ddplint\n*\n"
#: What a results database leaves beside it (SQLite's journals).
_RESULTS_SUFFIXES = (".sqlite3", ".sqlite3-journal", ".sqlite3-wal", ".sqlite3-shm")


def clear_results(directory: Path) -> list[Path]:
    """Remove every results database (of any settings or code) from the cache folder,
    and the folder itself when ddplint made it and nothing else is left; the paths
    removed. Only regular files ddplint names are touched; a folder that is a link is
    refused (``OSError``)."""
    if directory.is_symlink():
        raise OSError(f"{directory} is a symbolic link; not cleaned")
    if not directory.is_dir():
        return []
    removed: list[Path] = []
    for entry in sorted(directory.iterdir()):
        own = entry.name.startswith("results-") and entry.name.endswith(_RESULTS_SUFFIXES)
        if own and stat.S_ISREG(os.lstat(entry).st_mode):
            entry.unlink()
            removed.append(entry)
    ignore = directory / ".gitignore"
    left = [entry for entry in directory.iterdir() if entry != ignore]
    ours = not left and ignore.is_file() and not ignore.is_symlink()
    if ours and ignore.read_text(encoding="utf-8", errors="replace") == _OWN_GITIGNORE:
        ignore.unlink()
        directory.rmdir()
        removed.append(directory)
    return removed


def content_hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def cache_key(kind: str, raw: bytes, suffix: str = "") -> str:
    """The key of a file's outcome: what the file is linted as, and its bytes (a ``.py``
    file and a YAML file with the same bytes are different entries)."""
    return f"{kind}:{content_hash(raw)}{suffix}"


#: The smallest key accepted, in bytes (ddplint makes 32 random bytes).
MIN_KEY_BYTES = 32


class KeyRefused(Exception):
    """The signing key cannot be used; the message says why (the cache is then off)."""


def signing_key(project_root: Path | None = None) -> bytes:
    """This machine's key for cache entries (created on first use, readable by its owner
    only). Refused, as ssh refuses a private key, when it lies inside the project (a
    repository could commit it with a cache signed by it), is owned by another user, or
    is open to others; raises ``KeyRefused`` then, and when it can be neither read nor
    made."""
    path = key_path()
    if project_root is not None and _inside(path, project_root):
        raise KeyRefused(f"{path} lies inside the project (a repository could commit it)")
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise KeyRefused(f"{path} cannot be read ({exc.strerror or exc})") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another run made it meanwhile
        try:
            return _read_key(path)
        except OSError as exc:
            raise KeyRefused(f"{path} cannot be read ({exc.strerror or exc})") from None
    except OSError as exc:
        raise KeyRefused(f"{path} cannot be made ({exc.strerror or exc})") from None
    import secrets  # only to make a key: most runs read one

    key = secrets.token_bytes(MIN_KEY_BYTES)
    with os.fdopen(fd, "wb") as stream:
        stream.write(key)
    return key


def key_path() -> Path:
    """Where the signing key is kept: ``DDPLINT_CACHE_KEY_FILE``, else
    ``$XDG_CACHE_HOME/ddplint/cache-key`` (``~/.cache`` by default)."""
    override = os.environ.get("DDPLINT_CACHE_KEY_FILE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no HOME and no passwd entry (an arbitrary-uid container)
            raise KeyRefused(
                "there is no home folder to keep the signing key in "
                "(set XDG_CACHE_HOME or DDPLINT_CACHE_KEY_FILE)"
            ) from None
    return Path(base) / "ddplint" / "cache-key"


def _inside(path: Path, folder: Path) -> bool:
    real, real_folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, real_folder]) == real_folder


def _read_key(path: Path) -> bytes:
    """The key in ``path``: a regular file reached without a link, owned by this user,
    not open to group or others, of ``MIN_KEY_BYTES`` to 1 KiB. Raises
    ``FileNotFoundError``, ``OSError``, or ``KeyRefused`` with the reason."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyRefused(f"{path} is not a regular file")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise KeyRefused(f"{path} is owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise KeyRefused(f"{path} is open to others (mode {mode:04o}; `chmod 600` it)")
        key = stream.read(1025)
    if not MIN_KEY_BYTES <= len(key) <= 1024:
        raise KeyRefused(f"{path} does not hold a key ({len(key)} bytes)")
    return key


def _read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file, reached without a link, of at most
    ``limit`` bytes; None otherwise (never blocks on a FIFO, never reads a device)."""
    try:
        return read_source_bytes(path, limit, follow_links=False)
    except (OSError, FileTooLarge):
        return None


def _signature(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def entry_signature(secret: bytes, fingerprint: str, key: str, value: str) -> str:
    """The signature of one stored entry: its format, settings, key and value."""
    payload = f"{FORMAT}\0{fingerprint}\0{key}\0{value}".encode("utf-8", "surrogatepass")
    return _signature(secret, payload)


def _regular_or_absent(path: Path) -> bool | None:
    """True for a regular file of at most ``MAX_CACHE_BYTES`` (not a link), False for
    nothing there, None for anything else (a link, a FIFO, a device, a forged giant)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_CACHE_BYTES:
        return None
    return True


class ResultCache:
    """One signed SQLite database per settings fingerprint under the cache folder.

    ``entries`` holds what this run read or wrote (the database is asked once per key);
    ``save`` writes the entries ``put`` since. Without a usable
    signing key the cache is off and ``problem`` says why."""

    def __init__(self, directory: Path, fingerprint: str, project_root: Path | None = None):
        self.directory = directory
        self.fingerprint = fingerprint
        self.file = directory / f"results-{fingerprint}.sqlite3"
        self.entries: dict[str, dict[str, Any]] = {}
        self._unsaved: set[str] = set()
        #: Keys asked for and not in the database (not asked again).
        self._absent: set[str] = set()
        self._reader: sqlite3.Connection | None = None
        self._key: bytes | None = None
        #: Why the cache is off (the signing key refused or missing), or None.
        self.problem: str | None = None
        try:
            self._key = signing_key(project_root)
        except KeyRefused as refused:
            self.problem = f"the result cache is off: signing key: {refused}"
        #: False when the folder is a link or not a folder: nothing is read or written.
        self.usable = self._key is not None and not directory.is_symlink()

    def get(self, key: str) -> dict[str, Any] | None:
        if key not in self.entries and key not in self._absent:
            found = self._read(key)
            if found is None:
                self._absent.add(key)
            else:
                self.entries[key] = found
        entry = self.entries.get(key)
        return entry if isinstance(entry, dict) else None

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The entries of ``keys`` that are there, by key: the database is asked once
        for every ``READ_BATCH`` keys not asked before (``get`` asks once per key)."""
        wanted = list(dict.fromkeys(keys))
        asked = [k for k in wanted if k not in self.entries and k not in self._absent]
        for start in range(0, len(asked), READ_BATCH):
            batch = asked[start : start + READ_BATCH]
            found = self._read_batch(batch)
            self.entries.update(found)
            self._absent.update(k for k in batch if k not in found)
        return {k: e for k in wanted if isinstance(e := self.entries.get(k), dict)}

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.remember(key, value)
        self._unsaved.add(key)

    def forget(self, key: str) -> None:
        """Let an entry read from the database go from memory (a large one, read once;
        it is read again if asked for). An entry put and not saved stays."""
        if key not in self._unsaved:
            self.entries.pop(key, None)

    def remember(self, key: str, value: dict[str, Any]) -> None:
        """Hold ``value`` for ``key`` in memory for this run, not to be saved."""
        self.entries[key] = value
        self._absent.discard(key)

    def save(self) -> None:
        """Write what was put since the last save and let it go from memory (it is read
        again if asked for); a cache that cannot be written is silently not kept."""
        written = {k: self.entries[k] for k in self._unsaved if k in self.entries}
        self._unsaved.clear()
        if self.add_to_file(written):
            for key in written:
                del self.entries[key]

    def add_to_file(self, entries: dict[str, dict[str, Any]]) -> bool:
        """Add ``entries`` to the database (what other runs wrote there is kept; the
        oldest entries go beyond ``MAX_ENTRIES``); whether they were written (silently
        not when the cache cannot be written)."""
        if not entries or not self.usable or self._key is None:
            return False
        rows = []
        for key, value in entries.items():
            text = json.dumps(value, separators=(",", ":"))
            rows.append((key, text, entry_signature(self._key, self.fingerprint, key, text)))
        try:
            self._write(rows)
        except (OSError, sqlite3.Error):
            return False
        return True

    def stored(self) -> dict[str, dict[str, Any]]:
        """Every entry of the database that verifies, in the order written."""
        found: dict[str, dict[str, Any]] = {}
        connection = self._open_reader()
        if connection is None:
            return found
        with contextlib.suppress(sqlite3.Error):
            query = "SELECT key, value, signature FROM entries ORDER BY rowid"
            for key, value, signature in connection.execute(query):
                entry = self._verified(key, value, signature)
                if entry is not None:
                    found[key] = entry
        return found

    def _read(self, key: str) -> dict[str, Any] | None:
        connection = self._open_reader()
        if connection is None:
            return None
        try:
            row = connection.execute(
                "SELECT value, signature FROM entries WHERE key = ?", (key,)
            ).fetchone()
        except sqlite3.Error:
            return None  # damaged, or not a database: start afresh
        return None if row is None else self._verified(key, *row)

    def _read_batch(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        connection = self._open_reader()
        if connection is None or not keys:
            return {}
        query = "SELECT key, value, signature FROM entries WHERE key IN (%s)"
        try:
            rows = connection.execute(query % ",".join("?" * len(keys)), keys).fetchall()
        except sqlite3.Error:
            return {}  # damaged, or not a database: start afresh
        found = {}
        for key, value, signature in rows:
            entry = self._verified(key, value, signature)
            if entry is not None:
                found[key] = entry
        return found

    def _verified(self, key: Any, value: Any, signature: Any) -> dict[str, Any] | None:
        """The entry, if written by this machine for these settings under this key."""
        if self._key is None or not all(isinstance(x, str) for x in (key, value, signature)):
            return None
        expected = entry_signature(self._key, self.fingerprint, key, value)
        if not hmac.compare_digest(signature, expected):
            return None  # written elsewhere (committed, edited, another machine)
        try:
            entry = json.loads(value)
        except (ValueError, RecursionError):
            return None
        return entry if isinstance(entry, dict) else None

    def _open_reader(self) -> sqlite3.Connection | None:
        if self._reader is None and self.usable and _regular_or_absent(self.file):
            with contextlib.suppress(sqlite3.Error):
                uri = f"{self.file.resolve().as_uri()}?mode=ro"
                self._reader = sqlite3.connect(
                    uri, uri=True, timeout=LOCK_TIMEOUT_SECONDS, check_same_thread=False
                )
        return self._reader

    def _write(self, rows: list[tuple[str, str, str]]) -> None:
        created = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.directory.is_symlink() or not self.directory.is_dir():
            raise OSError(f"{self.directory} is not a folder")
        ignore = self.directory / ".gitignore"
        if created and not ignore.exists():
            ignore.write_text(_OWN_GITIGNORE, encoding="utf-8")
        if _regular_or_absent(self.file) is None:
            self.file.unlink()  # a link, a FIFO or a giant where the cache belongs
        try:
            self._insert(rows)
        except sqlite3.DatabaseError:  # damaged, or not a database: made afresh
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self.file.unlink()
            self._insert(rows)

    def _insert(self, rows: list[tuple[str, str, str]]) -> None:
        connection = sqlite3.connect(self.file, timeout=LOCK_TIMEOUT_SECONDS)
        try:
            with connection:
                connection.execute(_SCHEMA)
                connection.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", rows)
                (count,) = connection.execute("SELECT count(*) FROM entries").fetchone()
                if count > MAX_ENTRIES:
                    connection.execute(
                        "DELETE FROM entries WHERE rowid IN "
                        "(SELECT rowid FROM entries ORDER BY rowid LIMIT ?)",
                        (count - MAX_ENTRIES,),
                    )
        finally:
            connection.close()


class LayeredEntry:
    """A large entry of records by name (stat records, summary digests) kept as a base
    and a small layer of the records changed since, so that a run that changes a few
    records (a hook on one file) writes a few, not the whole base.

    The layer names its base by a token written with the base; a layer of another base
    (two runs wrote at once) is not read. A record, once true, stays true of its name's
    input (a stat, a content hash), so mixing runs' records costs reads, never a wrong
    answer. ``merged`` is what the caller reads; ``write`` keeps a new set of records."""

    #: Changed or removed records beyond which the base is written again.
    LAYER_LIMIT = 256

    def __init__(self, cache: ResultCache, key: str) -> None:
        self.cache, self.key = cache, key
        base = cache.get(key)
        layer = cache.get(self.layer_key)
        self.token = base.get("token") if base is not None else None
        self.base: dict[str, Any] = _records(base)
        self.merged: dict[str, Any] = dict(self.base)
        if layer is not None and self.token is not None and layer.get("base") == self.token:
            self.merged.update(_records(layer))
            for name in layer.get("removed", []) if isinstance(layer.get("removed"), list) else []:
                self.merged.pop(name, None)

    @property
    def layer_key(self) -> str:
        return self.key + ":layer"

    def write(self, records: Mapping[str, Any]) -> None:
        """Keep ``records`` (put into the cache; nothing when they are what was read)."""
        if records == self.merged:
            return
        changed = {name: value for name, value in records.items() if self.base.get(name) != value}
        removed = [name for name in self.base if name not in records]
        if self.token is not None and len(changed) + len(removed) <= self.LAYER_LIMIT:
            self.cache.put(
                self.layer_key, {"base": self.token, "records": changed, "removed": removed}
            )
        else:
            token = os.urandom(8).hex()
            self.cache.put(self.key, {"token": token, "records": dict(records)})
            self.cache.put(self.layer_key, {"base": token, "records": {}, "removed": []})
            self.token, self.base = token, dict(records)
        self.merged = dict(records)


def _records(entry: dict[str, Any] | None) -> dict[str, Any]:
    found = entry.get("records") if entry is not None else None
    return found if isinstance(found, dict) else {}


def valid_outcome_entry(entry: Any) -> bool:
    """Whether a cached outcome has the shape ddplint writes (anything else is re-linted)."""
    if not isinstance(entry, dict):
        return False
    lists = ("findings", "errors", "notices")
    if not all(isinstance(entry.get(name), list) for name in lists):
        return False
    if not all(isinstance(entry.get(name), (bool, int)) for name in ("parsed", "prefiltered")):
        return False
    if not isinstance(entry.get("facts", {}), dict):
        return False
    answers = entry.get("config_answers", {})
    if not isinstance(answers, dict) or not all(isinstance(a, bool) for a in answers.values()):
        return False
    if not all(isinstance(notice, str) for notice in entry["notices"]):
        return False
    return all(_valid_finding(f) for f in entry["findings"]) and all(
        _valid_error(e) for e in entry["errors"]
    )


_FINDING_FIELDS = {
    "rule": str,
    "name": str,
    "severity": str,
    "path": str,
    "line": int,
    "column": int,
    "end_line": int,
    "end_column": int,
    "message": str,
}
_EDIT_FIELDS = {"line": int, "column": int, "end_line": int, "end_column": int, "content": str}


def _has_fields(data: Any, fields: dict[str, type]) -> bool:
    return isinstance(data, dict) and all(
        isinstance(data.get(name), kind) and not isinstance(data.get(name), bool)
        if kind is int
        else isinstance(data.get(name), kind)
        for name, kind in fields.items()
    )


def _valid_finding(data: Any) -> bool:
    if not _has_fields(data, _FINDING_FIELDS):
        return False
    if data.get("key_path") is not None and not isinstance(data["key_path"], str):
        return False
    fix = data.get("fix")
    if fix is None:
        return True
    return (
        isinstance(fix, dict)
        and isinstance(fix.get("applicability"), str)
        and isinstance(fix.get("message", ""), str)
        and isinstance(fix.get("edits"), list)
        and all(_has_fields(edit, _EDIT_FIELDS) for edit in fix["edits"])
    )


def _valid_error(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("message"), str):
        return False
    return all(
        data.get(name) is None or (isinstance(data[name], int) and not isinstance(data[name], bool))
        for name in ("line", "column")
    )

"""Retrying SQLite statements that another process holds a lock against (the caches shared by processes).

A busy timeout covers most waits, but some statements (``PRAGMA journal_mode=WAL`` while another connection
opens the same file, schema changes) can fail at once with ``database is locked``; they are retried here with
exponential back-off (0.05 s doubling to 2 s, ``retries`` times: about 10 s with the default 8).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["HealingDatabase", "connect_or_rebuild", "connect_read_only", "connect_shared", "is_access_error", "is_full",
           "is_locked", "retry_locked", "sqlite_code"]

T = TypeVar("T")

#: SQLite's primary result codes (``sqlite3.Error.sqlite_errorcode & 0xFF``) that the checks below read.
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 3, 5, 6, 8
SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 10, 13, 14


def sqlite_code(err: BaseException) -> int | None:
    """SQLite's primary result code of ``err`` (``SQLITE_BUSY``, ``SQLITE_FULL`` ...), read from the error's
    ``sqlite_errorcode``; ``None`` for an error that carries none (one raised by Python code, not by SQLite), whose
    message is then all there is to read."""
    code = getattr(err, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _says(err: BaseException, codes: tuple[int, ...], words: tuple[str, ...]) -> bool:
    """Whether ``err`` is an ``OperationalError`` with one of ``codes`` or, for one without a code, whose message has
    one of ``words``."""
    if not isinstance(err, sqlite3.OperationalError):
        return False
    code = sqlite_code(err)
    if code is not None:
        return code in codes
    text = str(err).lower()
    return any(word in text for word in words)


def retry_locked(action: Callable[[], T], retries: int = 8) -> T:
    """``action()``, retried while SQLite answers ``locked`` / ``busy``; any other error, or the last one, is raised."""
    delay = 0.05
    for attempt in range(retries + 1):
        try:
            return action()
        except sqlite3.OperationalError as err:
            if not is_locked(err) or attempt == retries:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")  # pragma: no cover


def is_locked(err: BaseException) -> bool:
    """Whether ``err`` is SQLite's ``locked`` / ``busy`` (another process holds the file), not damage."""
    return _says(err, (SQLITE_BUSY, SQLITE_LOCKED), ("locked", "busy"))


def connect_shared(path, schema: str | Sequence[str], probe: str) -> sqlite3.Connection:
    """A connection to the cache database ``path`` shared by processes: autocommit (callers open their own
    transactions), a 60 s busy timeout, WAL mode, ``schema`` (one statement or several) created; ``probe`` (a SELECT)
    is run once so that a file that is not a database of this shape fails here (``sqlite3.DatabaseError``), not on
    first use."""
    conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
    try:
        # another process opening the same file at this moment can make these fail at once with "locked"
        retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        for statement in [schema] if isinstance(schema, str) else schema:
            retry_locked(lambda: conn.execute(statement))
        retry_locked(lambda: conn.execute(probe).fetchall())
    except BaseException:
        conn.close()
        raise
    return conn


#: What means "cannot be written or reached here", not a damaged file (never rebuilt): SQLite's codes, and the
#: messages of an error without one.
_ACCESS_CODES = (SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_IOERR, SQLITE_PERM)
_ACCESS_ERRORS = ("unable to open", "readonly", "read-only", "disk i/o", "permission")


def connect_or_rebuild(path, schema: str | Sequence[str], probe: str) -> sqlite3.Connection:
    """:func:`connect_shared`; a file that is not a usable database of this shape is moved aside
    (:func:`capeval.paths.quarantine_cache_file`) and a new one created, with one warning. ``locked`` / ``busy``, access
    errors (read-only, no permission, cannot open) and a damaged file that cannot be moved aside or replaced are
    raised, without a warning: the caller decides (wait, or keep to memory, saying so once)."""
    try:
        return connect_shared(path, schema, probe)
    except sqlite3.DatabaseError as err:
        if is_locked(err) or _says(err, _ACCESS_CODES, _ACCESS_ERRORS):
            raise
        from capeval.paths import CacheRebuiltWarning, quarantine_cache_file
        from capeval.validation import warn_at_caller

        target = quarantine_cache_file(Path(path), "", warn=False)
        if Path(path).exists():  # neither moved nor deleted: the caller keeps to memory (its one warning)
            raise sqlite3.OperationalError(f"unable to open a new database: {path} is not a usable SQLite database "
                                           f"({err}) and cannot be moved aside or deleted")
        conn = connect_shared(path, schema, probe)  # an error here is the caller's (memory, one warning)
        where = f"moved aside to {target}" if target is not None else "deleted"
        warn_at_caller(f"cache file {path} is not a usable SQLite database ({err}); {where} and rebuilt.",
                       CacheRebuiltWarning)
        return conn


def is_full(err: BaseException) -> bool:
    """Whether ``err`` says the disk (or the file's quota) is full: SQLite's ``database or disk is full``, ``ENOSPC``,
    ``EDQUOT``."""
    import errno

    if isinstance(err, OSError):
        return err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
    return _says(err, (SQLITE_FULL,), ("full",))


def is_access_error(err: BaseException) -> bool:
    """Whether ``err`` means "cannot be written or reached here" (read-only file or folder, no permission, cannot
    open, disk full), not a damaged file: such a file is never moved aside."""
    if isinstance(err, OSError) or is_full(err):
        return True
    return _says(err, _WRITE_CODES, _WRITE_ERRORS)


#: A file that cannot be written here (a ``disk I/O error`` is damage: moved aside): SQLite's codes, and the messages
#: of an error without one.
_WRITE_CODES = (SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM)
_WRITE_ERRORS = ("unable to open", "readonly", "read-only", "permission", "attempt to write")


def connect_read_only(path, probe: str) -> sqlite3.Connection:
    """A read-only connection to ``path`` (``mode=ro``; for a WAL database in a folder where its ``-shm`` file cannot
    be created, ``immutable=1``), ``probe`` run once; ``sqlite3.DatabaseError`` when neither works."""
    from urllib.request import pathname2url

    url = "file:" + pathname2url(str(Path(path).resolve()))
    last: sqlite3.DatabaseError | None = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"{url}?{query}", uri=True, timeout=60.0, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.DatabaseError as err:
            last = err
            continue
        try:
            retry_locked(lambda: conn.execute(probe).fetchall())
            return conn
        except sqlite3.DatabaseError as err:
            conn.close()
            last = err
    assert last is not None
    raise last


class HealingDatabase:
    """One SQLite cache file that heals itself: every statement goes through :meth:`read` or :meth:`write`, which
    never raise.

    Rules (for hostile or busy databases):

    * ``locked`` / ``busy`` is retried (:func:`retry_locked`); still locked after that, the statement is given up (a
      read is a miss, a write stays in the caller's memory), with one warning.
    * A damaged file (``malformed``, ``not a database``, ``disk I/O error``, a table of another shape), met when
      opening it or on any later statement, is moved aside (:func:`capeval.paths.quarantine_cache_file`: only the
      newest damaged copy is kept) and a new file started; the statement that met it counts as a miss (a read) or is
      done again in the new file (a write). When the file can be neither moved nor replaced, the run goes on without
      it.
    * A file that cannot be written (read-only file or folder, no permission, disk full): what it holds is still read
      (opened read-only when it must be); writes are refused (:meth:`write` returns ``False``: the caller keeps those
      entries in memory for this process).
    * Each of these says so in ONE warning per cache object naming the file and ``CAPEVAL_CACHE_DIR``
      (:class:`capeval.paths.CacheRebuiltWarning` for damage, :class:`capeval.paths.CacheUnwritableWarning` else).

    ``what`` names the cache for people (``"SPICE parse cache"``); ``entries`` what it holds (``"parses"``)."""

    def __init__(self, path, schema: str | Sequence[str], probe: str, what: str, entries: str = "entries") -> None:
        self.path, self.schema, self.probe, self.what, self.entries = Path(path), schema, probe, what, entries
        self.conn: sqlite3.Connection | None = None
        self.writable = False
        self._warned: set[str] = set()
        self._open()

    # -- opening -------------------------------------------------------------------------------------------------
    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn, self.writable = connect_shared(self.path, self.schema, self.probe), True
        except (OSError, sqlite3.DatabaseError) as err:
            if is_locked(err):
                self._give_up(err, "opening")
            elif is_access_error(err):
                self._read_only(err)
            else:
                self._rebuild(err)

    def _read_only(self, err: BaseException) -> None:
        """The file cannot be written: read it (when it exists and is usable), refuse writes."""
        self.close()
        self.writable = False
        if self.path.is_file():
            try:
                self.conn = connect_read_only(self.path, self.probe)
            except sqlite3.DatabaseError:
                self.conn = None
        kept = "reading what it holds and keeping" if self.conn is not None else "keeping"
        self._warn("unwritable", f"{self.what} {self.path} cannot be written ({_describe(err)}); {kept} new "
                                 f"{self.entries} in memory for this run (set CAPEVAL_CACHE_DIR to a writable folder "
                                 "with free space to keep them across runs).")

    def _rebuild(self, err: BaseException) -> None:
        """The file is damaged: move it aside and start a new one (else go on without a file)."""
        from capeval.paths import quarantine_cache_file

        self.close()
        self.writable = False
        target = quarantine_cache_file(self.path, "", warn=False)
        try:
            if self.path.exists():
                raise OSError(f"{self.path} could not be moved aside or deleted")
            self.conn, self.writable = connect_shared(self.path, self.schema, self.probe), True
        except (OSError, sqlite3.DatabaseError) as again:
            self.close()
            self._warn("damaged", f"{self.what} {self.path} is not a usable SQLite database ({_describe(err)}) and "
                                  f"cannot be replaced ({_describe(again)}); computing its {self.entries} in memory "
                                  "for this run (delete the file, or set CAPEVAL_CACHE_DIR to a writable folder).")
            return
        where = f"moved aside to {target.name}" if target is not None else "deleted"
        self._warn("damaged", f"{self.what} {self.path} is not a usable SQLite database ({_describe(err)}); {where} "
                              f"and rebuilt (its {self.entries} are computed again; CAPEVAL_CACHE_DIR sets the "
                              "cache folder).")

    def _give_up(self, err: BaseException, doing: str) -> None:
        self.close()
        self.writable = False
        self._warn("locked", f"{self.what} {self.path} stayed locked by another process while {doing} it "
                             f"({_describe(err)}); computing its {self.entries} in memory for this run (set "
                             "CAPEVAL_CACHE_DIR to give this run its own cache folder).")

    def _warn(self, kind: str, message: str) -> None:
        from capeval.paths import CacheRebuiltWarning, CacheUnwritableWarning
        from capeval.validation import warn_at_caller

        if kind not in self._warned:
            self._warned.add(kind)
            warn_at_caller(message, CacheRebuiltWarning if kind == "damaged" else CacheUnwritableWarning)

    # -- statements ----------------------------------------------------------------------------------------------
    def _failed(self, err: BaseException, doing: str) -> None:
        if isinstance(err, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
            raise err  # a wrong statement or a closed connection: a bug to see, not a damaged file to move aside
        if is_locked(err):
            self._give_up(err, doing)
        elif is_access_error(err):
            self._refuse_writes(err)
        else:
            self._rebuild(err)

    def _refuse_writes(self, err: BaseException) -> None:
        """Keep the connection for reading; refuse writes from now on."""
        self.writable = False
        self._warn("unwritable", f"{self.what} {self.path} cannot be written ({_describe(err)}); keeping new "
                                 f"{self.entries} in memory for this run (set CAPEVAL_CACHE_DIR to a writable folder "
                                 "with free space to keep them across runs).")

    def read(self, action: Callable[[sqlite3.Connection], T]) -> T | None:
        """``action(connection)``; ``None`` when there is no usable file or the statement failed (then healed as the
        class says: the caller treats ``None`` as a miss)."""
        if self.conn is None:
            return None
        conn = self.conn
        try:
            return retry_locked(lambda: action(conn))
        except sqlite3.DatabaseError as err:
            self._failed(err, "reading")
            return None

    def write(self, action: Callable[[sqlite3.Connection], object]) -> bool:
        """``action(connection)`` (its own transaction); ``False`` when it could not be written (no usable file, read
        only, disk full, locked): the caller keeps what it wrote in memory. A file found damaged is replaced and the
        write done once more in the new file."""
        for _ in range(2):
            if self.conn is None or not self.writable:
                return False
            conn = self.conn
            try:
                retry_locked(lambda: action(conn))
                return True
            except (OSError, sqlite3.DatabaseError) as err:
                self._failed(err, "writing")
        return False

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            self.conn = None


def _describe(err: BaseException) -> str:
    """``err`` in one short phrase: its message (the exception's name when it has none)."""
    text = " ".join(str(err).split())
    return text[:200] if text else type(err).__name__

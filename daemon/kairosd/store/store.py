"""The durable task store: one JSON file, ``scheduled_tasks.json``, written atomically.

Crash-recovery rules (what a user finds after a crash or a bad edit):

- **A temp file is left behind** (``scheduled_tasks.json.tmp-<pid>-<random>``,
  a crash in the middle of a write): removed at the next load, with a warning.
  The store itself is intact, because a write only becomes the store by an
  atomic rename after it is fully on disk.
- **One task is bad** (it does not validate: a bad cron or zone, a wrong type,
  an id of the wrong shape, a repeated id, a value nested deeper than
  :data:`~kairosd.core.bounds.MAX_STORED_DEPTH` or a number that is not finite
  such as ``1e999``, see :mod:`kairosd.core.jsonsafe`; or its dates would
  overflow over its life, see :mod:`kairosd.core.lifecheck`): it is set aside in
  ``scheduled_tasks.quarantine.json`` with the reason (:mod:`kairosd.store.quarantine`),
  durably, before anything else; the other tasks load and run, and the next
  save of the store leaves it out.
- **A time that records the past lies ahead of the clock** (``created_at``,
  ``last_fired_at`` or ``last_scheduled_for`` more than
  :data:`~kairosd.core.bounds.MAX_FUTURE_SKEW_S` ahead: a clock set back, or a
  bad edit): set to now, with a warning naming the task, so the task is not
  silenced until that time (see :func:`kairosd.core.lifecheck.clamp_future`).
- **The store is corrupt** (unreadable, not JSON, or not a store's shape at the
  top level): kairos refuses to start and never overwrites it. It copies the
  file aside as ``scheduled_tasks.json.corrupt-<UTC time>`` (once per distinct
  content: a second failed start with the same file reuses the copy), leaves
  the original in place and says what is wrong; fix or remove the file, then
  start kairosd again.
- **The store was written by a newer kairos** (``schema_version`` above this
  one's): kairos refuses to start and leaves the file alone; upgrade kairos.
- **Unknown fields** (top-level or per task, written by a newer kairos): kept
  as they are through load and save.
- **An older store** (Claude Code's own ``scheduled_tasks.json``, copied in) is
  upgraded in memory on load; the next save writes the current schema. Only
  Claude's own fields are read (as by ``kairos import``, see
  :mod:`kairosd.store.claude_compat`); an item that does not convert is set aside.

The store has a single writer: the process holding ``scheduled_tasks.lock``
(:mod:`kairosd.store.locking`); only that process may load with temp-file cleanup.

The one rule for tasks in memory: **a task is never changed in place.** :class:`~kairosd.core.models.Task`
is frozen (assigning a field raises), its ``meta`` is a read-only dict and so is the shared empty
dict of unknown fields (changing them raises ``TypeError``, :mod:`kairosd.core.readonly`); nested
values (a shell target's ``argv``, values inside ``meta``) are never changed in place either. A change
is a new task: ``task.model_copy(update=...)`` for values that are already valid (a time, a flag),
``Task.model_validate`` for new values from a request (as ``edit`` does). The load below relies on it:
loaded tasks share one "fields set", one empty ``meta``, one empty dict of unknown fields, one
inbox target per session and a key-sharing ``__dict__`` layout; and the JSON kept per task
(:meth:`JsonStore.fragment`) and the task book's change tracking are keyed by the task object,
so a new object is what tells them a task changed.

Must not import the server, the scheduler or the CLI.
"""

from __future__ import annotations

import glob
import json
import logging
import sys
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticSerializationError

from kairosd.core import bounds, jsonsafe, readonly
from kairosd.core.clock import Clock, local_zone_name
from kairosd.core.errors import StoreCorruptError, StoreError, StoreVersionError
from kairosd.core.lifecheck import clamp_future, life_problem
from kairosd.core.models import InboxTarget, Task
from kairosd.store import journal, migrations
from kairosd.store.migrations import SCHEMA_VERSION
from kairosd.store.quarantine import FILE_NAME as QUARANTINE_NAME
from kairosd.store.quarantine import Quarantine
from kairosd.system.atomic import remove_stale_temp_files, write_atomic

__all__ = ["JOURNAL_NAME", "SCHEMA_VERSION", "JsonStore", "Store", "StoreState", "encode_task", "read_folded"]

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700
JOURNAL_NAME = "scheduled_tasks.journal"
# A journal is folded into the store once it is as large as the store, and never much smaller
# than this: each add then costs one fsynced line plus, amortised, a share of one rewrite.
MIN_COMPACT_BYTES = 1 << 20


class StoreState(BaseModel):
    """Everything in the store. Unknown top-level fields are kept (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow")

    schema_version: int
    tasks: list[Task]

    @classmethod
    def empty(cls) -> StoreState:
        return cls(schema_version=SCHEMA_VERSION, tasks=[])

    @model_validator(mode="after")
    def _unique_ids(self) -> StoreState:
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"duplicate task id {task.id!r}")
            seen.add(task.id)
        return self


class Store(Protocol):
    def load(self) -> StoreState: ...

    def save(self, state: StoreState) -> None: ...


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid {loc}: {msg}{more}" if loc else f"invalid: {msg}{more}"


_FIELD_COUNT = len(Task.model_fields)


def _share_fields_set(task: Task, model: Task) -> None:
    """Let ``task`` share ``model``'s "fields set" when both set every field (pydantic keeps one per model).

    That set is 2 KB of a task's 3.7 KB in memory; tasks loaded from a store we
    wrote all set every field, so one set serves them all: about 20 MB less for
    10,000 tasks (measured again in BENCHMARKS.md, Session 5: loading 10,000 tasks takes 18 MB more
    without it). Safe because a task is frozen: pydantic adds to the set only on an
    assignment, which a frozen model refuses, and ``model_copy`` gives each copy its own.
    Leaves the task alone if pydantic's internals look different.
    """
    shared = getattr(model, "__pydantic_fields_set__", None)
    own = getattr(task, "__pydantic_fields_set__", None)
    # A fields set only ever holds field names, so a full-sized one is the full set.
    if own is not shared and type(own) is set and type(shared) is set and len(own) == len(shared) == _FIELD_COUNT:
        object.__setattr__(task, "__pydantic_fields_set__", shared)


def _share_no_extra(model: BaseModel) -> None:
    """Let ``model`` (a task or a target) hold the one read-only empty dict when it has no unknown fields.

    Most have none, and pydantic gives each its own empty dict of 64 bytes. The shared one
    refuses any change (:mod:`kairosd.core.readonly`), so a write into one task's
    ``model_extra`` raises instead of reaching every task. Leaves the model alone if
    pydantic's internals look different.
    """
    own = getattr(model, "__pydantic_extra__", None)
    if type(own) is dict and not own:
        object.__setattr__(model, "__pydantic_extra__", readonly.EMPTY)


def _key_sharing_model() -> Task:
    """A bare Task whose fields were set one by one, in field order, before any task is loaded.

    CPython gives a class's instances dicts that share one table of keys (about half the
    size of a dict of their own) when their attributes are set in the same order, and it
    learns that order from the first instance set that way; pydantic builds each task's dict
    on its own instead. Kept alive so the shared order stays known (see :func:`_lean_dict`).
    """
    model = object.__new__(Task)
    for name in Task.model_fields:
        object.__setattr__(model, name, None)
    return model


_KEY_ORDER = _key_sharing_model()


def _lean_dict(task: Task) -> None:
    """Give ``task`` the same fields in a dict that shares its keys with the other tasks'.

    Measured (issue 16): 232 bytes instead of 464 a task, 2.3 MB of RSS with 10,000 tasks,
    for ~3 ms per 1,000 tasks at load. The fields, their order and their values are the
    same objects, and the dict is the task's own (a frozen task is never assigned to). Leaves the task
    alone when the new dict is not smaller (CPython stopped sharing this class's keys).
    """
    fields = task.__dict__
    lean = object.__new__(Task).__dict__  # empty, on the class's shared keys
    for name, value in fields.items():
        lean[name] = value
    if sys.getsizeof(lean) < sys.getsizeof(fields):
        object.__setattr__(task, "__dict__", lean)


def slim(task: Task, like: Task) -> None:
    """Give ``task``, a changed copy of ``like`` (``model_copy``), the layout of a loaded task: ``like``'s
    fields set (see :func:`_share_fields_set`) and a dict on the shared keys (:func:`_lean_dict`).

    A copy gets a fields set and a plain dict of its own: after a catch-up pass had moved the anchor of
    10,000 tasks, they held 2.5 KB more each, 25 MB in all, until kairosd restarted.
    """
    _share_fields_set(task, like)
    _lean_dict(task)


# How every store this version writes begins (see _encode_store).
_OWN_HEAD = f'{{\n  "schema_version": {SCHEMA_VERSION},'.encode()
_TASKS_OPEN = b'  "tasks": ['
_TASKS_NONE = b'  "tasks": []\n}\n'
_TASKS_CLOSE = b"\n  ]\n}\n"


def encode_task(task: Task) -> str:
    """One task as compact JSON on one line (as the store writes it)."""
    try:
        return task.model_dump_json()
    except PydanticSerializationError:
        # A lone surrogate kept from an unknown field is not UTF-8; ASCII escapes still encode it.
        return json.dumps(task.model_dump(mode="json"), separators=(",", ":"))


def _encode_store(extra: dict[str, Any], tasks: list[str]) -> bytes:
    """The store file: indented at the top, one task per line (readable, diffable, fast to write)."""
    # What this code writes is, by definition, the schema this code reads.
    parts = [f'{{\n  "schema_version": {SCHEMA_VERSION}']
    for key, value in extra.items():
        parts.append(f",\n  {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}")
    if tasks:
        parts.append(',\n  "tasks": [\n    ')
        parts.append(",\n    ".join(tasks))
        parts.append("\n  ]\n}\n")
    else:
        parts.append(',\n  "tasks": []\n}\n')
    return "".join(parts).encode("utf-8")


class JsonStore:
    """The store as a JSON file at ``path``. ``clock`` stamps the names of corrupt copies.

    ``local_zone`` is the zone assumed for an imported Claude store's crons;
    by default the user's zone, looked up only if such a store is found.
    """

    def __init__(self, path: Path, clock: Clock, *, local_zone: str | None = None) -> None:
        self._path = path
        self._clock = clock
        self._local_zone = local_zone
        self._fragments: dict[str, tuple[Task, str]] = {}  # task id -> (the task saved, its JSON)
        self.journal = journal.Journal(path.with_name(JOURNAL_NAME))
        self._base = journal.base_of(b"")  # the store file's bytes as last read or written (see journal)
        self._compact_next = False  # the file is not what memory holds (beyond the journal): rewrite it
        self.quarantine = Quarantine(path.with_name(QUARANTINE_NAME), clock)
        self.set_aside = 0  # records the last load moved to the quarantine file

    @property
    def path(self) -> Path:
        return self._path

    def load(self) -> StoreState:
        """Read, upgrade and validate the store; an absent file is an empty store.

        Raises :class:`StoreCorruptError` or :class:`StoreVersionError`; in
        neither case is the file changed.
        """
        remove_stale_temp_files(self._path)
        self.journal.close()
        self._compact_next = False
        absent = False
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            data, absent = b"", True
        except OSError as exc:
            raise self._corrupt(f"cannot be read ({exc.strerror or exc})", None) from exc
        self._base = journal.base_of(data)
        rejected: list[tuple[Any, str]] = []
        if absent:
            return self._keep_viable(self._replay(StoreState.empty(), rejected), rejected)
        fast = self._load_own(data)
        if fast is not None:
            return self._keep_viable(self._replay(fast, rejected), rejected)
        self._compact_next = True  # not this version's layout: the next write puts it in it
        try:
            # Lenient: a record nested too deep or holding 1e999 parses, and is set aside below on its own.
            raw = jsonsafe.loads(data, bounds.MAX_STORED_DEPTH, lenient=True)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise self._corrupt(f"is not valid JSON ({exc})", data) from exc
        if not isinstance(raw, dict):
            raise self._corrupt(f"is not a JSON object (found {type(raw).__name__})", data)
        try:
            version = migrations.schema_version_of(raw)
        except ValueError as exc:
            raise self._corrupt(str(exc), data) from exc
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self._path} was written by a newer kairos (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade kairos. The file was left untouched."
            )
        try:
            upgraded = migrations.migrate(raw, self._zone(), rejected) if version < SCHEMA_VERSION else raw
        except (ValueError, OSError) as exc:
            raise self._corrupt(f"cannot be upgraded from schema {version}: {exc}", data) from exc
        items = upgraded.get("tasks", [])
        if not isinstance(items, list):
            raise self._corrupt(f"invalid tasks: expected a list, found {type(items).__name__}", data)
        tasks: list[Task] = []
        seen: set[str] = set()
        for item in items:
            odd = jsonsafe.odd_in(item)
            task = f"invalid: {odd.reason}" if odd is not None else _task_or_reason(item)
            if isinstance(task, str):
                rejected.append((item, task))
            elif task.id in seen:
                rejected.append((item, f"invalid id: a task with id {task.id!r} comes earlier in the store"))
            else:
                seen.add(task.id)
                tasks.append(task)
        extra = {k: v for k, v in upgraded.items() if k not in ("schema_version", "tasks")}
        for key, value in list(extra.items()):
            odd = jsonsafe.odd_in(value)
            if odd is not None:  # kept, it would be written back changed (1e999 as null) or not at all
                rejected.append(({key: extra.pop(key)}, f"top-level field {key!r}: {odd.reason}"))
        state = StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=tasks, **extra)
        if version < SCHEMA_VERSION:
            log.info("upgraded %s from schema %d to %d in memory", self._path, version, SCHEMA_VERSION)
        return self._keep_viable(self._replay(state, rejected), rejected)

    def _replay(self, state: StoreState, rejected: list[tuple[Any, str]]) -> StoreState:
        """``state`` with the journal's changes applied (see :mod:`kairosd.store.journal`).

        A task in the journal that does not validate goes to ``rejected``, as one in the store does.
        """
        try:
            commits, found = journal.read(self.journal.path, self._base)
        except journal.JournalCorrupt as exc:
            raise StoreCorruptError(
                f"{exc}; kairos will not overwrite it or the store. Fix or remove it, then start kairosd again "
                "(removing it loses the changes it holds since the store was last written)"
            ) from exc
        except OSError as exc:
            raise StoreError(f"cannot read {self.journal.path}: {exc.strerror or exc}; nothing was changed") from exc
        if not found:
            return state
        self._compact_next = True  # the next write folds the journal in (and drops a torn end)
        if not commits:
            return state
        tasks = {task.id: task for task in state.tasks}
        extra = dict(state.model_extra or {})
        for commit in commits:
            for task_id in commit.get("del", []):
                if isinstance(task_id, str):
                    tasks.pop(task_id, None)
            for item in commit.get("put", []):
                task = _task_or_reason(item)
                if isinstance(task, str):
                    rejected.append((item, task))
                else:
                    tasks[task.id] = task
            if "set" in commit:
                sets = {k: v for k, v in commit["set"].items() if k not in ("schema_version", "tasks")}
                extra = sets
        log.info("applied %d change(s) from %s", len(commits), self.journal.path)
        return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=list(tasks.values()), **extra)

    def _keep_viable(self, state: StoreState, rejected: list[tuple[Any, str]]) -> StoreState:
        """``state`` without the tasks that cannot live their life, which go (with ``rejected``) to quarantine.

        The quarantine file is written first: if it cannot be, the start is refused
        and the store is left as it is, so no record is ever lost.
        """
        if rejected:
            self._compact_next = True  # "the next save of the store leaves it out"
        kept = []
        now = self._clock.now()
        clamped = 0
        for task in state.tasks:
            problem = life_problem(task)
            if problem is None:
                task, change = clamp_future(task, now)
                if change is not None:
                    clamped += 1
                    log.warning("task %s: %s, so it is not silenced until then", task.id, change)
                kept.append(task)
            else:
                rejected.append((json.loads(encode_task(task)), problem))
        self.set_aside = len(rejected)
        if not rejected and not clamped:
            return state
        if not rejected:
            return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=kept, **(state.model_extra or {}))
        try:
            added = self.quarantine.add(rejected)
        except (OSError, ValueError, RecursionError) as exc:
            raise StoreError(
                f"{self._path} has {len(rejected)} task(s) kairos cannot use, and they cannot be set aside in "
                f"{self.quarantine.path} ({getattr(exc, 'strerror', None) or exc}); the store was left untouched"
            ) from exc
        for record, reason in rejected:
            task_id = record.get("id") if isinstance(record, dict) else None
            log.warning("set aside task %s: %s", ascii(task_id)[:40], reason)
        log.warning(
            "%d task(s) of %s could not be used and were set aside in %s (%d new); the others run",
            len(rejected), self._path, self.quarantine.path, added,
        )  # fmt: skip
        extra = state.model_extra or {}
        return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=kept, **extra)

    def _load_own(self, data: bytes) -> StoreState | None:
        """A store in the exact layout this version writes, read line by line; else None.

        Each task line is validated by pydantic-core straight from its bytes, and
        tasks share one "fields set" (see :func:`_share_fields_set`) as they come:
        for 10,000 tasks this halves the load time and keeps the peak memory
        ~25 MB lower than building the whole JSON tree first. Anything unusual
        (another layout or schema, an invalid task, a duplicate id, a lone
        surrogate) returns None and takes the careful path, which gives the
        precise error.
        """
        at = data.find(b"\n" + _TASKS_OPEN)
        head = data[:at].split(b"\n") if at >= 0 else []
        if len(head) < 2 or head[0] != b"{" or head[1] != _OWN_HEAD[2:]:
            return None
        extra: dict[str, Any] = {}
        try:
            for line in head[2:]:
                if not line.endswith(b","):
                    return None
                item = jsonsafe.loads(b"{" + line[:-1] + b"}", bounds.MAX_STORED_DEPTH - 1)
                if not isinstance(item, dict) or set(item) & {"schema_version", "tasks"}:
                    return None
                extra.update(item)
            rest = at + 1
            if data.startswith(_TASKS_NONE, rest) and len(data) == rest + len(_TASKS_NONE):
                return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=[], **extra)
            pos, end = rest + len(_TASKS_OPEN) + 1, len(data) - len(_TASKS_CLOSE)
            if data[rest:pos] != _TASKS_OPEN + b"\n" or not data.endswith(_TASKS_CLOSE) or pos > end:
                return None
            validate = Task.__pydantic_validator__.validate_json
            tasks: list[Task] = []
            seen: set[str] = set()
            targets: dict[str, InboxTarget] = {}
            # One line at a time, each slice freed before the next task is made: splitting the file
            # into all its lines first left their freed memory scattered among the tasks. For 10,000
            # tasks: 8.6 against 13.3 MB of RSS right after the load, 53.8 against 55.2 MB once
            # kairosd answers (BENCHMARKS.md, Session 5).
            while pos <= end:
                stop = data.find(b"\n", pos, end)
                last = stop < 0
                stop = end if last else stop
                first = pos + 4 if data.startswith(b"    ", pos, stop) else pos
                task = validate(data[first : stop if last or not data.endswith(b",", first, stop) else stop - 1])
                pos = stop + 1
                if task.id in seen:
                    return None
                seen.add(task.id)
                tasks.append(task)
                _share_fields_set(task, tasks[0])
                _share_no_extra(task)
                target = task.target
                if type(target) is InboxTarget and not target.model_extra:
                    # Frozen, so equal inbox targets can be one object (400 bytes a task).
                    shared = targets.get(target.session)
                    if shared is None:
                        _share_no_extra(target)
                        shared = targets[target.session] = target
                    task.__dict__["target"] = shared
                _lean_dict(task)
        except (ValidationError, ValueError, OSError, IndexError, RecursionError):
            return None
        return StoreState.model_construct(schema_version=SCHEMA_VERSION, tasks=tasks, **extra)

    def save(self, state: StoreState) -> None:
        """Write the whole store atomically (0600), creating its folder (0700) if needed.

        Raises :class:`StoreError` (naming the file and the reason) when it
        cannot be written; the file on disk is then the previous one, intact.

        Each task is encoded once and its text reused by later saves for as long
        as the same (unchanged) object is saved: tasks are replaced, never
        changed in place, so a store of 10,000 tasks costs one task's encoding
        plus a join per save, not 10,000 encodings.
        """
        fragments: dict[str, tuple[Task, str]] = {}
        cache = self._fragments
        for task in state.tasks:
            cached = cache.get(task.id)
            if cached is None or cached[0] is not task:
                cached = (task, encode_task(task))
            fragments[task.id] = cached
        self._fragments = fragments
        data = _encode_store(state.model_extra or {}, [text for _, text in fragments.values()])
        try:
            self._path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            write_atomic(self._path, data, mode=FILE_MODE)
        except OSError as exc:
            raise StoreError(
                f"cannot write {self._path}: {exc.strerror or exc}; the previous version of the file is intact"
            ) from exc
        # The rename above is the commit point: the journal's changes are in the file from here on.
        self._base = journal.base_of(data)
        self._compact_next = False
        self.journal.discard()

    def fragment(self, task: Task) -> str:
        """``task`` as the store writes it, from the store's cache, which keeps it (for listings too).

        Called on the loop thread while a write may run in another: a lookup and an insertion of one
        entry are each atomic, and an entry lost to a write that replaces the cache is only encoded again.
        """
        cached = self._fragments.get(task.id)
        if cached is None or cached[0] is not task:
            cached = self._fragments[task.id] = (task, encode_task(task))
        return cached[1]

    def journaled(self) -> bool:
        """Whether the file alone is not what the store holds (a journal, or a load that must be written)."""
        return self._compact_next or self.journal.size > 0

    def wants_compaction(self) -> bool:
        """Whether the next write should be a whole :meth:`save` rather than an :meth:`append`."""
        return self._compact_next or self.journal.size > max(MIN_COMPACT_BYTES, self._base[1])

    def append(self, dels: list[str], puts: list[Task], fields: dict[str, Any] | None) -> None:
        """Make one commit durable by appending it to the journal: ids removed, tasks put, top-level fields.

        Raises :class:`StoreError` as :meth:`save` does; the journal is then as it was, and the next
        write is a whole :meth:`save`.
        """
        cache = self._fragments
        for task_id in dels:
            cache.pop(task_id, None)
        texts = []
        for task in puts:
            cached = cache.get(task.id)
            if cached is None or cached[0] is not task:
                cached = cache[task.id] = (task, encode_task(task))
            texts.append(cached[1])
        line = journal.record(dels, texts, fields)
        try:
            self._path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            self.journal.append(line, self._base)
        except OSError as exc:
            self._compact_next = True
            raise StoreError(
                f"cannot write {self._path} (its journal, {self.journal.path.name}): {exc.strerror or exc}; "
                "the store and its journal are intact"
            ) from exc

    def _zone(self) -> str:
        if self._local_zone is None:
            self._local_zone = local_zone_name()
        return self._local_zone

    def _corrupt(self, what: str, data: bytes | None) -> StoreCorruptError:
        copy, copy_error = self._copy_aside(data)
        where = (
            f"the copy is at {copy}"
            if copy is not None
            else f"it could not be copied aside ({copy_error}); back it up first"
        )
        message = (
            f"{self._path} {what}. kairos will not overwrite it; fix or remove it, then start kairosd again ({where})."
        )
        # Not logged here: the caller reports it (kairosd prints it once, as its one line on stderr).
        return StoreCorruptError(message)

    def _copy_aside(self, data: bytes | None) -> tuple[Path | None, str]:
        try:
            payload = self._path.read_bytes() if data is None else data
        except OSError as exc:
            return None, exc.strerror or str(exc)
        same = self._same_copy(payload)
        if same is not None:
            return same, ""  # every failed start with this content would otherwise make one more copy
        stamp = self._clock.now().strftime("%Y%m%dT%H%M%SZ")
        base = f"{self._path.name}.corrupt-{stamp}"
        target = self._path.with_name(base)
        n = 1
        while target.exists():  # two failures in one second must not overwrite the first copy
            target = self._path.with_name(f"{base}-{n}")
            n += 1
        try:
            write_atomic(target, payload, mode=FILE_MODE)
        except OSError as exc:
            return None, exc.strerror or str(exc)
        return target, ""

    def _same_copy(self, payload: bytes) -> Path | None:
        """An earlier corrupt copy holding exactly ``payload``, if there is one."""
        try:
            candidates = sorted(self._path.parent.glob(f"{glob.escape(self._path.name)}.corrupt-*"))
        except OSError:
            return None
        for candidate in candidates:
            try:
                if candidate.stat().st_size == len(payload) and candidate.read_bytes() == payload:
                    return candidate
            except OSError:
                continue
        return None


def _task_or_reason(item: Any) -> Task | str:
    """``item`` as a task, or why it is not one (any failure: a record must not stop the load)."""
    try:
        return Task.model_validate(item)
    except ValidationError as exc:
        return _describe(exc)
    except OSError as exc:
        # A zone name is looked up as a file: a 300-character one fails with ENAMETOOLONG, not ValueError.
        return f"has a value kairos cannot use ({exc.strerror or exc})"
    except Exception as exc:  # e.g. OverflowError from a time in year 1 with an offset
        return f"has a value kairos cannot use ({type(exc).__name__}: {exc})"


def read_folded(path: Path) -> StoreState:
    """The store at ``path`` with its journal folded in, validated, changing nothing (no lock needed).

    For tests and tools that look at the store from outside kairosd: since issue 28 the file
    alone lags the last changes until its journal is compacted into it.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    raw: dict[str, Any] = json.loads(data) if data else {"schema_version": SCHEMA_VERSION, "tasks": []}
    commits, _ = journal.read(path.with_name(JOURNAL_NAME), journal.base_of(data))
    tasks = {item["id"]: item for item in raw["tasks"]}
    for commit in commits:
        for task_id in commit.get("del", []):
            tasks.pop(task_id, None)
        for item in commit.get("put", []):
            tasks[item["id"]] = item
        if "set" in commit:
            raw = {"schema_version": raw["schema_version"], **commit["set"]}
    return StoreState.model_validate({**raw, "tasks": list(tasks.values())})

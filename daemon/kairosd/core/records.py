"""Records kairosd keeps besides tasks: runs, missed fires and inbox items.

Pure pydantic models (no I/O). Unknown fields are kept so older daemons do not
drop what newer ones wrote.

Must not import the store, the server or anything with I/O.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from enum import StrEnum
from json.encoder import encode_basestring_ascii as _ascii_string
from operator import is_, itemgetter
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticSerializationError

from kairosd.core.models import set_extra, set_fields_set, set_private, utc_fields

_Record = TypeVar("_Record", bound=BaseModel)


def trusted(cls: type[_Record], **values: Any) -> _Record:
    """A ``cls`` record of ``values`` that are already what validation would make of them (UTC times,
    the fields' own types), built without validating them; the other fields get their defaults.

    For records the scheduler makes by the thousand from validated tasks (a catch-up pass over 10,000
    tasks makes 30,000): validating them was a third of the pass, and pydantic's ``model_construct``
    is slower still (it inspects each default factory's signature at every call). Every field counts
    as set, as for a record read back from its JSON, and those records share one fields set (safe:
    pydantic only ever adds an assigned field's name to it, and ``model_copy`` gives copies their own).
    """
    template, factories, every, required, shared_set = _LAYOUTS.get(cls) or _layout(cls)
    if not values.keys() <= every or not required <= values.keys():
        _check_fields(cls, values.keys(), every, required)
    data = template.copy()  # every field, in the fields' order (the order their JSON has)
    data.update(values)
    for name, factory in factories:
        if name not in values:
            data[name] = factory()
    return record_of(cls, data, shared_set)


def revised(record: _Record, **changes: Any) -> _Record:
    """What ``record.model_copy(update=changes)`` gives (``changes`` of its own fields, already what
    validation would make of them), in a third of its time: its values and unknown fields copied, the
    changed fields counted as set.

    For the later states of runs the dispatcher records by the thousand (a herd's outcomes: 10,000
    after a long stop), each a copy of the run with its outcome.
    """
    cls = record.__class__
    layout = _LAYOUTS.get(cls) or _layout(cls)
    every = layout[2]
    if not changes.keys() <= every:
        _check_fields(cls, changes.keys(), every, frozenset())
    data = record.__dict__.copy()
    data.update(changes)
    kept = record.__pydantic_fields_set__
    # A trusted record (the scheduler's) shares its fields set, of every field, with the other trusted
    # records: so does its copy. Another copy gets its own.
    copy = record_of(cls, data, kept if kept is layout[4] else kept | changes.keys())
    extra = record.__pydantic_extra__
    if extra:
        object.__setattr__(copy, "__pydantic_extra__", dict(extra))
    return copy


class Prototype(Generic[_Record]):
    """Many :func:`trusted` records of ``cls`` that differ only in their ``own`` fields (and in the fields
    a default factory makes, such as their ids): every other field is ``shared`` or keeps its default.
    What they share is checked and laid out once; each :meth:`make` is then a copy of that layout with
    the record's own values, and :meth:`line` its JSON line from the shared JSON, encoded once.

    A catch-up pass makes one missed record and one run per task whose every time, reason and target
    is that of thousands of other tasks: built from their prototype, a record costs a dict copy. The
    layout and the JSON are made at the second record: a prototype of one record (a task whose target
    no other task shares) costs what trusted() and json_line do.
    """

    __slots__ = (
        "_base", "_cls", "_factories", "_fields_set", "_lines", "_own", "_own_names", "_required", "_shared", "_uses",
    )  # fmt: skip

    def __init__(self, cls: type[_Record], own: tuple[str, ...], **shared: Any) -> None:
        # Nothing checked or laid out yet: the first record is made (and checked) by trusted().
        self._cls, self._own_names, self._shared = cls, own, shared
        self._base: dict[str, Any] | None = None  # the layout, made at the second record (see _lay_out)
        self._lines: _Lines | None = None
        self._uses = 0  # records made before the layout (one at most)

    def make(self, **values: Any) -> _Record:
        """A ``cls`` record of the shared values and ``values``, its own (the same rules as :func:`trusted`)."""
        base = self._base
        if base is None:
            if not self._uses:
                self._uses = 1
                return trusted(self._cls, **self._shared, **values)
            base = self._lay_out()
        if not values.keys() <= self._own or not self._required <= values.keys():
            _check_fields(self._cls, values.keys(), self._own, self._required, "own field")
        data = base.copy()
        data.update(values)
        for name, factory in self._factories:
            if name not in values:
                data[name] = factory()
        return record_of(self._cls, data, self._fields_set)

    def line(self, record: _Record) -> bytes:
        """:func:`json_line` of a record this prototype made, from the JSON of what its records share
        (encoded once) and the record's own strings: 2-3 µs rather than 4-6.

        Only when the record still has the shared values, no unknown fields, and its own values are
        strings or None; anything else is encoded by json_line.
        """
        lines, data = self._lines, record.__dict__
        if lines is None or record.__pydantic_extra__ or not all(map(is_, lines.shared_of(data), lines.shared)):
            return json_line(record)
        return lines.fill(data) or json_line(record)

    def made(self, **values: Any) -> tuple[_Record, bytes]:
        """:meth:`make` and the new record's :meth:`line`, which nothing can have changed yet."""
        record = self.make(**values)
        lines = self._lines
        return record, (lines.fill(record.__dict__) if lines is not None else None) or json_line(record)

    def made_as(self, names: tuple[str, ...], texts: tuple[str, ...], **values: Any) -> tuple[_Record, bytes]:
        """:meth:`made` for a caller that has each own value's JSON text already: ``texts``, those of the
        own fields ``names`` (every own field, in the fields' order: else this is :meth:`made`), each the
        :func:`own_text` of its value in ``values``. A record's line then costs one ``%``.

        For the records of one task made together (a missed record and two runs share its id and name,
        escaped once). ``values`` gives the ids too (no default factory makes them here).
        """
        lines, base = self._lines, self._base
        if lines is None or base is None or not lines.own or lines.own != names:
            return self.made(**values)  # the first record of a prototype, or one of other own fields
        if values.keys() != self._own:
            _check_fields(self._cls, values.keys(), self._own, self._own, "own field")
        data = base.copy()
        data.update(values)
        return record_of(self._cls, data, self._fields_set), (lines.text % texts).encode("ascii")

    def parts(self, names: tuple[str, ...]) -> tuple[type[_Record], dict[str, Any], set[str], tuple[str, ...]] | None:
        """What :meth:`made_as` makes each record of, for a caller that makes many at once in a loop of its
        own: the record class, the layout (a copy of it, with the own values set, is the record's data:
        :func:`record_of`), the fields set its records share and the line cut at each own value (a record's
        line is these pieces joined with its own values' texts between them, in the order of ``names``: a
        third of the time of a ``%`` of the whole line, 20,000 lines in a catch-up pass). None until the
        prototype is laid out (its second record), or when ``names`` are not every own field in the fields'
        order (use :meth:`made`).

        A record so made must have exactly the own fields ``names`` set in the copy, and texts that are
        the :func:`own_text` of its values, as made_as would be given (the caller's to keep in step).
        """
        lines, base = self._lines, self._base
        if lines is None or base is None or not lines.own or lines.own != names:
            return None
        return self._cls, base, self._fields_set, lines.pieces

    def _lay_out(self) -> dict[str, Any]:
        cls, shared = self._cls, self._shared
        template, factories, every, required, shared_set = _LAYOUTS.get(cls) or _layout(cls)
        names = shared.keys() | set(self._own_names)
        if not names <= every or not required <= names:
            _check_fields(cls, names, every, required)
        self._factories = tuple((name, factory) for name, factory in factories if name not in shared)
        self._own = frozenset(self._own_names).union(name for name, _ in self._factories)
        self._required, self._fields_set = required & self._own, shared_set
        base = self._base = {**template, **shared}  # the fields' order: the order their JSON has
        self._lines = _Lines(self, base)
        return base


# The fields a run's settled state sets (see Settled), and those a run settled by the scheduler leaves null.
_settled_of = itemgetter("started_at", "finished_at", "outcome", "reason")
_unsettled_of = itemgetter("output_path", "exit_code", "awaiting")
_NONE4, _NONE3 = (None,) * 4, (None,) * 3


class Settled:
    """The JSON lines of runs settled by :func:`revised` (when they started and finished, the outcome, the
    reason), made from the line of the run in flight rather than encoded again: a herd's 10,000 outcomes.

    A run in flight has nulls for those four fields, and its settled state differs from it only there:
    its line is the in-flight line with the four nulls replaced by the settled values' JSON. That JSON is
    cut once per set of settled values (the runs of one batch share them: the same times, outcome and
    reason objects) from the settled record's own line, encoded by :func:`json_line`, and used only if
    that line is exactly what the splice gives. ``,"started_at":null`` cannot be inside a JSON string
    (a quote there is escaped), so its first place is the field's.
    """

    __slots__ = ("_segments",)

    _NULLS = b',"started_at":null,"finished_at":null,"outcome":null,"reason":null,"target":'

    def __init__(self) -> None:
        # id()s of the settled values -> (the values, kept so that no other object takes their id; the JSON)
        self._segments: dict[tuple[int, ...], tuple[tuple[Any, ...], bytes | None]] = {}

    def line(self, before: Run, before_line: bytes | None, after: Run) -> bytes:
        """``after``'s line (:func:`json_line`'s bytes). ``after`` is ``revised(before, ...)`` with no other
        field changed than the settled ones (and output_path, exit_code and awaiting, which must then be
        null in both for the splice); ``before_line`` is None or ``before``'s line."""
        if before_line is None or after.__pydantic_extra__:
            return json_line(after)
        data, was = after.__dict__, before.__dict__
        if _settled_of(was) != _NONE4 or _unsettled_of(data) != _NONE3 or _unsettled_of(was) != _NONE3:
            return json_line(after)
        start = before_line.find(self._NULLS)
        if start < 0:
            return json_line(after)
        values = _settled_of(data)
        key = tuple(map(id, values))
        known = self._segments.get(key)
        if known is None:
            line = json_line(after)
            end = len(before_line) - start - len(self._NULLS)  # what follows the nulls
            segment = line[start : len(line) - end]
            fits = line.startswith(before_line[:start]) and line.endswith(before_line[len(before_line) - end :])
            fits = fits and segment.startswith(b',"started_at":') and segment.endswith(b',"target":')
            self._segments[key] = (values, segment if fits else None)
            return line
        spliced = known[1]
        if spliced is None:
            return json_line(after)
        return b"".join((before_line[:start], spliced, before_line[start + len(self._NULLS) :]))


class _Lines:
    """The JSON line of a prototype's records with a ``%s`` for each own value (empty: not possible), and
    the shared values it holds (see :meth:`Prototype.line`)."""

    __slots__ = ("own", "own_of", "pieces", "shared", "shared_of", "text")

    def __init__(self, prototype: Prototype[Any], base: dict[str, Any]) -> None:
        own = tuple(name for name in base if name in prototype._own)  # in the fields' order
        shared = tuple(name for name in base if name not in prototype._own)
        self.own_of, self.shared_of = _values_of(own), _values_of(shared)
        self.shared = tuple(base[name] for name in shared)
        # The line cut at each own value (see _template), and the same as a %-template.
        self.pieces = _template(prototype, own)
        self.text = "%s".join(piece.replace("%", "%%") for piece in self.pieces)
        # The own fields whose texts a line takes (see made_as); none when the template cannot make lines.
        self.own = own if self.text and "\\u007f" not in self.text else ()

    def fill(self, data: dict[str, Any]) -> bytes | None:
        """The line of a record with the shared values and ``data``'s own ones (None: not possible)."""
        if not self.text:
            return None
        own = []
        for value in self.own_of(data):
            if value.__class__ is str:
                own.append(_ascii_string(value))
            elif value is None:
                own.append("null")
            else:
                return None
        text = self.text % tuple(own)
        # pydantic leaves DEL as it is where json escapes it: such a line (or one that merely looks like
        # it, with an escaped backslash before "u007f") is encoded whole.
        return None if "\\u007f" in text else text.encode("ascii")


def own_text(value: str | None) -> str | None:
    """``value``'s JSON text in a record's line (see :meth:`Prototype.made_as`): what ``json_line`` writes
    for it; None when that cannot be told apart from the line (a DEL, which pydantic leaves as it is)."""
    if value is None:
        return "null"
    text = _ascii_string(value)
    return None if "\\u007f" in text else text


def _template(prototype: Prototype[Any], own: tuple[str, ...]) -> tuple[str, ...]:
    """The JSON line of a record of ``prototype`` whose ``own`` values are markers, cut at each marker: the
    text before the first, between each two and after the last (one more piece than ``own``); empty when a
    shared value is encoded its own way (a lone surrogate) or holds a marker."""
    markers = {name: f"\x00{index}\x01" for index, name in enumerate(own)}
    try:
        # Without the warnings of an own field that is not text (it then never gets a marker's value).
        record = prototype.make(**markers)
        line = record.__pydantic_serializer__.to_json(record, ensure_ascii=True, warnings=False)
    except PydanticSerializationError:
        return ()
    rest = line.decode("ascii")
    parts: list[str] = []
    for name in own:
        encoded = _ascii_string(markers[name])
        before, found, rest = rest.partition(encoded)
        if not found or encoded in rest or encoded in before:
            return ()
        parts.append(before)
    parts.append(rest)
    return tuple(parts)


def _values_of(names: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A function giving the values of ``names`` in a dict, as a tuple (``itemgetter`` gives one name's
    value alone)."""
    if len(names) == 1:
        name = names[0]
        return lambda data: (data[name],)
    return itemgetter(*names) if names else lambda data: ()


def _check_fields(
    cls: type[BaseModel],
    given: AbstractSet[str],
    every: AbstractSet[str],
    required: AbstractSet[str],
    noun: str = "field",
) -> None:
    unknown, missing = sorted(given - every), sorted(required - given)
    if unknown or missing:
        raise TypeError(
            f"{cls.__name__}: " + (f"no {noun} {unknown[0]!r}" if unknown else f"{missing[0]!r} is required")
        )


# BaseModel's slots (and its __dict__) are set through their descriptors (see models.set_fields_set):
# what object.__setattr__ finds and calls for each name, in half the time (a herd or a catch-up pass
# makes 30,000 records, four slots each).
_SET_DICT = vars(BaseModel)["__dict__"].__set__


def record_of(cls: type[_Record], data: dict[str, Any], fields_set: set[str]) -> _Record:
    """A ``cls`` record of ``data`` (every field, in the fields' order), ``fields_set`` its fields set: a
    copy of :meth:`Prototype.parts`' layout with the record's own values, nothing checked."""
    record = object.__new__(cls)  # BaseModel has no __new__ of its own
    _SET_DICT(record, data)
    set_fields_set(record, fields_set)
    set_extra(record, {})
    set_private(record, None)
    return record


def json_line(record: BaseModel) -> bytes:
    """``record`` as one line of a JSON-lines log: compact JSON in ASCII, no newline; the bytes
    ``json.dumps(record.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=True)`` gives, in
    a third of its time (pydantic's own encoder, with no dict in between)."""
    try:
        return record.__pydantic_serializer__.to_json(record, ensure_ascii=True)
    except PydanticSerializationError:
        # A lone surrogate kept from an unknown field: json's ASCII escapes still encode it.
        return json.dumps(record.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=True).encode("ascii")


_Layout = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], frozenset[str], frozenset[str], set[str]]
# Per record class: every field with its plain default (None for the others), the default factories,
# every field's name, the required ones, the fields set its trusted records share.
_LAYOUTS: dict[type[BaseModel], _Layout] = {}


def _layout(cls: type[BaseModel]) -> _Layout:
    fields = cls.model_fields
    template = {name: None if f.is_required() or f.default_factory else f.default for name, f in fields.items()}
    # The records' factories take no argument (none asks for the validated data).
    factories = tuple(
        (name, cast(Callable[[], Any], f.default_factory)) for name, f in fields.items() if f.default_factory
    )
    required = frozenset(name for name, f in fields.items() if f.is_required())
    layout = _LAYOUTS[cls] = (template, factories, frozenset(fields), required, set(fields))
    return layout


class Outcome(StrEnum):
    DELIVERED = "delivered"  # the target confirmed it
    QUEUED = "queued"  # waiting behind a previous run (overlap=queue), or held by a target (see Run.awaiting)
    FAILED = "failed"  # the target refused, errored, timed out, or the daemon died first
    SKIPPED = "skipped"  # deliberately not run (overlap=skip, paused, ...); reason says why
    MISSED = "missed"  # its time passed while kairos could not fire it


# Random 12-hex-digit ids, drawn from the OS 256 at a time: a catch-up pass gives ids to 30,000 records, and
# one draw each (secrets.token_hex) was a microsecond a record. Each id is popped once (atomic under the GIL);
# a forked child starts with none, so it never reuses its parent's.
_HEX_IDS: list[str] = []
os.register_at_fork(after_in_child=_HEX_IDS.clear)


def _random_hex12() -> str:
    try:
        return _HEX_IDS.pop()
    except IndexError:
        block = secrets.token_hex(6 * 256)
        _HEX_IDS.extend([block[i : i + 12] for i in range(0, len(block), 12)])
        return _random_hex12()


def new_run_id() -> str:
    return "r" + _random_hex12()


def new_run_ids(count: int) -> list[str]:
    """``count`` run ids (what ``count`` calls of :func:`new_run_id` give), from one draw of the OS: a
    catch-up pass asks for its chunk's at once."""
    block = secrets.token_hex(6 * count)
    return ["r" + block[i : i + 12] for i in range(0, 12 * count, 12)]


def new_missed_id() -> str:
    return "m" + _random_hex12()


def missed_id(task_id: str, first_missed: datetime) -> str:
    """The id of the missed record of ``task_id``'s misses since ``first_missed``: the same whenever the
    same misses are decided again (after a kill between the pass's writes, or a refused run ledger), so
    the missed ledger replaces the record instead of holding it twice."""
    return missed_ids(first_missed)(task_id)


def missed_ids(first_missed: datetime) -> Callable[[str], str]:
    """:func:`missed_id` of ``first_missed`` as a function of the task id alone: the tasks of a catch-up
    group share their first missed slot, whose part of the key is then encoded once."""
    suffix = f"\0{_utc_text(first_missed)}".encode()
    # Each id's hash starts as a copy of an empty one: blake2b's constructor reads its keyword arguments
    # at every call (1.1 against 0.7 us an id, 10,000 ids a catch-up pass). The same digest either way.
    fresh = _EMPTY_BLAKE2B_6.copy

    def of(task_id: str) -> str:
        digest = fresh()
        digest.update(task_id.encode())
        digest.update(suffix)
        return "m" + digest.hexdigest()

    return of


_EMPTY_BLAKE2B_6 = hashlib.blake2b(digest_size=6)


@functools.lru_cache(maxsize=256)
def _utc_text(when: datetime) -> str:
    # Equal instants give one text, whatever their zone. The tasks of one schedule share their first missed
    # slot: after a long stop 10,000 missed ids asked for the same few times, at 2 us each (most of an id).
    return when.astimezone(UTC).isoformat()


class Run(BaseModel):
    """One fire of a task. ``outcome`` is None while the target has not answered yet."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    run_id: str = Field(default_factory=new_run_id)
    task_id: str
    task_name: str | None = None
    scheduled_for: datetime
    planned_for: datetime
    dispatched_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    reason: str | None = None
    target: dict[str, Any] = Field(default_factory=dict)
    output_path: str | None = None
    exit_code: int | None = None
    late_by_s: float = 0.0
    catch_up: bool = False
    manual: bool = False  # fired by `kairos run`, not by the schedule
    # Set on a queued run that a target holds durably and settles later (the target's kind, e.g.
    # "session": a pending item waiting for a live session's next turn). Such a run survives a
    # restart as queued; its target records the outcome.
    awaiting: str | None = None

    _check = utc_fields("scheduled_for", "planned_for", "dispatched_at", "started_at", "finished_at")


class MissedRecord(BaseModel):
    """Fires that did not happen on time, as the user is told about them.

    ``count`` > 1 summarises a run of misses of one task (a minutely task after a
    week away is one record, not ten thousand).
    """

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(default_factory=new_missed_id)
    task_id: str
    task_name: str | None = None
    prompt: str
    schedule: str  # the cron expression or the exact time
    scheduled_for: datetime  # the most recent missed slot
    first_scheduled_for: datetime | None = None  # the oldest, when count > 1
    count: int = 1
    detected_at: datetime
    reason: str  # "daemon was not running", "clock jumped (suspend?)", ...
    action: str  # "surfaced", "recorded", "caught up", ...

    _check = utc_fields("scheduled_for", "first_scheduled_for", "detected_at")


class InboxItem(BaseModel):
    """A prompt delivered to a session's inbox. ``id`` is the run id (idempotency key)."""

    # defer_build: built at the first record read or written, not while kairosd starts (see core.models).
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str
    session: str
    task_id: str
    task_name: str | None = None
    prompt: str
    scheduled_for: datetime
    delivered_at: datetime
    late_by_s: float = 0.0
    catch_up: bool = False
    acked_at: datetime | None = None

    _check = utc_fields("scheduled_for", "delivered_at", "acked_at")

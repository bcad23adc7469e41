"""The user config file: ``<config dir>/config.toml`` (TOML, every section optional).

The config dir is ``Paths.config_dir``: ``$KAIROS_HOME/config`` or
``$XDG_CONFIG_HOME/kairos`` (``~/.config/kairos``). No file means the defaults
below. Every key is checked: an unknown key, a wrong type or a value out of
range is an error that names the file and the key (``limits.max_concurent``:
a typo must not silently fall back to a default), and kairosd refuses to start
on it. kairos never writes this file.

Because the file names commands kairos runs (agent binaries, hooks, custom
agents), it is refused when a group or other users can write it or its folder
(a sticky folder like /tmp is fine), or when another user (other than root)
owns it. A hook command gets the same check each time before it runs (see
:mod:`kairosd.system.filesafety`): its program (``argv[0]``: a path, ``~`` expanded, or
a name found on kairosd's PATH), an interpreter's script (``["sh",
"/path/hook.sh"]``, ``["python3", "hook.py"]``) and the command behind ``env``,
each with its folder. An unsafe one is not run: a warning names the file and
the fix (``chmod go-w FILE``), and ``kairos doctor`` lists it as a problem.

    [agents.claude]                 # also copilot, codex, gemini, opencode
    enabled = true
    binary = "/opt/claude/bin/claude"   # default: the name, looked up on kairosd's PATH
    model = "sonnet"                # when a task names none
    extra_args = ["--max-turns", "40"]
    permission_mode = "default"     # the ceiling for tasks run by this CLI: plan, default,
                                    # acceptEdits or bypassPermissions; a task only narrows it
    allowed_tools = ["Read", "Grep"]    # optional ceiling on tools (the CLI's own names)
    denied_tools = ["WebFetch"]
    timeout = "30m"                 # per turn (default 1h); seconds or a duration (90s, 5m, 2h)
    env = { CLAUDE_CONFIG_DIR = "/home/me/.claude-work" }

    [custom.my-agent]               # a command template (see kairosd.agents.custom)
    argv = ["my-agent", "--prompt", "{prompt}"]
    resume_argv = ["my-agent", "--resume", "{session}", "--prompt", "{prompt}"]
    output = "json"                 # text, json or jsonl
    text_field = "result"
    session_field = "session_id"

    [limits]
    max_concurrent = 4              # running work at once, 1..256   (env KAIROS_MAX_CONCURRENT)
    max_depth = 5                   # task nesting, 0..64            (env KAIROS_MAX_DEPTH)
    kill_grace = "10s"              # SIGTERM, then SIGKILL after this
    keep_finished = 1000            # finished background jobs kept (the oldest are pruned)
    max_connections = 256           # clients served at once; past it a client gets 503 "busy"
    max_streams = 64                # of those, open streams (kairos watch, --follow), 1..max_connections
    max_sessions = 1000             # live agent sessions registered at once (the longest idle go first)
    runs_per_task = 50              # runs the run ledger keeps per scheduled task (env KAIROS_RUNS_PER_TASK)
    session_ttl = "24h"             # a live session not seen for this long expires, >= 1m (env KAIROS_SESSION_TTL)
    max_output = "1MiB"             # output logged per run (shell targets, background jobs): bytes,
                                    # or with KiB, MiB, GiB (also KB, MB, GB); the rest is counted, then
                                    # noted as cut at the end of the log

    [[hooks.task_completed]]        # task_created, task_completed, scheduled_task_fired,
    argv = ["notify-send", "kairos"]    # scheduled_task_missed, scheduled_task_expired
    timeout = "10s"                 # the event arrives as JSON on stdin
    # the program and script must be yours (or root's) and not group/world-writable
    # (a single [hooks.NAME] table, or `NAME = ["argv", ...]`, work too)

    [consolidation]                 # memory consolidation at session end (see kairosd.consolidation)
    enabled = true                  # KAIROS_CONSOLIDATE=0 (kairosd's or the caller's) turns it off too
    min_interval_minutes = 10       # at most one run per project this often (0: no limit)
    min_user_turns = 3              # sessions with fewer human turns are not consolidated
    mode = "auto"                   # auto (the default): the rem-agent through the CLI whose session
                                    # ended, if `kairos integrate` set that CLI up and it is found, else
                                    # offline; offline (no LLM) opts out; agent forces the rem-agent
    agent_timeout = "5m"            # agent mode: the bound of all its turns; offline is the fallback
    offline = "broad"               # offline mode's reading: broad (the cues); cautious keeps only the
                                    # entries a small model of the corpus reads as the same kind: far
                                    # fewer wrong entries, and fewer right ones (for mode = "offline")
    max_agent_runs_per_day = 20     # agent runs a day (all projects); past it, offline (0: never agent)
    prompt_budget = 60000           # bytes (UTF-8) of typed turns per rem-agent turn; more: several turns
    max_chunks = 10                 # a session needing more turns than this is consolidated offline
    models = { claude = "sonnet" }  # the model per CLI (default: a cheap one, see consolidation.remagent.modes)

    [webhook]                       # webhook:URL targets (see kairosd.delivery.webhook)
    secret_file = "~/.config/kairos/webhook.secret"  # the HMAC-SHA256 key (owner-only file), or:
    # secret = "..."                # inline; then the config itself must be owner-only (chmod 600)
    allow_non_loopback = false      # true: URLs may resolve to addresses other than loopback
    timeout = "30s"                 # per delivery, all attempts together
    attempt_timeout = "10s"         # per HTTP attempt
    max_attempts = 5                # 5xx, 408, 429 and network errors are retried with backoff

The environment overrides the file, here and nowhere else (:func:`load_config`):
``KAIROS_MAX_CONCURRENT``, ``KAIROS_MAX_DEPTH``, ``KAIROS_RUNS_PER_TASK`` and
``KAIROS_SESSION_TTL`` (a bad value is a ConfigError naming the variable);
``KAIROS_DISABLE_CRON=1`` (or ``CLAUDE_CODE_DISABLE_CRON=1``) fires nothing
(:attr:`Config.firing_disabled`), and ``KAIROS_CONSOLIDATE=0`` in kairosd's environment
turns consolidation off (:attr:`ConsolidationConfig.switched_off`).

Must not import the agents (what they share is in :mod:`kairosd.core.agentspec`), the registry,
the scheduler, the store or the server.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from kairosd.core import bounds, defaults
from kairosd.core.agentspec import OUTPUTS, Permissions, template_errors
from kairosd.core.defaults import HOOK_EVENTS
from kairosd.core.errors import ConfigError, InvalidTimeError
from kairosd.core.schedule.durations import parse_duration
from kairosd.system import filesafety
from kairosd.system.paths import Paths

log = logging.getLogger(__name__)

CONFIG_NAME = "config.toml"
BUILTIN_AGENTS = ("claude", "copilot", "codex", "gemini", "opencode")
MAX_CONCURRENT_LIMIT = 256
MAX_DEPTH_LIMIT = 64
# Whole numbers in [limits] that an environment variable overrides.
ENV_OVERRIDES = {
    "KAIROS_MAX_CONCURRENT": "max_concurrent",
    "KAIROS_MAX_DEPTH": "max_depth",
    "KAIROS_RUNS_PER_TASK": "runs_per_task",
}
SESSION_TTL_VAR = "KAIROS_SESSION_TTL"
DISABLE_VARS = ("KAIROS_DISABLE_CRON", "CLAUDE_CODE_DISABLE_CRON")
CONSOLIDATE_VAR = "KAIROS_CONSOLIDATE"
ON_VALUES = ("1", "true", "yes", "on")
OFF_VALUES = ("0", "false", "no", "off")
MIN_SESSION_TTL_S = 60.0
AGENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
MIN_SECRET_CHARS = 16
MAX_SECRET_BYTES = 4096

PermissionMode = Literal["plan", "default", "acceptEdits", "bypassPermissions"]


def _seconds(value: Any) -> Any:
    """A number of seconds, or a duration such as ``90s``, ``5m`` or ``1h30m``."""
    if isinstance(value, bool):
        raise ValueError("must be a number of seconds or a duration such as 90s or 5m")
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except InvalidTimeError as exc:
            raise ValueError(str(exc)) from None
    return value


Seconds = Annotated[float, BeforeValidator(_seconds)]

_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000**2, "mb": 1000**2, "mib": 1 << 20,
               "g": 1000**3, "gb": 1000**3, "gib": 1 << 30}  # fmt: skip


def _bytes(value: Any) -> Any:
    """A number of bytes, or a size such as ``512KiB``, ``1MiB`` or ``2MB``."""
    if isinstance(value, bool):
        raise ValueError("must be a number of bytes or a size such as 512KiB or 1MiB")
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]+)\s*([A-Za-z]*)\s*", value, re.ASCII)
        unit = _SIZE_UNITS.get(match[2].lower()) if match else None
        if match is None or unit is None:
            raise ValueError(f"not a size: {value!r} (bytes, or a number with KiB, MiB, GiB, KB, MB or GB)")
        return int(match[1]) * unit
    return value


Bytes = Annotated[int, BeforeValidator(_bytes)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _Section(BaseModel):
    # allow_inf_nan=False: TOML has inf and nan, and "nan: should be <= 600" would say the wrong thing.
    # defer_build: the validators are built when a config file is first read, not at import. Without a
    # file (most starts, and every kairosd the tests start) the defaults are constructed, never validated:
    # building the eleven sections' validators was ~50 ms of CPU per start (and pydantic's plugin scan).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)


class AgentConfig(_Section):
    """One built-in agent CLI."""

    enabled: bool = True
    binary: NonEmpty | None = None
    model: NonEmpty | None = None
    extra_args: list[str] = Field(default_factory=list)
    permission_mode: PermissionMode = "default"
    allowed_tools: list[NonEmpty] | None = None
    denied_tools: list[NonEmpty] = Field(default_factory=list)
    timeout: Seconds = Field(default=defaults.TURN_TIMEOUT_S, gt=0, le=7 * 86400)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: dict[str, str]) -> dict[str, str]:
        # Checked here, not at the first run: a NUL in a name passed doctor, then every run failed.
        for name, text in value.items():
            if not name or "=" in name:
                raise ValueError(f"variable name {name!r} must be non-empty and contain no '='")
            problem = bounds.text_problem(name)
            if problem:
                raise ValueError(f"variable name {name!a} {problem}")
            problem = bounds.text_problem(text)
            if problem:
                raise ValueError(f"the value of {name!a} {problem}")
        return value

    def ceiling(self) -> Permissions:
        """The widest permissions a task run by this agent may have (a task only narrows them)."""
        denied = frozenset(self.denied_tools)
        allowed = None if self.allowed_tools is None else frozenset(self.allowed_tools) - denied
        return Permissions(self.permission_mode, allowed, denied)


class CodexConfig(AgentConfig):
    """Codex, which also has idle wake: kairosd starts a turn in an idle live Codex session with
    ``codex queue`` when a prompt for it fires (``idle_wake = false`` leaves that out)."""

    idle_wake: bool = True


class CustomAgentConfig(AgentConfig):
    """A custom agent: a command template. ``binary`` is argv[0]; ``extra_args`` do not apply."""

    argv: list[str] = Field(min_length=1)
    resume_argv: list[str] | None = Field(default=None, min_length=1)
    prompt_stdin: bool = False
    output: Literal["text", "json", "jsonl"] = "text"
    text_field: NonEmpty | None = None
    session_field: NonEmpty | None = None

    @model_validator(mode="after")
    def _check(self) -> CustomAgentConfig:
        problems = template_errors(self.argv) + template_errors(self.resume_argv or ())
        if self.binary is not None or self.extra_args:
            problems.append("binary and extra_args do not apply to a custom agent (write them into argv)")
        if self.output != "text" and not self.text_field:
            problems.append(f"output = {self.output!r} needs text_field (where the final text is)")
        if self.output == "text" and (self.text_field or self.session_field):
            problems.append(f"text_field and session_field need output = one of {', '.join(OUTPUTS[1:])}")
        if not self.prompt_stdin and not any("{prompt}" in arg for arg in self.argv):
            problems.append("argv has no {prompt}; add it or set prompt_stdin = true")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Agents(_Section):
    # Defaults are constructed (no validation, so no validator is built for them): see _Section.
    claude: AgentConfig = Field(default_factory=AgentConfig.model_construct)
    copilot: AgentConfig = Field(default_factory=AgentConfig.model_construct)
    codex: CodexConfig = Field(default_factory=CodexConfig.model_construct)
    gemini: AgentConfig = Field(default_factory=AgentConfig.model_construct)
    opencode: AgentConfig = Field(default_factory=AgentConfig.model_construct)


class Limits(_Section):
    max_concurrent: int = Field(default=defaults.MAX_CONCURRENT, ge=1, le=MAX_CONCURRENT_LIMIT)
    max_depth: int = Field(default=defaults.MAX_DEPTH, ge=0, le=MAX_DEPTH_LIMIT)
    kill_grace: Seconds = Field(default=defaults.KILL_GRACE_S, gt=0, le=defaults.MAX_KILL_GRACE_S)
    keep_finished: int = Field(default=defaults.KEEP_FINISHED, ge=1, le=1_000_000)
    max_connections: int = Field(default=defaults.MAX_CONNECTIONS, ge=1, le=65_536)
    max_streams: int = Field(default=defaults.MAX_STREAMS, ge=1, le=65_536)
    max_sessions: int = Field(default=defaults.MAX_SESSIONS, ge=1, le=100_000)
    runs_per_task: int = Field(default=defaults.RUNS_PER_TASK, ge=1, le=100_000)
    session_ttl: Seconds = Field(default=defaults.SESSION_TTL_S, ge=MIN_SESSION_TTL_S, le=365 * 86400)
    max_output: Bytes = Field(default=defaults.MAX_OUTPUT_BYTES, ge=1024, le=1 << 30)

    @model_validator(mode="after")
    def _streams_fit(self) -> Limits:
        if self.max_streams > self.max_connections:
            raise ValueError(
                f"max_streams ({self.max_streams}) must not exceed max_connections ({self.max_connections})"
            )
        return self


class HookCommand(_Section):
    argv: list[NonEmpty] = Field(min_length=1)
    timeout: Seconds = Field(default=10.0, gt=0, le=600)


def _hook_list(value: Any) -> Any:
    """Accept ``[[hooks.X]]`` (a list), ``[hooks.X]`` (one table) and ``X = ["argv", ...]``."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [{"argv": value}]
    return value


HookList = Annotated[list[HookCommand], BeforeValidator(_hook_list)]


class Hooks(_Section):
    task_created: HookList = Field(default_factory=list)
    task_completed: HookList = Field(default_factory=list)
    scheduled_task_fired: HookList = Field(default_factory=list)
    scheduled_task_missed: HookList = Field(default_factory=list)
    scheduled_task_expired: HookList = Field(default_factory=list)

    def for_event(self, event: str) -> list[HookCommand]:
        if event not in HOOK_EVENTS:
            raise ValueError(f"no such hook event: {event}")
        commands: list[HookCommand] = getattr(self, event)
        return commands

    def as_specs(self) -> dict[str, list[tuple[list[str], float]]]:
        """``{event: [(argv, timeout_s), ...]}`` for every event with a command (for the hook runner)."""
        return {
            event: [(list(c.argv), c.timeout) for c in self.for_event(event)]
            for event in HOOK_EVENTS
            if self.for_event(event)
        }


class ConsolidationConfig(_Section):
    """``[consolidation]``: when a session's end distils it into the project's context board."""

    enabled: bool = True
    min_interval_minutes: float = Field(default=10.0, ge=0, le=7 * 24 * 60)
    min_user_turns: int = Field(default=3, ge=0, le=1000)
    mode: Literal["auto", "offline", "agent"] = "auto"
    agent_timeout: Seconds = Field(default=300.0, gt=0, le=3600)
    # How offline mode reads a transcript (also agent mode's fallback): "broad", the cues alone; "cautious",
    # a cue's entry kept only if kairosd.consolidation.offline.kinds reads the sentence as the same kind.
    offline: Literal["broad", "cautious"] = "broad"
    max_agent_runs_per_day: int = Field(default=20, ge=0, le=10_000)
    # Bytes (UTF-8) of typed turns per rem-agent turn. At most 80k: CLIs that take the prompt as one
    # command-line argument refuse more than about 100 KB.
    prompt_budget: int = Field(default=60_000, ge=2_000, le=80_000)
    max_chunks: int = Field(default=10, ge=1, le=100)
    models: dict[Annotated[str, Field(pattern=AGENT_NAME_PATTERN)], NonEmpty] = Field(default_factory=dict)
    _switched_off: str | None = PrivateAttr(default=None)

    @property
    def switched_off(self) -> str | None:
        """Why kairosd's environment turns consolidation off (``KAIROS_CONSOLIDATE=0``); None: it does not."""
        return self._switched_off


class WebhookConfig(_Section):
    """``[webhook]``: the signing key of webhook targets and where they may post.

    kairos never sends an unsigned webhook: without a secret every webhook run
    fails with a reason saying so. ``secret_file`` is read when the config is
    loaded: at start and at each reload (``kairos daemon reload``, SIGHUP).
    """

    secret: SecretStr | None = None
    secret_file: NonEmpty | None = None
    allow_non_loopback: bool = False
    timeout: Seconds = Field(default=30.0, gt=0, le=3600)
    attempt_timeout: Seconds = Field(default=10.0, gt=0, le=600)
    max_attempts: int = Field(default=5, ge=1, le=20)

    @model_validator(mode="after")
    def _check(self) -> WebhookConfig:
        if self.secret is not None and self.secret_file is not None:
            raise ValueError("give secret or secret_file, not both")
        if self.secret is not None:
            _check_secret(self.secret.get_secret_value(), "secret")
        return self

    def secret_bytes(self) -> bytes | None:
        """The signing key (after ``secret_file`` was read by :func:`load_config`), or None."""
        return None if self.secret is None else self.secret.get_secret_value().encode("utf-8")


def _check_secret(text: str, where: str) -> None:
    if len(text) < MIN_SECRET_CHARS:
        raise ValueError(
            f"{where} must be at least {MIN_SECRET_CHARS} characters (make one with: openssl rand -hex 32)"
        )


class Config(_Section):
    agents: Agents = Field(default_factory=Agents.model_construct)
    custom: dict[Annotated[str, Field(pattern=AGENT_NAME_PATTERN)], CustomAgentConfig] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits.model_construct)
    hooks: Hooks = Field(default_factory=Hooks.model_construct)
    webhook: WebhookConfig = Field(default_factory=WebhookConfig.model_construct)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig.model_construct)
    _path: Path | None = PrivateAttr(default=None)
    _firing_disabled: str | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        """The file it was read from; None for the defaults (no file)."""
        return self._path

    @property
    def firing_disabled(self) -> str | None:
        """Why nothing fires (``KAIROS_DISABLE_CRON=1`` in kairosd's environment); None: tasks fire."""
        return self._firing_disabled

    @field_validator("custom")
    @classmethod
    def _no_shadowing(cls, value: dict[str, CustomAgentConfig]) -> dict[str, CustomAgentConfig]:
        for name in value:
            if name in BUILTIN_AGENTS:
                raise ValueError(f"{name!r} is a built-in agent; give the custom agent another name")
        return value

    def agent(self, name: str) -> AgentConfig:
        """The settings of a built-in or custom agent (KeyError if there is none)."""
        if name in BUILTIN_AGENTS:
            config: AgentConfig = getattr(self.agents, name)
            return config
        return self.custom[name]

    def agent_names(self, *, enabled_only: bool = True) -> list[str]:
        names = [*BUILTIN_AGENTS, *sorted(self.custom)]
        return [n for n in names if self.agent(n).enabled or not enabled_only]

    def timeout_s(self, name: str) -> float:
        return self.agent(name).timeout

    def ceiling(self, name: str) -> Permissions:
        return self.agent(name).ceiling()


def config_path(paths: Paths) -> Path:
    return paths.config_dir / CONFIG_NAME


def load_config(paths: Paths, environ: Mapping[str, str] | None = None) -> Config:
    """The user's config (defaults when there is no file), with the environment's overrides.

    Raises ConfigError, naming the file and the key, for anything it cannot use.
    """
    env = os.environ if environ is None else environ
    path = config_path(paths)
    data = _read(path)
    if data is None:
        config = Config.model_construct()  # the defaults: valid by construction (tests/unit/kairosd/test_config.py)
    else:
        config = _validate(data, str(path))
        config._path = path
        config = _with_webhook_secret(config, path)
    return with_environment(config, env)


def _with_webhook_secret(config: Config, path: Path) -> Config:
    """Check where the webhook key lives, and read ``secret_file`` into ``webhook.secret``.

    A key is only as secret as the file it sits in: an inline ``secret`` needs a
    config that only its owner can read, and ``secret_file`` an owner-only file.
    """
    hook = config.webhook
    if hook.secret is not None:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"{path}: webhook.secret is in a file others can read (mode {mode:o}); chmod 600 {path}, "
                "or move the key to a file named by webhook.secret_file"
            )
        return config
    if hook.secret_file is None:
        return config
    secret_path = Path(os.path.expanduser(hook.secret_file))
    if not secret_path.is_absolute():
        secret_path = path.parent / secret_path
    try:
        with secret_path.open("rb") as file:
            st = os.fstat(file.fileno())
            raw = file.read(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: webhook.secret_file {secret_path}: {exc.strerror or exc}") from None
    if st.st_uid != os.getuid():
        raise ConfigError(f"{path}: webhook.secret_file {secret_path} belongs to another user (uid {st.st_uid})")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise ConfigError(
            f"{path}: webhook.secret_file {secret_path} can be read or written by others (mode {mode:o}); "
            f"chmod 600 {secret_path}"
        )
    try:
        text = raw.decode("utf-8").strip()  # a trailing newline from `echo` or an editor is not part of the key
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: webhook.secret_file {secret_path} is not UTF-8 text") from None
    if len(raw) > MAX_SECRET_BYTES:
        raise ConfigError(f"{path}: webhook.secret_file {secret_path} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        _check_secret(text, f"webhook.secret_file {secret_path}")
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    webhook = hook.model_copy(update={"secret": SecretStr(text)})
    return config.model_copy(update={"webhook": webhook})


def _read(path: Path) -> dict[str, Any] | None:
    try:
        file = path.open("rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    with file:
        # fstat: the file actually opened (a symlink's target), so it cannot be swapped in between.
        _check_safe(path, os.fstat(file.fileno()))
        folders = {path.parent, path.resolve().parent}
        for folder in sorted(folders):
            _check_safe(folder, os.stat(folder), folder=True)
        raw = file.read()
    import tomllib  # only when there is a file: its parser compiles its patterns at import

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def _check_safe(path: Path, st: os.stat_result, *, folder: bool = False) -> None:
    """Refuse a file (or its folder) that someone other than the user could change (see kairosd.system.filesafety)."""
    found = filesafety.problem(st, folder=folder)
    if found is None:
        return
    what = "folder" if folder else "file"
    if found.kind == "owner":
        raise ConfigError(
            f"{path}: this {what} belongs to another user (uid {found.uid}); the config names commands kairos "
            "runs, so it must be yours"
        )
    if found.kind == "writable":
        raise ConfigError(
            f"{path}: this {what} is writable by {found.who} (mode {found.mode:o}); the config names commands "
            f"kairos runs, so kairos refuses it. Fix it with: chmod go-w {path}"
        )
    raise ConfigError(f"{path}: this {what} is {found}")


def _validate(data: dict[str, Any], source: str) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    """Every problem, each as ``key.path: what is wrong`` (pydantic's own words, shortened)."""
    problems = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"] if not str(part).startswith("function-")]
        message = error["msg"]
        if loc and loc[-1] == "[key]":
            loc = loc[:-1]
            message = "not a valid agent name (letters, digits, '.', '_' and '-'; at most 64)"
        key = ".".join(loc)
        if error["type"] == "extra_forbidden":
            near = _near_key(loc)
            message = f"unknown key (did you mean {near!r}?)" if near else "unknown key (check the spelling)"
        message = message.removeprefix("Value error, ")
        problems.append(f"{key}: {message}" if key else message)
    # One line per problem would be unreadable in a log; the first few say enough.
    shown = problems[:5]
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return "; ".join(shown) + more


def _near_key(loc: list[str]) -> str | None:
    """The known key closest to the unknown one at ``loc`` (``max_concurent`` -> ``max_concurrent``)."""
    import difflib
    import typing

    model: Any = Config
    for part in loc[:-1]:
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return None
        if part not in fields:
            continue  # a name under a dict of sections ([custom.NAME]): its model is the dict's value
        inner = fields[part].annotation
        while not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            args = [a for a in typing.get_args(inner) if a is not type(None)]
            if not args:
                return None
            inner = args[-1]  # dict[K, V] -> V; X | None -> X (pydantic has already taken Annotated off)
        model = inner
    known = list(getattr(model, "model_fields", {}))
    if not loc or not known:
        return None
    matches = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6)
    return matches[0] if matches else None


def with_environment(config: Config, environ: Mapping[str, str]) -> Config:
    """``config`` with every environment override applied (the only place kairosd reads them)."""
    updates: dict[str, Any] = {}
    for var, key in ENV_OVERRIDES.items():
        raw = environ.get(var, "").strip()
        if not raw:
            continue
        field = Limits.model_fields[key]
        low = next(m.ge for m in field.metadata if hasattr(m, "ge"))
        high = next(m.le for m in field.metadata if hasattr(m, "le"))
        # ASCII only: isdigit() and int() also take Arabic-Indic or fullwidth digits.
        if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
            raise ConfigError(f"{var} must be a whole number from {low} to {high}, not {raw!r}")
        updates[key] = int(raw)
    raw_ttl = environ.get(SESSION_TTL_VAR, "").strip()
    if raw_ttl:
        try:
            ttl = parse_duration(raw_ttl)
        except InvalidTimeError as exc:
            raise ConfigError(f"{SESSION_TTL_VAR}: {exc.message}") from None
        if ttl < MIN_SESSION_TTL_S:
            raise ConfigError(f"{SESSION_TTL_VAR} must be at least 1m, not {raw_ttl!r}")
        updates["session_ttl"] = ttl
    if updates:
        config = config.model_copy(update={"limits": config.limits.model_copy(update=updates)})
    consolidate = environ.get(CONSOLIDATE_VAR)
    if consolidate is not None and consolidate.strip().lower() in OFF_VALUES:
        section = config.consolidation.model_copy()
        section._switched_off = f"{CONSOLIDATE_VAR}={consolidate} is set in kairosd's environment"
        config = config.model_copy(update={"consolidation": section})
    for var in DISABLE_VARS:
        if environ.get(var, "").strip().lower() in ON_VALUES:
            config = config.model_copy()
            config._firing_disabled = f"{var}=1 is set in kairosd's environment: nothing fires (the API still answers)"
            break
    return config

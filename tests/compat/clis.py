"""The real agent CLIs: pinned npm versions, where they are installed, and how each runs offline.

``install(cli)`` puts ``<package>@<version>`` into ``~/.cache/kairos-compat/npm/<package>@<version>``
(``KAIROS_COMPAT_CACHE`` moves it) with ``npm install --prefix``; ``binary(cli)`` finds it there.
``KAIROS_COMPAT_LATEST=1`` uses the newest published versions (resolved once per run by
``scripts/compat --latest``, which exports ``KAIROS_COMPAT_VERSIONS``).

:class:`Sandbox` is one user's world: a HOME of its own, a project folder no CLI has seen (so
untrusted), and the environment and config files that point the CLI at the fake model on
127.0.0.1. Nothing here ever names another address.

Must not import kairosd: the suite drives kairos only through its CLI.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from environment_support import suite_setting

PINNED = {
    "claude": ("@anthropic-ai/claude-code", "2.1.330"),
    "codex": ("@openai/codex", "0.169.0"),
    "gemini": ("@google/gemini-cli", "0.61.0"),
    "copilot": ("@github/copilot", "1.0.102"),
    "opencode": ("opencode-ai", "1.18.33"),
}
BIN = {"claude": "claude", "codex": "codex", "gemini": "gemini", "copilot": "copilot", "opencode": "opencode"}
CLIS = tuple(PINNED)
# Copilot masks its provider key wherever it appears: one no reply or path contains.
FAKE_KEY = "kq7-fake-key-zx9"


# The oldest Node each CLI ran on here (Claude's package asks for 22 but runs on 20; Gemini needs 20).
MIN_NODE = {"claude": 20, "gemini": 20, "codex": 16, "copilot": 16, "opencode": 16}


@functools.cache
def node_version() -> str:
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def node_too_old(cli: str) -> str | None:
    """Why ``cli`` cannot run on this machine's node, or None."""
    version = node_version()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        return "node --version failed"
    return f"{cli} needs node >= {MIN_NODE[cli]}, this is {version}" if major < MIN_NODE[cli] else None


def cache_dir() -> Path:
    return Path(suite_setting("KAIROS_COMPAT_CACHE") or Path.home() / ".cache" / "kairos-compat")


def version(cli: str) -> str:
    chosen = json.loads(suite_setting("KAIROS_COMPAT_VERSIONS") or "{}")
    return str(chosen.get(cli) or PINNED[cli][1])


def prefix(cli: str) -> Path:
    package = PINNED[cli][0]
    return cache_dir() / "npm" / f"{package.replace('/', '+')}@{version(cli)}"


def binary(cli: str) -> Path | None:
    path = prefix(cli) / "node_modules" / ".bin" / BIN[cli]
    return path if path.exists() else None


def install(cli: str) -> Path:
    """Install the CLI (once; a finished install is reused) and return its executable."""
    found = binary(cli)
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    where = prefix(cli)
    where.mkdir(parents=True, exist_ok=True)
    # cwd = the prefix: npm reads a spec that names an existing folder in cwd as that folder.
    subprocess.run(
        [npm, "install", "--prefix", str(where), "--no-audit", "--no-fund", "--loglevel=error",
         f"{PINNED[cli][0]}@{version(cli)}"],
        cwd=where, check=True, timeout=900,
    )  # fmt: skip
    found = binary(cli)
    if found is None:
        raise RuntimeError(f"npm installed {PINNED[cli][0]} but {BIN[cli]} is not in {where}/node_modules/.bin")
    return found


@dataclass
class Sandbox:
    """One fake user: HOME, a fresh project folder, and the environment to run a CLI offline."""

    root: Path
    model_url: str
    kairos_home: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def prepare(self, cli: str) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        if not (self.project / ".git").exists():
            subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            # The CLIs' own temporary files (opencode's Bun unpacks native libraries there) stay in the
            # sandbox, which the suite removes: nothing is left in /tmp.
            "TMPDIR": str(self.root / "tmp"),
            "USER": os.environ.get("USER", "user"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "TZ": "UTC",
            "KAIROS_HOME": str(self.kairos_home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "NO_PROXY": "127.0.0.1,localhost",
            "DO_NOT_TRACK": "1",
        }
        for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            base.pop(var, None)
        base.update(getattr(self, f"_{cli}")())
        self.env = base
        return base

    # ---- per CLI: environment and the config files that make it run offline ----

    def _claude(self) -> dict[str, str]:
        self._write_json(
            self.home / ".claude.json",
            {
                "hasCompletedOnboarding": True,
                "customApiKeyResponses": {"approved": [FAKE_KEY[-20:]], "rejected": []},
                "projects": {str(self.project): {"hasTrustDialogAccepted": True}},
            },
            keep=True,
        )
        return {
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": FAKE_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            # MCP tools in the request itself, not behind ToolSearch, so the fake model can call them.
            "ENABLE_TOOL_SEARCH": "false",
        }

    def _codex(self) -> dict[str, str]:
        codex_home = self.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        config = codex_home / "config.toml"
        if not config.exists():
            config.write_text(
                'model = "fake-model"\n'
                'model_provider = "fake"\n'
                "check_for_update_on_startup = false\n\n"
                "[model_providers.fake]\n"
                'name = "fake"\n'
                f'base_url = "{self.model_url}/v1"\n'
                'wire_api = "responses"\n'
                'env_key = "FAKE_MODEL_KEY"\n'
                "request_max_retries = 0\n"
                "stream_max_retries = 0\n"
            )
        return {"FAKE_MODEL_KEY": FAKE_KEY, "CODEX_HOME": str(codex_home)}

    def _gemini(self) -> dict[str, str]:
        self._write_json(
            self.home / ".gemini" / "settings.json",
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
            },
            keep=True,
        )
        return {"GEMINI_API_KEY": FAKE_KEY, "GOOGLE_GEMINI_BASE_URL": self.model_url}

    def _copilot(self) -> dict[str, str]:
        return {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": self.model_url + "/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
            "COPILOT_MODEL": "fake-model",
            "COPILOT_HOME": str(self.home / ".copilot"),
        }

    def _opencode(self) -> dict[str, str]:
        self._write_json(
            self.home / ".config" / "opencode" / "opencode.json",
            {
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": False,
                "share": "disabled",
                "model": "fake/fake-model",
                "provider": {
                    "fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "fake",
                        "options": {"baseURL": self.model_url + "/v1", "apiKey": FAKE_KEY},
                        "models": {"fake-model": {"name": "fake-model", "tool_call": True}},
                    }
                },
            },
            keep=True,
        )
        return {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}

    @staticmethod
    def _write_json(path: Path, data: dict[str, object], *, keep: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep and path.exists():
            return
        path.write_text(json.dumps(data, indent=2) + "\n")

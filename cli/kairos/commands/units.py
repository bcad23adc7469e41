"""The unit files ``kairos systemd install`` writes: where they go and how they are rendered.

Pure text work plus finding files (the shipped templates, the ``kairosd``
script, the user manager's unit folders); nothing here runs systemctl. As the
``systemd`` verb module, this must not import pydantic, asyncio, platformdirs
or the daemon's modules beyond ``kairosd.core.errors`` and the version: it works in
an install whose dependencies are broken, to repair or remove the service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kairos.commands.common import installed_script

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

SERVICE = "kairosd.service"
SOCKET = "kairosd.socket"
MAX_SOCKET_PATH_BYTES = 107  # sun_path, as kairosd.api.unixsocket checks it


# ---- where things are ---------------------------------------------------------------------------------


def clean_path(path: str | Path) -> Path:
    """``path`` as printed and written: ``~`` expanded, absolute, without ``..``, ``.`` or doubled slashes.

    Not resolved through links: the folder the user named stays the one shown.
    """
    import os
    from pathlib import Path

    text = os.path.normpath(os.path.abspath(os.path.expanduser(str(path))))
    # POSIX keeps a leading "//" (implementation-defined); for a unit folder it means "/".
    return Path("/" + text.lstrip("/"))


def default_unit_dir(environ: Mapping[str, str]) -> Path:
    from pathlib import Path

    config = environ.get("XDG_CONFIG_HOME", "").strip()
    # The XDG spec: a relative value is invalid and must be ignored.
    base = Path(config) if config.startswith("/") else Path(environ.get("HOME") or Path.home()) / ".config"
    return clean_path(base / "systemd" / "user")


def installed_unit(name: str, environ: Mapping[str, str]) -> Path | None:
    """The unit file a user manager would load for ``name``, if any (its search order, systemd.unit(5))."""
    from pathlib import Path

    data = environ.get("XDG_DATA_HOME", "").strip()
    data_dir = Path(data) if data.startswith("/") else Path(environ.get("HOME") or Path.home()) / ".local" / "share"
    folders = (
        default_unit_dir(environ),
        Path("/etc/systemd/user"),
        data_dir / "systemd" / "user",
        Path("/usr/local/lib/systemd/user"),
        Path("/usr/lib/systemd/user"),
    )
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


def find_kairosd() -> str:
    """The ``kairosd`` script installed next to this ``kairos`` (the service's ExecStart)."""
    return installed_script("kairosd", "--kairosd")


def template(name: str) -> str:
    """A shipped unit: from the wheel's data, else (an editable checkout) from the repository's systemd/."""
    from importlib import resources
    from pathlib import Path

    import kairosd
    from kairosd.core.errors import KairosError

    packaged = resources.files("kairosd").joinpath("_data", "systemd", name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(kairosd.__file__).resolve().parents[2] / "systemd" / name
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise KairosError(f"the shipped unit {name} is missing from this installation; reinstall kairos")


# ---- rendering ----------------------------------------------------------------------------------------


def _check_printable(what: str, value: str) -> None:
    from kairosd.core.errors import UsageError

    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise UsageError(f"{what} contains a control character: {value!r}")


def exec_quote(arg: str) -> str:
    """``arg`` as one word of ``ExecStart=``: specifiers and variables escaped, quoted if needed."""
    _check_printable("ExecStart", arg)
    word = arg.replace("%", "%%").replace("$", "$$")
    if any(ch.isspace() or ch in "\"'\\;" for ch in word):
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def environment_line(name: str, value: str) -> str:
    _check_printable(name, value)
    escaped = f"{name}={value}".replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
    return f'Environment="{escaped}"'


def unit_environment(text: str, name: str) -> str | None:
    """The value ``environment_line`` wrote for ``name`` in a unit's text, or None."""
    import re

    for match in re.finditer(r'^Environment="((?:[^"\\]|\\.)*)"\s*$', text, re.MULTILINE):
        assignment = re.sub(r"\\(.)", r"\1", match.group(1)).replace("%%", "%")
        key, sep, value = assignment.partition("=")
        if sep and key == name:
            return value
    return None


def kairos_home(environ: Mapping[str, str]) -> str | None:
    import os

    home = environ.get("KAIROS_HOME", "")
    # As kairosd.system.paths reads it, made absolute: the service does not run in this folder.
    return os.path.abspath(os.path.expanduser(home)) if home else None


def _replace_line(text: str, key: str, line: str, name: str) -> str:
    import re

    from kairosd.core.errors import KairosError

    pattern = re.compile(rf"^{key}=.*$", re.MULTILINE)
    if len(pattern.findall(text)) != 1:
        raise KairosError(f"the shipped {name} must have exactly one {key}= line")
    return pattern.sub(lambda _m: line, text, count=1)


def _body(text: str) -> str:
    """A shipped unit without its opening comment, which tells how to install it (done by now)."""
    lines = text.splitlines(keepends=True)
    start = 0
    while start < len(lines) and (lines[start].startswith("#") or not lines[start].strip()):
        start += 1
    return "\n" + "".join(lines[start:])


def render_units(exec_start: str, kairos_home: str | None, with_socket: bool) -> dict[str, str]:
    """The unit files to write, by name."""
    import os

    from kairosd import __version__
    from kairosd.core.errors import UsageError

    header = (
        f"# Written by `kairos systemd install` (kairos {__version__}) from the unit shipped with kairos.\n"
        "# Run it again after moving or reinstalling kairos; `kairos systemd uninstall` removes it.\n"
        "# Logs: journalctl --user -u kairosd\n"
    )
    exec_line = f"ExecStart={exec_quote(exec_start)}"
    if kairos_home is not None:
        exec_line += "\n" + environment_line("KAIROS_HOME", kairos_home)
    service = _replace_line(_body(template(SERVICE)), "ExecStart", exec_line, SERVICE)
    units = {SERVICE: header + service}
    if with_socket:
        socket_unit = _body(template(SOCKET))
        if kairos_home is not None:
            path = os.path.join(kairos_home, "run", "kairosd.sock")
            _check_printable("KAIROS_HOME", path)
            if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
                limit = MAX_SOCKET_PATH_BYTES
                raise UsageError(f"socket path {path} is longer than {limit} bytes; use a shorter KAIROS_HOME")
            socket_unit = _replace_line(socket_unit, "ListenStream", f"ListenStream={path.replace('%', '%%')}", SOCKET)
        units[SOCKET] = header + socket_unit
    return units

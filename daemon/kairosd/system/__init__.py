"""The operating system as kairos uses it: folders, files, processes and systemd.

    paths       every folder and file kairos uses, resolved once (XDG, $KAIROS_HOME)
    trust       refuse folders and files that someone other than the user could change
    filesafety  open files without following links someone else planted
    atomic      replace a file atomically (temp, fsync, rename, fsync the folder) and clear stale temps
    procgroup   start, feed and kill process groups
    runner      run one process with a deadline, collecting its output
    versionprobe  ask an executable for its version (``--version``, with a deadline)
    lifecycle   the user's lifecycle hook commands, run on daemon events
    linger      whether the user lingers (on, off or unknown, and why)
    sdnotify    tell systemd we are ready, alive or stopping
    gcpause     hold the cycle collector off while a herd's pass runs
    pydanticplugins  pydantic without its plugin scan (kairosd's start, the CLI's answers)

Imports: :mod:`kairosd.core` only. The CLI may import this package.
"""

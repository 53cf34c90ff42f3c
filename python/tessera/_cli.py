"""Running the packaged `tessera` CLI for batch jobs (cells.convert, ragged.build).

Conversions and builds run in a child process on purpose: the CLI already isolates the HDF5
library (whose faults on damaged files must not take the Python process down) and streams
progress, and a child's memory is returned to the system when the job ends.
"""
from __future__ import annotations

import os
import subprocess
from typing import Iterable, Optional

from . import _tessera

_KINDS = {
    "FormatError": _tessera.FormatError,
    "IoError": _tessera.IoError,
    "UsageError": _tessera.UsageError,
    "LimitError": _tessera.LimitError,
    "UnsupportedError": _tessera.UnsupportedError,
    "Error": _tessera.Error,
}


def option_args(options: dict) -> list[str]:
    """`{"max_categories": 5, "no_obs_names": True, "obs_exclude": ["a", "b"]}` as CLI flags.

    Underscores become dashes; True adds the bare flag, False and None add nothing; a list or
    tuple repeats the flag once per item.
    """
    args: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, str(item)]
        else:
            args += [flag, str(value)]
    return args


# What Dask's nanny puts into the environment (`distributed.nanny.pre-spawn-environ`) — of its
# worker processes, and of the process that starts a LocalCluster, your own — and a CLI this
# package starts does not inherit: a 64 KiB malloc trim threshold returns freed memory to the
# system at once, so a build or convert faults it in again and again (three to four times the
# page faults, 25 % to 150 % more wall time). The CLI returns its memory when it exits.
_NOT_INHERITED = ("MALLOC_TRIM_THRESHOLD_",)


def with_default(flags: list[str], flag: str, value: object) -> list[str]:
    """`flags` plus `flag value` unless the caller gave `flag`."""
    return flags if flag in flags else [*flags, flag, str(value)]


def run(args: Iterable[str], cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Runs `tessera ARGS...`; returns the finished process or raises the matching tessera.Error."""
    from . import cli_path

    # The child dies with this process (a Dask worker killed mid-task leaves no build running).
    env = dict(os.environ, TESSERA_ERROR_KIND="1", TESSERA_EXIT_WITH_PARENT=str(os.getpid()))
    for name in _NOT_INHERITED:
        env.pop(name, None)
    argv = [str(cli_path()), *map(str, args)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode == 0:
        return proc
    kind = _tessera.UsageError if proc.returncode == 2 else _tessera.Error
    lines = []
    for line in proc.stderr.splitlines():
        if line.startswith("error-kind: "):
            kind = _KINDS.get(line[len("error-kind: "):].strip(), kind)
        else:
            lines.append(line)
    message = "\n".join(line for line in lines if line.strip()) or f"exit status {proc.returncode}"
    if message.startswith("error: "):
        message = message[len("error: "):]
    error = kind(message)
    # The same attributes errors raised by the extension carry (the CLI prints one joined text).
    error.message, error.path, error.structure = message, "", ""
    raise error

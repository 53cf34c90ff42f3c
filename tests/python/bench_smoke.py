"""Runs a benchmark of bench/ with --smoke and checks it printed every figure of its summary.

Only that the benchmark runs is checked: its figures depend on the machine and the load on it,
so no timing is asserted (docs/performance.md records measured runs).
"""
import os
import pathlib
import subprocess
import sys

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_smoke(script: str, *args, figures=(), timeout=600) -> str:
    """Runs `bench/<script> --smoke ARGS` with this interpreter and the package under test (no
    HTTP proxy from the environment); asserts it exits 0 and its summary names every one of
    `figures`; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(tessera.__file__).parent.parent),
                                         *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, str(REPO / "bench" / script), "--smoke", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Summary" in out, out
    summary = out[out.index("Summary"):]
    for figure in figures:
        assert figure in summary, f"{figure!r} missing from the summary:\n{out}"
    return out

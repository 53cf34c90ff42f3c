"""The remote-write benchmark (tessera's uploads against boto3 through the emulated network) runs
end to end on tiny inputs; no timing is asserted (bench_smoke.py)."""
import tessera

from bench_smoke import run_smoke


def test_remote_write_benchmark_runs(tmp_path):
    run_smoke("bench_remote_write.py", "--data-dir", tmp_path, "--cli", tessera.cli_path(),
              figures=["large object upload, tessera / boto3", "many objects upload, tessera / boto3",
                       "ceiling: boto3 without emulation"])

"""Remote writes through an emulated network, measured side by side with boto3.

    scripts/bench.sh remote-write [--repeat R] [--tet-mib M] [--cells N] [--parallel P] [--smoke]

The S3 emulator of the tests (tests/python/bucket_server.py: s3rver behind the checking proxy)
runs in a child process, so its Python threads never compete with the measured process for a
GIL. Its proxy adds 50 ms to every request and takes each request body at 150 MB/s per
connection, the emulation of bench_remote.py.

1. one large object: `tessera tet synth s3://…` of a raw f32 file of about M MiB (default 256);
   the figure is the upload as the command reports it (`uploaded …: … in S s`), against boto3's
   `upload_file` of the same local file with the same part size (16 MiB) and the same number of
   parts in flight (P, default 8, `TESSERA_UPLOAD_PARALLEL`). Both sign every body's SHA-256.
2. many objects: `tessera cells convert --output s3://… --overwrite` of an N-cell dataset (default
   400,000 cells, tiles of 2,000: about 210 objects, 60 MB) against boto3 `put_object` of the same
   files with P threads (manifest last, as tessera does), again the upload alone. tessera's commit
   protocol adds 4 sequential round trips to it (the lock, the listing of the old version, its
   retraction, the lock's removal), 0.2 s at 50 ms; a dataset of 100,000 cells (15 MB, 0.6 s of
   upload) shows that fixed cost as about 0.75 of boto3, 400,000 cells as a throughput.
3. the ceiling: boto3's upload of the large file with P parts in flight and no emulation, the most
   this emulator takes in at all (the Python proxy is CPU-bound well below the emulated links).

Each side runs once untimed first, then the sides alternate which goes first; every round prints
both figures and their ratio (tessera throughput / boto3 throughput), the medians go into the
summary. --smoke runs every figure once on tiny inputs to prove the benchmark runs.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import Summary, alternate, cells_dataset

REPO = pathlib.Path(__file__).resolve().parents[1]
LATENCY_S = 0.05
BANDWIDTH_BPS = 150e6
PART = 16 << 20
BUCKET = "bench"
UPLOADED = re.compile(r"uploaded (\S+): (\d+) object\(s\), (\d+) bytes in ([0-9.]+) s")


def serve(scratch: pathlib.Path) -> int:
    """Child process: the emulator. Prints its URL, then obeys `set LATENCY BANDWIDTH` lines."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import bucket_server

    server = bucket_server.BucketServer(scratch, page_size=1000)
    bucket_server.boto3_client(server.url).create_bucket(Bucket=BUCKET)
    print(json.dumps({"url": server.url}), flush=True)
    try:
        for line in sys.stdin:
            words = line.split()
            if words and words[0] == "set":
                server.latency, server.upload_bandwidth = float(words[1]), float(words[2])
            print("{}", flush=True)
    finally:
        server.close()
    return 0


class Emulator:
    def __init__(self, scratch: pathlib.Path):
        self._proc = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), "--serve", str(scratch)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = json.loads(self._proc.stdout.readline())["url"]

    def emulate(self, latency, bandwidth):
        self._proc.stdin.write(f"set {latency} {bandwidth}\n")
        self._proc.stdin.flush()
        self._proc.stdout.readline()

    def close(self):
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


def tessera_upload_seconds(args, env):
    """Runs a tessera writer on a bucket output; the upload's seconds and bytes as it reports them."""
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {proc.stderr}")
    m = UPLOADED.search(proc.stderr)
    if not m:
        raise RuntimeError(f"no upload line in: {proc.stderr}")
    return float(m.group(4)), int(m.group(3))


def compare(summary, figure, rounds, tessera_side, boto3_side):
    """Alternating rounds of both sides (MB/s each); prints every round, adds the median ratio."""
    ratios = []
    for r, t, b in alternate(rounds, tessera_side, boto3_side):
        ratios.append(t / b)
        print(f"  round {r}: tessera {t:.1f} MB/s, boto3 {b:.1f} MB/s, ratio {t / b:.3f}")
    median = statistics.median(ratios)
    summary.add(figure, f"{median:.3f}", "≥ 0.80", median >= 0.8)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", type=pathlib.Path, help=argparse.SUPPRESS)
    ap.add_argument("--cli", type=pathlib.Path, default=REPO / "build" / "release" / "tessera")
    ap.add_argument("--data-dir", type=pathlib.Path, default=REPO / "build" / "bench-data" / "remote-write")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tet-mib", type=int, default=256)
    ap.add_argument("--cells", type=int, default=400_000)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.serve:
        return serve(a.serve)
    if a.smoke:
        a.repeat, a.tet_mib, a.cells = 1, 40, 4000
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import bucket_server
    from boto3.s3.transfer import TransferConfig

    a.data_dir.mkdir(parents=True, exist_ok=True)
    side = int((a.tet_mib * 2**20 / 4) ** 0.5) // 256 * 256 or 256
    spec = f"v:f32:{side}x{side}:{min(side, 2048)}x{min(side, 2048)}"
    summary = Summary()
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as scratch:
        scratch = pathlib.Path(scratch)
        emulator = Emulator(scratch / "s3")
        try:
            env = bucket_server.s3_env(emulator.url, TESSERA_UPLOAD_PARALLEL=str(a.parallel),
                                       TESSERA_UPLOAD_PART_SIZE=str(PART), TESSERA_HTTP_RETRIES="4",
                                       TESSERA_STAGING_DIR=str(scratch))
            client = bucket_server.boto3_client(emulator.url)
            config = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART, max_concurrency=a.parallel)
            local_tet = a.data_dir / "upload.tet"
            if not local_tet.exists():
                subprocess.run([a.cli, "tet", "synth", local_tet, "--dataset", spec], check=True, capture_output=True)
            size = local_tet.stat().st_size
            print(f"large object: {size / 1e6:.1f} MB, {spec}, parts of {PART >> 20} MiB, {a.parallel} in flight")

            def boto3_large():
                t = time.perf_counter()
                client.upload_file(str(local_tet), BUCKET, "boto3/upload.tet", Config=config)
                return size / (time.perf_counter() - t) / 1e6

            emulator.emulate(0, 0)
            ceiling = statistics.median(boto3_large() for _ in range(max(1, a.repeat // 2 + 1)))
            print(f"ceiling (boto3, no emulation): {ceiling:.1f} MB/s")
            emulator.emulate(LATENCY_S, BANDWIDTH_BPS)

            def tessera_large():
                seconds, nbytes = tessera_upload_seconds(
                    [a.cli, "tet", "synth", f"s3://{BUCKET}/tessera/upload.tet", "--dataset", spec], env)
                assert nbytes == size
                return size / seconds / 1e6

            compare(summary, "large object upload, tessera / boto3", a.repeat, tessera_large, boto3_large)

            dataset = cells_dataset(a.cli, a.data_dir, a.cells, 2000, 2000, keep_h5ad=True)
            files = sorted(p for p in dataset.rglob("*") if p.is_file() and not p.name.startswith("."))
            total = sum(p.stat().st_size for p in files)
            h5ad = dataset.parent / "input.h5ad"
            print(f"many objects: {len(files)} objects, {total / 1e6:.1f} MB")

            def tessera_many():
                seconds, nbytes = tessera_upload_seconds(
                    [a.cli, "cells", "convert", "--h5ad-glob", h5ad, "--output", f"s3://{BUCKET}/tessera/ds",
                     "--tile-size", "2000", "--quiet", "--overwrite"], env)
                return nbytes / seconds / 1e6

            def boto3_many():
                t = time.perf_counter()
                keys = [(p, "boto3/ds/" + p.relative_to(dataset).as_posix()) for p in files]
                last = [k for k in keys if k[1].endswith("manifest.json")]
                with concurrent.futures.ThreadPoolExecutor(a.parallel) as pool:
                    list(pool.map(lambda pk: client.put_object(Bucket=BUCKET, Key=pk[1], Body=pk[0].read_bytes()),
                                  [k for k in keys if k not in last]))
                for p, k in last:
                    client.put_object(Bucket=BUCKET, Key=k, Body=p.read_bytes())
                return total / (time.perf_counter() - t) / 1e6

            compare(summary, "many objects upload, tessera / boto3", a.repeat, tessera_many, boto3_many)
            summary.add("ceiling: boto3 without emulation", f"{ceiling:.1f} MB/s")
        finally:
            emulator.close()
    summary.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

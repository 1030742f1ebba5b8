"""A soak under network faults: scans, index changes and catalog refreshes from several
processes and threads at once, against the S3 test server behind the fault proxy.

    python scripts/soak.py --minutes 10 [--processes 2] [--readers 3] [--seed 22] [--rate 0.1]

moto's S3 and the fault proxy run in this process; each worker process runs reader
threads (scans with a random predicate, rows compared with pyarrow's reading of the local
copies), one index thread (``add_indexes``/``drop_indexes`` on a random object, the stored
object checked whole afterwards) and one catalog thread (build or refresh, then a scan).
Every few seconds the workers' resident memory and open descriptors are sampled. The
summary gives requests, faults injected by type, retries, outcomes by kind (typed errors
are allowed; wrong answers and untyped errors are not), and memory and descriptors at the
start (after a warm-up), the end and the peak. Exit status 1 if any answer was wrong or
memory or descriptors grew.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fault_proxy import FAULTS, FaultProxy, Schedule
from fault_workload import (
    Dataset,
    Tally,
    checked_catalog,
    checked_index_change,
    checked_scan,
    make_dataset,
)
from s3server import s3_server

BUCKET = "soak"
#: Memory or descriptors may grow this much past the warm-up before the soak fails.
RSS_SLACK_MB = 64
FD_SLACK = 16


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError(f"process {pid} has exited")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def worker(
    index: int,
    ds: Dataset,
    opts: dict[str, Any],
    s3_direct: dict[str, Any],
    until: float,
    readers: int,
    seed: int,
    out: Any,
) -> None:
    """One process: reader threads, an index thread and a catalog thread until ``until``."""
    import boto3

    client = boto3.client("s3", **s3_direct)
    tallies: dict[str, Tally] = {}
    lock = threading.Lock()

    def loop(role: str, n: int) -> None:
        rng = random.Random(f"{seed}-{index}-{role}-{n}")
        tally = Tally()
        while time.time() < until:
            if role == "scan":
                checked_scan(ds, opts, rng, tally)
            elif role == "index":
                checked_index_change(client, ds, opts, rng, tally, sole_writer=False)
                time.sleep(rng.uniform(0.2, 1.0))
            else:
                checked_catalog(ds, opts, rng, tally)
                time.sleep(rng.uniform(0.5, 2.0))
        with lock:
            tallies[f"{role}-{n}"] = tally

    threads = [threading.Thread(target=loop, args=("scan", n)) for n in range(readers)]
    threads += [
        threading.Thread(target=loop, args=("index", 0)),
        threading.Thread(target=loop, args=("catalog", 0)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((index, {k: v.__dict__ for k, v in tallies.items()}))


def summary_line(samples: list[float], warm: int) -> dict[str, float]:
    """The first sample, the one after the warm-up (``start``), the last and the peak."""
    return {
        "first": samples[0],
        "start": samples[min(warm, len(samples) - 1)],
        "end": samples[-1],
        "max": max(samples),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--readers", type=int, default=3, help="scan threads per process")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--rate", type=float, default=0.1, help="share of requests given a fault")
    ap.add_argument("--sample", type=float, default=5.0, help="seconds between memory samples")
    ap.add_argument("--json", type=Path, help="also write the summary here")
    args = ap.parse_args()

    import tempfile

    with s3_server() as s3, tempfile.TemporaryDirectory(prefix="pqindex-soak-") as tmp:
        client = s3.client()
        client.create_bucket(Bucket=BUCKET)
        ds = make_dataset(client, BUCKET, "data", Path(tmp) / "local")
        host, port = s3.endpoint.removeprefix("http://").split(":")
        proxy = FaultProxy((host, int(port)), stall_seconds=3.0).start()
        weights = {f: 1.0 for f in FAULTS}
        weights["replace"] = 0.3  # each fails the reads planned before it
        proxy.schedule = Schedule(seed=args.seed, rate=args.rate, weights=weights)
        proxy.on_replace = ds.replacer(client)
        opts = {
            **s3.options(through_proxy=False),
            "endpoint": proxy.endpoint,
            "timeout": 1,
            "retry_timeout": 15,
        }
        direct = {
            "endpoint_url": s3.endpoint,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "region_name": "us-east-1",
        }
        started = time.time()
        until = started + args.minutes * 60
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        procs = [
            ctx.Process(
                target=worker,
                args=(i, ds, opts, direct, until, args.readers, args.seed, out),
            )
            for i in range(args.processes)
        ]
        for p in procs:
            p.start()
        rss: dict[int, list[float]] = {p.pid: [] for p in procs if p.pid}
        fd: dict[int, list[float]] = {p.pid: [] for p in procs if p.pid}
        results: dict[int, dict[str, Any]] = {}
        while len(results) < len(procs):
            time.sleep(args.sample)
            for p in procs:
                # A worker that has exited (a zombie until joined) has no memory to show.
                if p.pid is None or not p.is_alive():
                    continue
                try:
                    rss[p.pid].append(rss_mb(p.pid))
                    fd[p.pid].append(fds(p.pid))
                except OSError:
                    pass
            while not out.empty():
                i, tallies = out.get()
                results[i] = tallies
            if time.time() > until + 300:
                print("workers did not finish 5 minutes after the end: a hang", file=sys.stderr)
                for p in procs:
                    p.kill()
                return 1
        for p in procs:
            p.join()
        elapsed = time.time() - started
        counts = proxy.counts()
        proxy.stop()

    total = Tally()
    for tallies in results.values():
        for t in tallies.values():
            part = Tally()
            part.__dict__.update(t)
            total.merge(part)
    warm = max(1, int(60 / args.sample)) if args.minutes >= 3 else 1
    memory = {str(pid): summary_line(s, warm) for pid, s in rss.items() if s}
    descriptors = {str(pid): summary_line(s, warm) for pid, s in fd.items() if s}
    grew = [
        pid
        for pid in memory
        if memory[pid]["end"] - memory[pid]["start"] > RSS_SLACK_MB
        or descriptors[pid]["end"] - descriptors[pid]["start"] > FD_SLACK
    ]
    operations = sum(total.outcomes.values())
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "minutes": round(elapsed / 60, 2),
        "processes": args.processes,
        "threads_per_process": args.readers + 2,
        "fault_rate": args.rate,
        "seed": args.seed,
        "requests": counts["requests"],
        "requests_by_method": counts["requests_by_method"],
        "faults": counts["faults"],
        "faults_total": counts["faults_total"],
        "objects_replaced": ds.replaced,
        "retries_in_scan_metrics": total.retries,
        "requests_repeated_after_a_fault": counts["repeats_after_fault"],
        "operations": operations,
        "outcomes": dict(sorted(total.outcomes.items())),
        "wrong_answers": total.bad,
        "wrong_examples": total.wrong[:10],
        "error_examples": total.examples,
        "slowest_operation_s": round(total.slowest, 2),
        "rss_mb": memory,
        "fds": descriptors,
        "grew": grew,
        "load_average": os.getloadavg(),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if total.bad or grew else 0


if __name__ == "__main__":
    sys.exit(main())

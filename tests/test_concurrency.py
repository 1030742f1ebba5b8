"""Concurrency across threads and processes: scans from many threads at once; scans in
several processes while others change indexes, refresh the catalog and replace files of the
same dataset; concurrent writers of one file; errors met while a consumer drains a scan;
Ctrl-C during long scans and index builds; and a fork while the parent is mid-scan.

Every scan's rows are checked against a reference computed from the data written, so a torn
file, a stale footer or a stale catalog entry shows as wrong rows, not just as an error."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

# Predicates and how to evaluate them on a pyarrow table (the reference).
PREDICATES: list[tuple[str, Callable[[pa.Table], pa.Array]]] = [
    (
        '"u" BETWEEN 1000 AND 1400',
        lambda t: pc.and_(pc.greater_equal(t["u"], 1000), pc.less_equal(t["u"], 1400)),
    ),
    ("\"s\" = 'v-123'", lambda t: pc.equal(t["s"], "v-123")),
    (
        '"u" IN (5, 77, 12345) OR "k" < 20',
        lambda t: pc.or_(pc.is_in(t["u"], pa.array([5, 77, 12345])), pc.less(t["k"], 20)),
    ),
    (
        '"f" IS NULL AND "k" >= 39000',
        lambda t: pc.and_(pc.is_null(t["f"]), pc.greater_equal(t["k"], 39000)),
    ),
]


def make_table(n: int, seed: int) -> pa.Table:
    """``k`` sorted, ``u`` a permutation (unsorted), ``s`` strings, ``f`` floats with NULLs;
    different seeds give different contents for the same keys."""
    rng = np.random.default_rng(seed)
    u = rng.permutation(n)
    f = rng.random(n)
    return pa.table(
        {
            "k": pa.array(np.arange(n), pa.int64()),
            "u": pa.array(u, pa.int64()),
            "s": pa.array([f"v-{x % 5000}" for x in u]),
            "f": pa.array(f, mask=f < 0.1),
        }
    )


def write(table: pa.Table, path: Path) -> None:
    pq.write_table(
        table, path, row_group_size=10_000, data_page_size=8 * 1024, write_page_index=True
    )


def reference(table: pa.Table, i: int) -> list[int]:
    return sorted(table.filter(PREDICATES[i][1](table)).column("k").to_pylist())


def keys_of(scan: Any) -> list[int]:
    return sorted(scan.to_arrow().column("k").to_pylist())


def test_many_threads_scan_shared_files(data_dir: Path) -> None:
    tables = [make_table(40_000, seed) for seed in range(3)]
    paths = [data_dir / f"part-{i}.parquet" for i in range(3)]
    for t, p in zip(tables, paths, strict=True):
        write(t, p)
    pqindex.add_indexes(paths[0], [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s")])
    whole = pa.concat_tables(tables)
    expected = {
        ("all", i): sorted(whole.filter(PREDICATES[i][1](whole)).column("k").to_pylist())
        for i in range(len(PREDICATES))
    }
    for j, t in enumerate(tables):
        for i in range(len(PREDICATES)):
            expected[(j, i)] = reference(t, i)
    errors: list[BaseException] = []
    done = [0]
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(25):
                i = int(rng.integers(len(PREDICATES)))
                which = int(rng.integers(4))
                source: Any = data_dir if which == 3 else paths[which]
                got = keys_of(pqindex.scan(source, PREDICATES[i][0], threads=2))
                assert got == expected[("all" if which == 3 else which, i)], (source, i)
                with lock:
                    done[0] += 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[0]
    assert done[0] == 8 * 25


# A process of the mixed test: a role, the dataset, a directory of fixtures (the two versions
# of x.parquet the rewriter alternates, and the rows each predicate must give with each),
# and how long to run. Prints one JSON line of counts.
_ROLE = textwrap.dedent(
    """
    import json, os, shutil, sys, time, traceback
    import pqindex

    role, root, fixtures, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    with open(os.path.join(fixtures, "expected.json")) as f:
        expected = json.load(f)
    counts = {"role": role, "ops": 0, "typed_failures": 0, "failures": []}
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        i += 1
        try:
            if role == "reader":
                where, ok = expected[i % len(expected)]
                got = pqindex.scan(root, where, threads=2).to_arrow().column("k").to_pylist()
                got.sort()
                if got not in ok:
                    counts["failures"].append(f"wrong rows for {where}: {len(got)} rows")
            elif role == "indexer":
                path = os.path.join(root, ("a", "b", "x")[i % 3] + ".parquet")
                if i % 2:
                    distinct = pqindex.DistinctIndex("u", granularity="page")
                    pqindex.add_indexes(path, [distinct, pqindex.BloomIndex("s")])
                else:
                    pqindex.drop_indexes(path, kind="distinct")
            elif role == "catalog":
                if i % 4 == 1:
                    pqindex.Catalog.build(root, ["u", "k"], bloom=["s"])
                else:
                    pqindex.Catalog.open(root).refresh()
            elif role == "rewriter":
                tmp = os.path.join(root, ".x.rewrite.tmp")
                shutil.copyfile(os.path.join(fixtures, "x%d.parquet" % (i % 2)), tmp)
                os.replace(tmp, os.path.join(root, "x.parquet"))
            counts["ops"] += 1
        except pqindex.FileChangedError as e:
            # A writer racing the rewriter is refused, typed; a reader never may be.
            if role == "reader":
                counts["failures"].append(repr(e))
            else:
                counts["typed_failures"] += 1
        except Exception:
            counts["failures"].append(traceback.format_exc(limit=3))
    print(json.dumps(counts), flush=True)
    """
)


def run_mixed(root: Path, fixtures: Path, roles: list[str], seconds: float) -> list[dict[str, Any]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ROLE, role, str(root), str(fixtures), str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in roles
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=seconds + 60)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def test_scans_in_processes_while_others_change_the_dataset(tmp_path: Path) -> None:
    """Two processes scan a dataset while one adds and drops indexes on its files, one
    builds and refreshes its catalog, and one replaces a file by rename with other contents.
    Every scan gives the rows of the dataset with that file in one version or the other."""
    root, fixtures = tmp_path / "ds", tmp_path / "fixtures"
    root.mkdir()
    fixtures.mkdir()
    tables = {
        name: make_table(40_000, seed) for name, seed in (("a", 0), ("b", 1), ("x0", 2), ("x1", 3))
    }
    for name in ("a", "b"):
        write(tables[name], root / f"{name}.parquet")
    for name in ("x0", "x1"):
        write(tables[name], fixtures / f"{name}.parquet")
    shutil.copyfile(fixtures / "x0.parquet", root / "x.parquet")
    expected = []
    for i, (where, _) in enumerate(PREDICATES):
        fixed = reference(tables["a"], i) + reference(tables["b"], i)
        expected.append((where, [sorted(fixed + reference(tables[x], i)) for x in ("x0", "x1")]))
    (fixtures / "expected.json").write_text(json.dumps(expected))
    pqindex.Catalog.build(root, ["u", "k"], bloom=["s"])
    results = run_mixed(root, fixtures, ["reader", "reader", "indexer", "catalog", "rewriter"], 5.0)
    by_role: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_role.setdefault(r["role"], []).append(r)
    failures = [f for r in results for f in r["failures"]]
    assert not failures, failures[:3]
    assert sum(r["ops"] for r in by_role["reader"]) >= 20
    for role in ("indexer", "catalog", "rewriter"):
        assert by_role[role][0]["ops"] >= 3, by_role[role]
    # No temporary file survives, and every file is whole.
    left = [p.name for p in root.iterdir() if p.name.endswith((".pqindex-tmp", ".tmp"))]
    assert not left, left
    for name in ("a", "b", "x"):
        assert pq.read_table(root / f"{name}.parquet").num_rows == 40_000


_WRITER = textwrap.dedent(
    """
    import sys, pqindex
    path, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    index = {
        "distinct": pqindex.DistinctIndex("u"),
        "bloom": pqindex.BloomIndex("s", granularity="page"),
        "hll": pqindex.HllIndex("u"),
    }[kind]
    for _ in range(rounds):
        pqindex.add_indexes(path, [index])
        pqindex.drop_indexes(path, kind=kind)
    pqindex.add_indexes(path, [index])
    print("ok", flush=True)
    """
)


def test_concurrent_writers_of_one_file_serialise(data_dir: Path) -> None:
    """Writers in several processes and threads add and drop their own index on one file;
    they run one after the other, so at the end every writer's last change is there."""
    path = data_dir / "t.parquet"
    table = make_table(40_000, 0)
    write(table, path)
    kinds = ["distinct", "bloom", "hll"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), kind, "4"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kind in kinds[:2]
    ]
    errors: list[BaseException] = []

    def in_thread() -> None:
        try:
            for _ in range(4):
                pqindex.add_indexes(path, [pqindex.HllIndex("u")])
                pqindex.drop_indexes(path, kind="hll")
            pqindex.add_indexes(path, [pqindex.HllIndex("u")])
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=in_thread)
    t.start()
    for p in procs:
        _, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr
    t.join(timeout=60)
    assert not errors, errors
    assert sorted(i["kind"] for i in pqindex.list_indexes(path)) == sorted(kinds)
    assert all(c["ok"] for c in pqindex.verify(path))
    assert pq.read_table(path).equals(table)
    assert keys_of(pqindex.scan(path, PREDICATES[1][0])) == reference(table, 1)
    assert not [p for p in data_dir.iterdir() if p.name != "t.parquet"]


def test_errors_while_draining_are_typed(data_dir: Path) -> None:
    """A file overwritten in place after planning fails the read. ``to_arrow()`` raises the
    typed exception; the Arrow C stream (``pa.table(scan)``, a RecordBatchReader,
    ``polars.DataFrame(scan)``) can carry only a message, which names the file."""
    path = data_dir / "t.parquet"

    def planned() -> Any:
        write(make_table(40_000, 0), path)
        scan = pqindex.scan(path, '"k" >= 0')
        time.sleep(0.01)
        write(make_table(40_000, 1).slice(0, 30_000), path)  # same inode, other bytes
        return scan

    with pytest.raises(pqindex.FileChangedError, match=r"t\.parquet"):
        planned().to_arrow()
    with pytest.raises(pa.ArrowInvalid, match=r"t\.parquet") as e:
        pa.table(planned())
    assert "changed" in str(e.value)
    reader = pa.RecordBatchReader.from_stream(planned())
    with pytest.raises(pa.ArrowInvalid, match=r"t\.parquet"):
        for _ in reader:
            pass
    polars = pytest.importorskip("polars")
    with pytest.raises(polars.exceptions.ComputeError, match=r"t\.parquet"):
        polars.DataFrame(planned())


# Runs one long call and prints "interrupted" and how many pqindex worker threads are still
# alive when Ctrl-C stops it: none, or the work would go on after the KeyboardInterrupt
# (finishing a change the user interrupted, or killed half-way when the process exits).
_INTERRUPTED = textwrap.dedent(
    """
    import glob, sys, time, pqindex
    op, path = sys.argv[1], sys.argv[2]

    def workers():
        names = []
        for comm in glob.glob("/proc/self/task/*/comm"):
            try:
                names.append(open(comm).read().strip())
            except OSError:
                pass  # the thread ended
        return names.count("pqindex")

    print("start", flush=True)
    began = time.monotonic()
    indexes = [pqindex.NgramIndex("s"), pqindex.DistinctIndex("u", granularity="page")]
    try:
        if op == "add":
            pqindex.add_indexes(path, indexes)
        elif op == "add_in_place":
            pqindex.add_indexes(path, indexes, in_place=True)
        elif op == "catalog":
            pqindex.Catalog.build(path, ["u", "k"], bloom=["s", "u"])
        elif op == "scan":
            pqindex.scan(path, '"s" LIKE \\'%-%\\'', threads=1, batch_size=8192).to_arrow()
        print("finished", round(time.monotonic() - began, 3), flush=True)
    except KeyboardInterrupt:
        deadline = time.monotonic() + 0.2  # a thread that has sent its result may linger
        while workers() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("interrupted", workers(), flush=True)
    """
)


def big_table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    u = pa.array(rng.permutation(n), pa.int64())
    other = pc.cast(pc.bit_wise_and(pc.multiply(u, 7919), 0xFFFFF), pa.string())
    s = pc.binary_join_element_wise("v", pc.cast(u, pa.string()), other, "-")
    return pa.table({"k": pa.array(np.arange(n), pa.int64()), "u": u, "s": s})


def _child(op: str, path: Path) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED, op, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "start"
    return p


def duration(op: str, path: Path) -> float:
    """How long ``op`` takes on ``path`` when nothing stops it, so that the interrupting run
    can send its signal half-way through on a fast machine as on a loaded one."""
    out, err = _child(op, path).communicate(timeout=120)
    word, seconds = out.split()
    assert word == "finished", err
    return float(seconds)


def interrupt(op: str, path: Path, after: float) -> tuple[str, float]:
    """Run ``op`` on ``path`` in a child, send it SIGINT ``after`` seconds after it starts,
    and return what it printed last and how long it took to stop after the signal."""
    p = _child(op, path)
    assert p.stdout is not None
    time.sleep(after)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    last = p.stdout.readline().strip()
    stopped = time.monotonic() - sent
    p.communicate(timeout=30)
    return last, stopped


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.parquet"
    pq.write_table(big_table(1_000_000), path, row_group_size=100_000, write_page_index=True)
    return path


@pytest.mark.parametrize("op", ["add", "add_in_place"])
def test_ctrl_c_stops_an_index_build_promptly_and_leaves_no_temporary_file(
    op: str, big_file: Path, tmp_path: Path
) -> None:
    trial = big_file.parent / f"{op}-trial.parquet"
    trial.write_bytes(big_file.read_bytes())
    took = duration(op, trial)
    assert took > 0.1, took  # long enough to be stopped half-way
    path = tmp_path / "t.parquet"
    path.write_bytes(big_file.read_bytes())
    before = path.read_bytes()
    last, stopped = interrupt(op, path, took / 2)
    assert last == "interrupted 0", last
    assert stopped < 1.0, stopped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
    if path.read_bytes() != before:
        # The signal came after the build had committed (the child's run was faster than
        # its timing run): then the file is the new one, whole, never a mix.
        kinds = sorted(i["kind"] for i in pqindex.list_indexes(path))
        assert len(kinds) == 2, kinds
    assert pqindex.recover(path) == "nothing"
    assert pq.read_table(path).num_rows == 1_000_000


def test_ctrl_c_stops_a_long_scan(big_file: Path, tmp_path: Path) -> None:
    for i in range(8):  # 8 million rows, all selected, read on one thread
        os.link(big_file, tmp_path / f"part-{i}.parquet")
    last, stopped = interrupt("scan", tmp_path, 0.5)
    assert last == "interrupted 0", last
    assert stopped < 1.0, stopped


def test_ctrl_c_stops_a_catalog_build(big_file: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.parquet"
    pq.write_table(big_table(100_000), one, row_group_size=20_000, write_page_index=True)
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(40):  # each file summarised (blooms of two columns) in well under 1 s
        os.link(one, root / f"part-{i:03d}.parquet")
    took = duration("catalog", root)
    assert took > 0.1, took
    shutil.rmtree(root / "_pqindex")
    last, stopped = interrupt("catalog", root, took / 2)
    assert last == "interrupted 0", last
    assert stopped < 1.0, stopped
    catalog_dir = root / "_pqindex"
    assert not catalog_dir.exists() or not [
        p for p in catalog_dir.iterdir() if p.name.startswith(".")
    ]
    assert pqindex.Catalog.open(root) is None


# Forks while the parent is mid-scan: a scan's stream half read (its reading threads parked
# with batches waiting) and a cache filled by other threads. Each child scans (new threads,
# the metadata cache) and must finish; the parent then finishes its own scan.
_FORKED = textwrap.dedent(
    """
    import os, sys, time
    import pyarrow as pa
    import pqindex
    path, forks = sys.argv[1], int(sys.argv[2])
    pqindex.scan(path, '"u" = 7').to_arrow()  # every lazy import done before forking
    scan = pqindex.scan(path, '"k" >= 0', batch_size=1000, threads=2)
    reader = pa.RecordBatchReader.from_stream(scan)
    rows = reader.read_next_batch().num_rows
    time.sleep(0.3)  # the reading threads fill their window and park
    hung = 0
    for _ in range(forks):
        pid = os.fork()
        if pid == 0:
            n = pqindex.scan(path, '"u" = 7').to_arrow().num_rows
            pqindex.metadata_cache_info()
            os._exit(0 if n == 1 else 3)
        deadline = time.monotonic() + 10
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0, status
                break
            if time.monotonic() > deadline:
                hung += 1
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.005)
    rows += sum(b.num_rows for b in reader)
    print(hung, rows, flush=True)
    """
)


def test_a_fork_while_the_parent_scans_does_not_deadlock_the_child(data_dir: Path) -> None:
    """Spark forks its Python workers, and other libraries fork too, from processes that may
    be scanning: the child must not need a lock or thread of the parent's. (A child forked
    while the parent's metadata cache lock is held is covered by the Rust test
    ``metadata::cache::tests``; see docs/reliability-concurrency.md for the allocator.)"""
    path = data_dir / "t.parquet"
    # 40 row groups: more units than the stream reads ahead, so its threads wait mid-scan.
    pq.write_table(make_table(40_000, 0), path, row_group_size=1000, write_page_index=True)
    out = subprocess.run(
        [sys.executable, "-c", _FORKED, str(path), "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "40000"]

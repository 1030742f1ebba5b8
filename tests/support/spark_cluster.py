"""A Spark standalone cluster on loopback for tests: a master and workers started from the
pyspark package's ``spark-class``, so that executors are JVMs of their own, with their own
Python workers and working directories and no view of the driver's memory, and can be
killed as a lost machine would be.

Everything the cluster writes (its daemons' stdout and stderr, the workers' work dirs with
each executor's logs, local dirs, the ``TMPDIR`` of every process it starts) lives under one
root directory, which the caller keeps when a test fails. Every process the cluster starts
carries a marker in its environment, passed on to executors and their Python workers, so
that ``stop`` finds the ones that outlive their parents and checks that none is left.

Only Linux is supported: processes are found through ``/proc``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

#: The environment variable holding a cluster's token in every process it starts.
MARKER = "PQINDEX_TEST_CLUSTER"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

T = TypeVar("T")


class ClusterError(RuntimeError):
    """The cluster did not start or stop as it should; the message says where its logs are."""


def spark_home() -> Path:
    """The Spark that ships inside the pyspark package (``bin/spark-class``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).parent


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports, held together while chosen so none repeats."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def wait_until(
    condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.25
) -> T:
    """``condition()``'s first truthy value, polled until ``timeout`` seconds have passed.
    Connection errors count as "not yet" (a daemon still starting); other errors propagate,
    so a dead process fails the wait at once instead of at its end."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except (OSError, ValueError) as error:
            last = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last is not None else ""
            raise TimeoutError(f"{what} within {timeout:.0f} s{detail}")
        time.sleep(interval)


# --- processes, through /proc --------------------------------------------------------------


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _read_proc(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:  # gone, or not ours to read
        return b""


def command_line(pid: int) -> list[str]:
    """The arguments ``pid`` was started with ([] once it is gone)."""
    raw = _read_proc(pid, "cmdline")
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``; the command name in parentheses may hold spaces."""
    raw = _read_proc(pid, "stat").decode(errors="replace")
    if ")" not in raw:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def is_running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie waiting to be reaped."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def parent_of(pid: int) -> int | None:
    stat = _stat(pid)
    return stat[1] if stat is not None else None


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, children before grandchildren."""
    children: dict[int, list[int]] = {}
    for p in _pids():
        parent = parent_of(p)
        if parent is not None:
            children.setdefault(parent, []).append(p)
    out: list[int] = []
    frontier = [pid]
    while frontier:
        nxt = [c for p in frontier for c in children.get(p, [])]
        out.extend(nxt)
        frontier = nxt
    return [p for p in out if is_running(p)]


def _flag(args: list[str], name: str) -> str | None:
    """The value after ``name`` in a command line."""
    for i, arg in enumerate(args[:-1]):
        if arg == name:
            return args[i + 1]
    return None


def _signal(pid: int, sig: signal.Signals, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(missing)"
    return "\n".join(text.splitlines()[-lines:])


# --- the cluster ---------------------------------------------------------------------------


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, on
    127.0.0.1 and free ports, everything under ``root``. ``start()``, then sessions with
    ``master_url``; ``stop()`` ends every process it started."""

    root: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    #: Heap of the master and worker JVMs (Spark's default is 1g each).
    daemon_memory: str = "384m"
    #: JVM options of the master and workers (SPARK_DAEMON_JAVA_OPTS).
    java_options: str = ""
    #: The Python of the executors' Python workers: this one, which has pqindex.
    python: str = sys.executable
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    _daemons: list[_Daemon] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        ports = free_ports(2 + 2 * self.workers)
        self.master_port, self.master_ui_port = ports[0], ports[1]
        #: (port, web UI port) of each worker.
        self.worker_ports = [(ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(self.workers)]
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self.master_ui = f"http://127.0.0.1:{self.master_ui_port}"
        self.log_dir = self.root / "logs"
        self.tmp_dir = self.root / "tmp"
        self.conf_dir = self.root / "conf"
        #: Each worker's SPARK_WORKER_DIR: one directory per executor, holding its stdout,
        #: stderr and working directory.
        self.work_dirs = [self.root / f"worker-{i}" / "work" for i in range(self.workers)]

    # --- starting --------------------------------------------------------------------------

    def _environment(self, **extra: str) -> dict[str, str]:
        """This process's environment without what would point Spark or PySpark elsewhere,
        plus the cluster's settings and its marker."""
        dropped = {
            "SPARK_HOME",
            "SPARK_CONF_DIR",
            "SPARK_ENV_LOADED",
            "SPARK_REMOTE",
            "SPARK_CONNECT_MODE_ENABLED",
            "PYSPARK_DRIVER_PYTHON",
            "PYSPARK_GATEWAY_PORT",
            "PYSPARK_GATEWAY_SECRET",
        }
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_DAEMON_JAVA_OPTS=self.java_options,
            PYSPARK_PYTHON=self.python,
            TMPDIR=str(self.tmp_dir),
            **{MARKER: self.token},
        )
        env.update(extra)
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        home = self.root / name
        home.mkdir(parents=True, exist_ok=True)
        stdout, stderr = self.log_dir / f"{name}.out", self.log_dir / f"{name}.err"
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            # A session of its own: the daemon and the executors it forks form one process
            # group, signalled as one at stop. spark-class ends by exec'ing the JVM.
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self._daemons.append(_Daemon(name, process, stdout, stderr))

    def _check_daemons(self) -> None:
        for d in self._daemons:
            code = d.process.poll()
            if code is not None:
                raise ClusterError(f"the {d.name} exited with code {code} while starting")

    def start(self, timeout: float = 90.0) -> None:
        """Start the master, then the workers, and wait until the master shows them all
        ALIVE (at most ``timeout`` seconds in all); on failure everything started is
        stopped and the error carries the logs' tails."""
        for d in (self.log_dir, self.tmp_dir, self.conf_dir, *self.work_dirs):
            d.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        try:
            self._spawn(
                "master",
                [
                    MASTER_CLASS,
                    *("--host", "127.0.0.1"),
                    *("--port", str(self.master_port)),
                    *("--webui-port", str(self.master_ui_port)),
                ],
                self._environment(SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false"),
            )
            wait_until(
                lambda: self._check_daemons() or self.master_state().get("status") == "ALIVE",
                max(1.0, deadline - time.monotonic()),
                f"the master did not answer ALIVE at {self.master_ui}/json/",
            )
            for i, (port, ui_port) in enumerate(self.worker_ports):
                local = self.root / f"worker-{i}" / "local"
                local.mkdir(parents=True, exist_ok=True)
                self._spawn(
                    f"worker-{i}",
                    [
                        WORKER_CLASS,
                        *("--host", "127.0.0.1"),
                        *("--port", str(port)),
                        *("--webui-port", str(ui_port)),
                        *("--cores", str(self.cores)),
                        *("--memory", self.memory),
                        *("--work-dir", str(self.work_dirs[i])),
                        self.master_url,
                    ],
                    self._environment(
                        SPARK_WORKER_DIR=str(self.work_dirs[i]),
                        SPARK_LOCAL_DIRS=str(local),
                        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
                    ),
                )
            wait_until(
                lambda: self._check_daemons() or len(self.alive_workers()) >= self.workers,
                max(1.0, deadline - time.monotonic()),
                f"{self.workers} workers did not register ALIVE with the master",
            )
        except BaseException as error:
            report = self.logs_report()
            self.stop(check=False)
            raise ClusterError(f"{error}\n{report}") from error

    # --- looking at it ---------------------------------------------------------------------

    def master_state(self) -> dict[str, Any]:
        """The master's JSON state: status, workers (with their state), applications."""
        # No proxy from the environment for a loopback address.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.master_ui}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def alive_workers(self) -> list[dict[str, Any]]:
        return [w for w in self.master_state().get("workers", []) if w.get("state") == "ALIVE"]

    def app_confs(self) -> dict[str, str]:
        """What an application needs to run here: the master, a driver on loopback, the
        executors' Python. PySpark passes a session's settings to its gateway JVM as system
        properties, which later sessions of the process inherit, so nothing here names a
        path of the cluster's (the driver's local dirs stay Spark's default)."""
        return {
            "spark.master": self.master_url,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.pyspark.python": self.python,
            "spark.executorEnv.PYSPARK_PYTHON": self.python,
        }

    def processes(self) -> list[int]:
        """Every live process this cluster started, found by its marker: daemons,
        executors, Python daemons and workers."""
        needle = f"{MARKER}={self.token}".encode()
        own = os.getpid()
        return [
            pid
            for pid in _pids()
            if pid != own and is_running(pid) and needle in _read_proc(pid, "environ").split(b"\0")
        ]

    def executor_pids(self, app_id: str) -> dict[str, int]:
        """Executor id -> pid of the application's live executor JVMs (the workers start
        them as ``CoarseGrainedExecutorBackend ... --app-id <id>``)."""
        out: dict[str, int] = {}
        for pid in self.processes():
            args = command_line(pid)
            if EXECUTOR_CLASS in args and _flag(args, "--app-id") == app_id:
                out[_flag(args, "--executor-id") or "?"] = pid
        return dict(sorted(out.items(), key=lambda item: item[0]))

    def executor_of(self, pid: int) -> int | None:
        """The executor JVM that ``pid`` (a Python worker, say) runs under."""
        current: int | None = pid
        while current is not None and current > 1:
            if EXECUTOR_CLASS in command_line(current):
                return current
            current = parent_of(current)
        return None

    def owns(self, pid: int) -> bool:
        """Whether ``pid`` carries this cluster's marker."""
        return f"{MARKER}={self.token}".encode() in _read_proc(pid, "environ").split(b"\0")

    def kill_executor(
        self, pid: int, *, python_workers: bool = False, first: tuple[int, ...] = ()
    ) -> tuple[list[int], list[int]]:
        """SIGKILL the executor JVM ``pid``: its tasks die with it, as on a lost machine.
        Its Python daemon sees the JVM gone (stdin closed) and hangs up its workers, which
        may first react to their closed sockets (and clean up); with ``python_workers``
        they are killed in the same instant instead, as when a whole container is killed,
        ``first`` (a worker caught writing) before anything else. Returns the pids
        signalled and the processes that ran under the JVM."""
        if EXECUTOR_CLASS not in command_line(pid) or not self.owns(pid):
            raise ClusterError(f"{pid} is not an executor of this cluster")
        signalled = []
        for victim in first if python_workers else ():
            _signal(victim, signal.SIGKILL)
            signalled.append(victim)
        under = descendants(pid)  # before the JVM dies and they move to init
        _signal(pid, signal.SIGKILL)
        signalled.append(pid)
        for victim in under if python_workers else ():
            if victim not in signalled:
                _signal(victim, signal.SIGKILL)
                signalled.append(victim)
        return signalled, sorted(set(under) | set(first))

    def logs_report(self, lines: int = 25) -> str:
        """Where the logs are, and their last lines (the daemons', then each executor's)."""
        parts = [f"Spark cluster root (logs, work dirs): {self.root}"]
        for d in self._daemons:
            for path in (d.stdout, d.stderr):
                parts.append(f"--- {path} (last {lines} lines)\n{_tail(path, lines)}")
        for work in self.work_dirs:
            for path in sorted(work.glob("app-*/*/stderr")):
                parts.append(f"--- {path} (last {lines} lines)\n{_tail(path, lines)}")
        return "\n".join(parts)

    # --- stopping --------------------------------------------------------------------------

    def stop(self, timeout: float = 20.0, *, check: bool = True) -> None:
        """SIGTERM the workers' and the master's process groups (workers first, so they
        stop their executors), SIGKILL what is left after ``timeout`` seconds, then every
        process still carrying the marker (executors and Python daemons outlive a worker
        killed hard). With ``check``, fail if any process of the cluster survives that."""
        for d in reversed(self._daemons):
            _signal(d.process.pid, signal.SIGTERM, group=True)
        deadline = time.monotonic() + timeout
        for d in reversed(self._daemons):
            try:
                d.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(d.process.pid, signal.SIGKILL, group=True)
                d.process.wait(10)
        try:
            wait_until(lambda: not self.processes(), 5.0, "", interval=0.1)
        except TimeoutError:
            for pid in self.processes():
                _signal(pid, signal.SIGKILL)
        try:
            wait_until(lambda: not self.processes(), 10.0, "", interval=0.1)
        except TimeoutError:
            if check:
                left = {pid: " ".join(command_line(pid))[:200] for pid in self.processes()}
                raise ClusterError(f"processes of the cluster survived SIGKILL: {left}") from None


# --- the application's side ----------------------------------------------------------------


def registered_executors(spark: Any) -> int:
    """How many executors the driver has registered (its status tracker lists itself too)."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    return max(0, len(tracker.getExecutorInfos()) - 1)


def wait_for_executors(
    cluster: StandaloneCluster, spark: Any, count: int, timeout: float = 90.0
) -> dict[str, int]:
    """Wait until the driver has ``count`` executors registered and as many executor JVMs
    run (a killed one is replaced by the master on its worker); their pids by id."""
    app_id = spark.sparkContext.applicationId

    def ready() -> dict[str, int] | None:
        pids = cluster.executor_pids(app_id)
        return pids if len(pids) == count and registered_executors(spark) == count else None

    try:
        return wait_until(ready, timeout, f"{count} executors did not register", interval=0.5)
    except TimeoutError as error:
        raise ClusterError(f"{error}\n{cluster.logs_report()}") from error


_TEMP_PID = re.compile(r"\.(\d+)-\d+\.(?:pqindex-)?tmp$|\.pqindex-(\d+)-[0-9a-f]+$")


def temp_pid(name: str) -> int | None:
    """The pid in the name of a temporary file pqindex writes, else None:
    ``.<name>.<pid>-<n>.pqindex-tmp`` (the Rust writer and index rewrites),
    ``.<name>.<pid>-<n>.tmp`` (catalog versions), ``.<name>.pqindex-<pid>-<hex>``
    (``pqindex.write`` with indexes)."""
    match = _TEMP_PID.search(name) if name.startswith(".") else None
    return None if match is None else int(match.group(1) or match.group(2))


def writer_of(root: Path) -> tuple[int, Path] | None:
    """A live process writing a file under ``root`` right now, found by the temporary file
    pqindex writes it under (``temp_pid``): (its pid, the file)."""
    for directory, _, names in os.walk(root):
        for name in names:
            pid = temp_pid(name)
            if pid is not None and is_running(pid):
                return pid, Path(directory, name)
    return None


@dataclass
class Kill:
    """One executor killed by an ``ExecutorKiller``: which, when, and what the stage showed."""

    executor_id: str
    pid: int
    signalled: list[int]
    #: The processes under the JVM when it was killed (its Python daemon and workers).
    under: list[int]
    seconds: float
    stage: str
    #: The temporary file its Python worker was writing, when the kill waited for one,
    #: and whether it was still there just after the kill (not renamed in between).
    writing: Path | None = None
    left: bool | None = None


class ExecutorKiller(threading.Thread):
    """SIGKILLs one executor of ``spark``'s application once a stage of ``tasks`` tasks has
    finished ``completed`` tasks and runs at least ``active`` (with one core per executor,
    ``active=2`` means both executors are in a task), that is, in the middle of the job.
    With ``writing_in``, it waits further for a Python worker to be writing a file there
    (``writer_of``) and kills that worker's executor, so the kill lands in the middle of a
    file. Used as a context manager around the job; ``kill`` says what was killed (None if
    the stage never got there, which the test should treat as a failure of its set-up)."""

    def __init__(
        self,
        cluster: StandaloneCluster,
        spark: Any,
        *,
        tasks: int,
        completed: int = 1,
        active: int = 2,
        python_workers: bool = False,
        writing_in: Path | None = None,
        timeout: float = 120.0,
    ) -> None:
        super().__init__(name="executor-killer", daemon=True)
        self.cluster, self.spark = cluster, spark
        self.tasks, self.completed, self.active = tasks, completed, active
        self.python_workers, self.timeout = python_workers, timeout
        self.writing_in = writing_in
        self.kill: Kill | None = None
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        self._started_at = time.monotonic()

    def run(self) -> None:
        try:
            tracker = self.spark.sparkContext.statusTracker()
            app_id = self.spark.sparkContext.applicationId
            deadline = self._started_at + self.timeout
            while not self._stop_event.is_set() and time.monotonic() < deadline:
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if (
                        info is not None
                        and info.numTasks == self.tasks
                        and info.numCompletedTasks >= self.completed
                        and info.numActiveTasks >= self.active
                    ):
                        if self._kill_one(app_id, str(info)):
                            return
                time.sleep(0.01 if self.writing_in is not None else 0.05)
        except BaseException as error:  # reported by the test through .error
            self.error = error

    def _kill_one(self, app_id: str, stage: str) -> bool:
        writer: tuple[int, Path] | None = None
        if self.writing_in is not None:
            writer = writer_of(self.writing_in)
            executor = self.cluster.executor_of(writer[0]) if writer is not None else None
            if writer is None or executor is None:
                return False
            signalled, under = self.cluster.kill_executor(
                executor, python_workers=self.python_workers, first=(writer[0],)
            )
            executor_id = _flag(command_line(executor), "--executor-id") or "?"
        else:
            executors = self.cluster.executor_pids(app_id)
            if not executors:
                return False
            executor_id, executor = next(iter(executors.items()))
            signalled, under = self.cluster.kill_executor(
                executor, python_workers=self.python_workers
            )
        seconds = time.monotonic() - self._started_at
        writing = writer[1] if writer is not None else None
        left = writing.exists() if writing is not None else None
        self.kill = Kill(executor_id, executor, signalled, under, seconds, stage, writing, left)
        return True

    def __enter__(self) -> ExecutorKiller:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop_event.set()
        self.join(30)

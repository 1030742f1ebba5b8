//! One helper for every long call: release the GIL while the work runs on a thread of its
//! own, and check for Ctrl-C while waiting, cancelling the work if the user interrupts.
//!
//! A cancelled call waits for its work to stop before it raises: work that writes (an
//! index rewrite, a catalog version) removes its temporary file on the way out, and a
//! process that exits on the KeyboardInterrupt would otherwise kill it half-way and leave
//! the file behind (or, if the process goes on, let it finish a change the user
//! interrupted). Work polls the flag often, so this wait is short; a second Ctrl-C stops
//! waiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

/// How often the waiting thread looks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

/// Run `f` without the GIL; `f` gets a flag it should poll to stop early.
pub fn run_blocking<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> T + Send + 'static,
{
    run_blocking_ticking(py, |_| Ok(()), f)
}

/// As `run_blocking`, calling `tick` with the GIL every 50 ms while `f` runs (to show
/// progress).
pub fn run_blocking_ticking<T, F>(
    py: Python<'_>,
    tick: impl Fn(Python<'_>) -> PyResult<()>,
    f: F,
) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> T + Send + 'static,
{
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    // `detach` needs a `Sync` closure; the lock is only ever taken by this thread.
    let rx = Mutex::new(rx);
    let worker_cancel = cancel.clone();
    // A kept thread, as the scans' workers are: a fresh one would start with a cold
    // allocator heap and cost its stack's page faults, every call.
    pqindex_core::spawn_kept(move || {
        let _ = tx.send(f(&worker_cancel));
    })
    .map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start a thread: {e}"))
    })?;
    let wait = |py: Python<'_>| {
        py.detach(|| {
            rx.lock()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
                .and_then(|rx| rx.recv_timeout(POLL))
        })
    };
    loop {
        match wait(py) {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals().and_then(|()| tick(py)) {
                    cancel.store(true, Ordering::Relaxed);
                    // Let the work stop and clean up; a second interrupt stops waiting.
                    while let Err(mpsc::RecvTimeoutError::Timeout) = wait(py) {
                        if py.check_signals().is_err() {
                            break;
                        }
                    }
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "pqindex worker thread panicked",
                ))
            }
        }
    }
}

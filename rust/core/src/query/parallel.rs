//! Running one function over many items on a few threads, in item order.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::threads;

/// The machine's cores: the default number of threads of a scan. Asked once per process:
/// the standard library reads the cgroup's CPU quota from several files on each call.
pub fn default_threads() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// Threads for work that waits on object-store requests rather than the CPU.
pub fn io_workers(threads: usize) -> usize {
    (threads * 8).clamp(1, 64)
}

/// `f` of every item, on `threads` threads (the caller's among them), in item order.
/// Workers stop at the first failure; the error of the earliest failed item is returned.
pub fn parallel_map<I: Sync, T: Send>(
    items: &[I],
    threads: usize,
    cancel: &AtomicBool,
    f: impl Fn(&I) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<Result<T>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let work = || loop {
        if cancel.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
            return;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { return };
        let r = f(item);
        failed.fetch_or(r.is_err(), Ordering::Relaxed);
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    };
    threads::scope(|s| {
        // The calling thread works too: it starts at once, with warm caches, while the
        // others wake up.
        for _ in 1..threads.clamp(1, items.len().max(1)) {
            s.spawn(work);
        }
        work();
    });
    let mut out = Vec::with_capacity(items.len());
    let mut stopped = false;
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            // Not run: a later item failed, or the work was cancelled.
            None => stopped = true,
        }
    }
    if stopped {
        return Err(Error::Cancelled);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_item_order_and_the_earliest_error_wins() {
        let items: Vec<u32> = (0..100).collect();
        let cancel = AtomicBool::new(false);
        let doubled = parallel_map(&items, 4, &cancel, |i| Ok(i * 2)).unwrap();
        assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        let failed = parallel_map(&items, 1, &cancel, |i| {
            if *i >= 10 {
                Err(Error::InvalidArgument(format!("item {i}")))
            } else {
                Ok(*i)
            }
        });
        assert!(matches!(failed, Err(Error::InvalidArgument(m)) if m == "item 10"));
        cancel.store(true, Ordering::Relaxed);
        assert!(matches!(
            parallel_map(&items, 2, &cancel, |i| Ok(*i)),
            Err(Error::Cancelled)
        ));
    }
}

//! Threads kept for the life of the process, for the scans' workers.
//!
//! A scan used to start fresh threads and let them end with it. Each fresh thread gets a
//! fresh allocator heap, and the first touch of its memory is a page fault that zeroes a
//! 2 MiB transparent huge page: the first scans of a process took 10-20 times their
//! steady time. Kept threads keep their heaps, so a scan reuses what the last one freed.
//!
//! A job never waits for a thread: it runs on an idle kept thread, or on a new one when
//! none is idle, exactly as if a thread had been spawned for it. Workers may therefore
//! block on one another (a stream's workers wait for its consumer) without a pool size
//! to deadlock on. A thread that finds `MAX_IDLE` threads already idle ends.
//!
//! A process forked from one with kept threads has none of them: its first job sees the
//! new process id and starts a new pool, never touching the parent's.

use std::any::Any;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Work for a kept thread, and the scope to tell once the thread is idle again.
struct Job {
    work: Box<dyn FnOnce() + Send + 'static>,
    scope: Option<Arc<ScopeState>>,
}

/// Idle threads kept at most; more than any scan starts at once on a 64-core machine.
const MAX_IDLE: usize = 128;
/// An idle thread ends after this long: the allocator has returned its freed memory to
/// the kernel by then (10 s), so the heap it kept is no longer warm.
const IDLE_FOR: Duration = Duration::from_secs(60);

/// The idle threads of one process, each waiting on its own channel. Jobs are sent to
/// them only under the lock, so a thread that leaves the list under the lock and finds
/// its channel empty can end without losing one.
struct Pool {
    pid: u32,
    /// Each idle thread's number (to leave the list by) and channel.
    idle: Mutex<Vec<(u64, Sender<Job>)>>,
}

impl Pool {
    fn idle(&self) -> MutexGuard<'_, Vec<(u64, Sender<Job>)>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The pool of this process. Pools are leaked: one per process lives as long as it does,
/// and a forked child must not touch (or free) its parent's.
fn pool() -> &'static Pool {
    static CURRENT: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());
    let pid = std::process::id();
    let seen = CURRENT.load(Ordering::Acquire);
    // SAFETY: `CURRENT` only ever holds null or a leaked, never-freed `Pool`.
    if let Some(pool) = unsafe { seen.as_ref() } {
        if pool.pid == pid {
            return pool;
        }
    }
    let fresh: &'static Pool = Box::leak(Box::new(Pool {
        pid,
        idle: Mutex::new(Vec::new()),
    }));
    match CURRENT.compare_exchange(
        seen,
        fresh as *const Pool as *mut Pool,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => fresh,
        // Another thread of this process installed one first (the losing `fresh` is
        // leaked: a few bytes, once per process).
        // SAFETY: as above.
        Err(current) => unsafe { &*current },
    }
}

/// Run `job` on a kept thread; an error only when no thread could be started (the job is
/// dropped then, as `std::thread::spawn` drops it).
pub fn spawn(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    run(Job {
        work: Box::new(job),
        scope: None,
    })
}

fn run(mut job: Job) -> std::io::Result<()> {
    let pool = pool();
    {
        let mut idle = pool.idle();
        // The most recently idle thread first: its heap is the warmest.
        while let Some((_, waiting)) = idle.pop() {
            match waiting.send(job) {
                Ok(()) => return Ok(()),
                Err(returned) => job = returned.0,
            }
        }
    }
    static NUMBER: AtomicU64 = AtomicU64::new(0);
    let number = NUMBER.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("pqindex-worker".into())
        .spawn(move || work(pool, job, (number, tx), rx))
        .map(drop)
}

/// A kept thread: its first job, then whatever is sent to it while idle.
fn work(pool: &'static Pool, first: Job, me: (u64, Sender<Job>), rx: Receiver<Job>) {
    let mut job = first;
    loop {
        let Job { work, scope } = job;
        // Every job reports its own panics (scoped ones to their handle); one that does
        // not must not end a thread others are about to send to.
        let _ = catch_unwind(AssertUnwindSafe(work));
        let keep = {
            let mut idle = pool.idle();
            let keep = idle.len() < MAX_IDLE;
            if keep {
                idle.push(me.clone());
            }
            keep
        };
        // Idle before the scope hears the job is done, so that the caller's next job
        // finds this thread rather than starting another.
        if let Some(scope) = scope {
            scope.finished();
        }
        if !keep {
            return;
        }
        job = match rx.recv_timeout(IDLE_FOR) {
            Ok(next) => next,
            Err(_) => {
                let mut idle = pool.idle();
                idle.retain(|(number, _)| *number != me.0);
                // Sent before this thread left the list.
                match rx.try_recv() {
                    Ok(next) => next,
                    Err(_) => return,
                }
            }
        };
    }
}

/// The jobs of one `scope` call: how many are still running, and whether one panicked
/// with no handle left to see it.
struct ScopeState {
    running: Mutex<usize>,
    done: Condvar,
    unseen_panics: AtomicUsize,
}

impl ScopeState {
    fn finished(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        if *running == 0 {
            self.done.notify_all();
        }
    }
}

/// Jobs that may borrow from the caller's stack, like `std::thread::Scope`.
pub struct Scope<'scope, 'env: 'scope> {
    state: Arc<ScopeState>,
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

/// A scoped job's result, like `std::thread::ScopedJoinHandle`.
pub struct ScopedJoinHandle<'scope, T> {
    packet: Arc<Packet<T>>,
    scope: PhantomData<&'scope ()>,
}

/// Where a scoped job leaves its result for the handle.
struct Packet<T> {
    result: Mutex<Option<std::thread::Result<T>>>,
    ready: Condvar,
    scope: Arc<ScopeState>,
}

impl<T> Drop for Packet<T> {
    fn drop(&mut self) {
        // Both the job and the handle are done with it: a panic still here was never
        // joined, and the scope raises it.
        let result = self.result.get_mut().unwrap_or_else(|e| e.into_inner());
        if matches!(result, Some(Err(_))) {
            self.scope.unseen_panics.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Run `f`, which may start jobs borrowing from the caller; returns once every job has
/// finished, like `std::thread::scope`. A job's panic goes to its handle's `join`; one
/// no handle took is raised here.
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let scope = Scope {
        state: Arc::new(ScopeState {
            running: Mutex::new(0),
            done: Condvar::new(),
            unseen_panics: AtomicUsize::new(0),
        }),
        scope: PhantomData,
        env: PhantomData,
    };
    let result = catch_unwind(AssertUnwindSafe(|| f(&scope)));
    // Wait whatever `f` did: the jobs borrow what the caller is about to free.
    let mut running = scope
        .state
        .running
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    while *running > 0 {
        running = scope
            .state
            .done
            .wait(running)
            .unwrap_or_else(|e| e.into_inner());
    }
    drop(running);
    match result {
        Err(panic) => resume_unwind(panic),
        Ok(_) if scope.state.unseen_panics.load(Ordering::Relaxed) > 0 => {
            panic!("a scoped job panicked")
        }
        Ok(value) => value,
    }
}

impl<'scope> Scope<'scope, '_> {
    /// Start `f` on a kept thread (a new one when none is idle).
    ///
    /// # Panics
    /// When no thread can be started, as `std::thread::Scope::spawn` does.
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let packet = Arc::new(Packet {
            result: Mutex::new(None),
            ready: Condvar::new(),
            scope: self.state.clone(),
        });
        let theirs = packet.clone();
        let work = move || {
            let result = catch_unwind(AssertUnwindSafe(f));
            *theirs.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            theirs.ready.notify_all();
        };
        let work: Box<dyn FnOnce() + Send + 'scope> = Box::new(work);
        // SAFETY: `scope` does not return before `running` is back to zero, and the job's
        // thread counts it down only once `work` has returned and been dropped, with
        // everything it captured (all that borrows from `'scope`); so no borrow outlives
        // what it borrows. `std::thread::scope` erases the lifetime the same way.
        let work = unsafe {
            std::mem::transmute::<
                Box<dyn FnOnce() + Send + 'scope>,
                Box<dyn FnOnce() + Send + 'static>,
            >(work)
        };
        *self.state.running.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let job = Job {
            work,
            scope: Some(self.state.clone()),
        };
        if let Err(e) = run(job) {
            // The job was dropped unrun: it no longer counts.
            self.state.finished();
            panic!("failed to start a thread: {e}");
        }
        ScopedJoinHandle {
            packet,
            scope: PhantomData,
        }
    }
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Wait for the job; its panic as the error, like `std::thread::ScopedJoinHandle::join`.
    pub fn join(self) -> Result<T, Box<dyn Any + Send + 'static>> {
        let mut result = self.packet.result.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = result.take() {
                return r;
            }
            result = self
                .packet
                .ready
                .wait(result)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn scoped_jobs_borrow_and_return_in_order() {
        let words = ["a".to_string(), "bb".to_string(), "ccc".to_string()];
        let lengths: Vec<usize> = scope(|s| {
            let handles: Vec<_> = words.iter().map(|w| s.spawn(move || w.len())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(lengths, vec![1, 2, 3]);
    }

    #[test]
    fn the_scope_waits_for_jobs_nobody_joined() {
        let done = AtomicUsize::new(0);
        scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    done.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 8);
    }

    #[test]
    fn a_joined_panic_is_the_handles_and_an_unjoined_one_the_scopes() {
        let joined = scope(|s| s.spawn(|| panic!("boom")).join());
        assert!(joined.is_err());
        let unjoined = catch_unwind(|| {
            scope(|s| {
                s.spawn(|| panic!("unseen"));
            })
        });
        assert!(unjoined.is_err());
    }

    #[test]
    fn threads_are_kept_and_reused() {
        // Sequential jobs find the thread the last one left idle.
        let names = Mutex::new(HashSet::new());
        for _ in 0..20 {
            scope(|s| {
                s.spawn(|| {
                    let id = format!("{:?}", std::thread::current().id());
                    names.lock().unwrap().insert(id);
                })
                .join()
                .unwrap();
            });
        }
        // Other tests run jobs at the same time; a handful of threads at most.
        assert!(
            names.lock().unwrap().len() < 20,
            "{:?}",
            names.lock().unwrap()
        );
    }

    #[test]
    fn jobs_that_wait_on_each_other_never_wait_for_a_thread() {
        // More jobs than any pool size, each blocked until all have started: a bounded
        // pool would deadlock here.
        let n = MAX_IDLE + 16;
        let started = Arc::new((Mutex::new(0usize), Condvar::new()));
        let (tx, rx) = channel();
        for _ in 0..n {
            let (started, tx) = (started.clone(), tx.clone());
            spawn(move || {
                let (count, all) = &*started;
                let mut c = count.lock().unwrap();
                *c += 1;
                all.notify_all();
                while *c < n {
                    c = all.wait(c).unwrap();
                }
                tx.send(()).unwrap();
            })
            .unwrap();
        }
        for _ in 0..n {
            rx.recv_timeout(Duration::from_secs(20)).unwrap();
        }
    }

    #[test]
    fn a_forked_child_starts_its_own_threads() {
        // Leave a kept thread idle in the parent, then run a job in a child.
        scope(|s| s.spawn(|| ()).join().unwrap());
        let ran = AtomicBool::new(false);
        // SAFETY: the child runs a job and leaves without unwinding.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe { libc::alarm(5) }; // a child that hangs dies of SIGALRM
            scope(|s| {
                s.spawn(|| ran.store(true, Ordering::SeqCst))
                    .join()
                    .unwrap()
            });
            let code = if ran.load(Ordering::SeqCst) { 0 } else { 1 };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
    }
}

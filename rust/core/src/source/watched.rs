//! Listings of local directories, kept while the kernel reports no change below them.
//!
//! Planning from a catalog costs little per file but the listing's stat of every file: its
//! size and modification time say whether the catalog still describes it. That is about
//! 2 µs a file with warm CPU caches and several times more after other work, most of a
//! lookup in a directory of thousands of files. A directory watched with inotify reports
//! every creation, deletion, rename, write and attribute change of its entries, so a
//! listing stays exact until an event arrives for one of its directories; it is then
//! listed (and stat-ed) again.
//!
//! Kept only where the events tell everything:
//! - on local file systems (a network file system reports no other host's changes);
//! - without symlinks or hard-linked files (a change through another name is reported to
//!   that name's directory only);
//! - while the root still names the directory that was watched (a parent renamed or a
//!   symlink retargeted raises no event here).
//!
//! Writes through a shared memory map raise no event; a file modified that way in place,
//! rather than rewritten, may be planned from its old listing until another change below
//! the directory is reported.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::Result;
use crate::io::FileIdentity;

/// A file found by a walk: its path, the directories between the root and it, and the file
/// as the walk saw it.
pub type Walked = (PathBuf, Vec<String>, FileIdentity);

/// What a walk asks before it reads a directory: whether changes below it will be reported.
pub type Watch<'a> = dyn FnMut(&Path) -> bool + 'a;

/// Listings kept at once; the oldest goes (and its watches) beyond this.
const KEPT_LISTINGS: usize = 256;
/// Directories one kept listing may watch.
const WATCHES_PER_LISTING: usize = 4096;

/// The walk of `root`, from a kept listing when nothing changed below it since. `walk`
/// lists the directory, calling its `Watch` argument before reading each directory, and
/// says whether every file it found is a plain file of one name (no symlink, one link).
pub fn listing(
    root: &Path,
    walk: impl FnOnce(&mut Watch<'_>) -> Result<(Vec<Walked>, bool)>,
) -> Result<Arc<Vec<Walked>>> {
    let Some(watcher) = watcher() else {
        return walk(&mut |_| false).map(|(files, _)| Arc::new(files));
    };
    let Some(root_id) = dir_id(root) else {
        return walk(&mut |_| false).map(|(files, _)| Arc::new(files));
    };
    if let Some(files) = watcher.kept(root, root_id) {
        return Ok(files);
    }
    let overflows = watcher.state().overflows;
    let mut watches = Vec::new();
    let mut watchable = true;
    // Once one directory cannot be watched, none more is: the listing will not be kept.
    let (files, plain) = walk(&mut |dir| {
        watchable = watchable
            && watches.len() < WATCHES_PER_LISTING
            && local_file_system(dir)
            && watcher.watch(dir).map(|w| watches.push(w)).is_some();
        watchable
    })?;
    let files = Arc::new(files);
    if plain {
        watcher.keep(root, root_id, files.clone(), watches, overflows);
    }
    Ok(files)
}

/// Forget every kept listing (the next scan of each lists again, as a new process would).
pub fn forget() {
    if let Some(watcher) = watcher() {
        let mut state = watcher.state();
        let kept = std::mem::take(&mut state.kept);
        state.order.clear();
        for gone in kept.values() {
            watcher.release(&mut state, &gone.watches);
        }
    }
}

/// A watched directory and how many events it had when a listing was taken.
#[derive(Clone, Copy)]
struct Watched {
    wd: i32,
    events: u64,
}

struct Kept {
    root_id: (u64, u64),
    /// Shared with the scans that use it: 100,000 paths are not copied per scan.
    files: Arc<Vec<Walked>>,
    watches: Vec<Watched>,
    /// `State::overflows` when the listing was taken.
    overflows: u64,
}

#[derive(Default)]
struct State {
    kept: HashMap<PathBuf, Kept>,
    /// Roots in the order their listings were kept.
    order: Vec<PathBuf>,
    /// Events seen per watch descriptor (any event: the listing is no longer known exact).
    events: HashMap<i32, u64>,
    /// Kept listings using each watch descriptor; removed from the kernel at none.
    users: HashMap<i32, usize>,
    /// Times the kernel's event queue overflowed (events were lost: nothing is known).
    overflows: u64,
}

struct Watcher {
    fd: OwnedFd,
    state: Mutex<State>,
    /// The process that made it.
    pid: u32,
}

/// The process's inotify instance; None where the kernel offers none, and in a child
/// forked from the process that made it: both would read events from one queue, and each
/// would miss the events the other took.
fn watcher() -> Option<&'static Watcher> {
    static WATCHER: OnceLock<Option<Watcher>> = OnceLock::new();
    WATCHER
        .get_or_init(|| {
            // SAFETY: a plain system call; a non-negative result is a new descriptor that
            // nothing else owns.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            (fd >= 0).then(|| Watcher {
                // SAFETY: `fd` is a fresh descriptor owned from here on.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                state: Mutex::new(State::default()),
                pid: std::process::id(),
            })
        })
        .as_ref()
        .filter(|w| w.pid == std::process::id())
}

impl Watcher {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watch `dir` for every change of its entries; the watch and its event count now.
    fn watch(&self, dir: &Path) -> Option<Watched> {
        let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mask = libc::IN_MODIFY
            | libc::IN_ATTRIB
            | libc::IN_CLOSE_WRITE
            | libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_DELETE_SELF
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), mask) };
        if wd < 0 {
            return None;
        }
        let mut state = self.state();
        self.drain(&mut state);
        Some(Watched {
            wd,
            events: state.events.get(&wd).copied().unwrap_or(0),
        })
    }

    /// The kept listing of `root`, if nothing was reported below it since it was taken.
    fn kept(&self, root: &Path, root_id: (u64, u64)) -> Option<Arc<Vec<Walked>>> {
        let mut state = self.state();
        self.drain(&mut state);
        let kept = state.kept.get(root)?;
        let exact = kept.root_id == root_id
            && kept.overflows == state.overflows
            && kept
                .watches
                .iter()
                .all(|w| state.events.get(&w.wd).copied().unwrap_or(0) == w.events);
        exact.then(|| kept.files.clone())
    }

    /// Keep the listing of `root` taken with `watches` from when the queue had overflowed
    /// `overflows` times, unless something changed (or may have) while it was taken.
    fn keep(
        &self,
        root: &Path,
        root_id: (u64, u64),
        files: Arc<Vec<Walked>>,
        watches: Vec<Watched>,
        overflows: u64,
    ) {
        let mut state = self.state();
        self.drain(&mut state);
        let changed = state.overflows != overflows
            || watches
                .iter()
                .any(|w| state.events.get(&w.wd).copied().unwrap_or(0) != w.events);
        if changed || watches.is_empty() {
            return;
        }
        let kept = Kept {
            root_id,
            files,
            watches,
            overflows,
        };
        for w in &kept.watches {
            *state.users.entry(w.wd).or_insert(0) += 1;
        }
        match state.kept.insert(root.to_path_buf(), kept) {
            Some(replaced) => self.release(&mut state, &replaced.watches),
            None => state.order.push(root.to_path_buf()),
        }
        while state.order.len() > KEPT_LISTINGS {
            let oldest = state.order.remove(0);
            if let Some(gone) = state.kept.remove(&oldest) {
                self.release(&mut state, &gone.watches);
            }
        }
    }

    /// A listing's watches are no longer used by it: remove those no kept listing uses.
    fn release(&self, state: &mut State, watches: &[Watched]) {
        for w in watches {
            let Some(users) = state.users.get_mut(&w.wd) else {
                continue;
            };
            *users -= 1;
            if *users == 0 {
                state.users.remove(&w.wd);
                state.events.remove(&w.wd);
                // SAFETY: a plain system call on our own descriptor.
                unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), w.wd) };
            }
        }
    }

    /// Count every queued event against its watch.
    fn drain(&self, state: &mut State) {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut buf = [0u8; 16 * 1024];
        loop {
            // SAFETY: `read` writes at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                // Nothing queued (EAGAIN), or a failure: a failure must not leave events
                // unread and listings trusted.
                if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock
                {
                    state.overflows += 1;
                }
                return;
            }
            let mut at = 0;
            while at + HEADER <= n as usize {
                // SAFETY: the kernel wrote a whole event header at `at`; it may be
                // unaligned in `buf`, so it is read unaligned.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf.as_ptr().add(at).cast()) };
                if event.mask & libc::IN_Q_OVERFLOW != 0 {
                    state.overflows += 1;
                } else {
                    *state.events.entry(event.wd).or_insert(0) += 1;
                }
                at += HEADER + event.len as usize;
            }
        }
    }
}

/// The device and inode of the directory `root` names now.
fn dir_id(root: &Path) -> Option<(u64, u64)> {
    let md = std::fs::metadata(root).ok()?;
    md.is_dir().then(|| (md.dev(), md.ino()))
}

/// Whether `dir` is on a local file system, whose changes inotify reports whoever makes
/// them.
fn local_file_system(dir: &Path) -> bool {
    const LOCAL: [i64; 8] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
    ];
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `statfs` fills the struct it is given when it returns 0.
    if unsafe { libc::statfs(path.as_ptr(), fs.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: initialised by the successful call above.
    #[allow(clippy::unnecessary_cast)] // `f_type`'s width differs between targets
    let kind = unsafe { fs.assume_init() }.f_type as i64;
    LOCAL.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::listing::walk;
    use std::cell::Cell;
    use std::io::Write;

    /// Held by each test: `forget` in one must not drop another's kept listing.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The listing of `root`, and whether it was walked (rather than kept).
    fn list(root: &Path) -> (Vec<(String, u64)>, bool) {
        let walked = Cell::new(false);
        let files = listing(root, |watch| {
            walked.set(true);
            let mut files = Vec::new();
            let plain = walk(root, root, &mut files, watch)?;
            Ok((files, plain))
        })
        .unwrap();
        let files = files
            .iter()
            .map(|(p, _, id)| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    id.size,
                )
            })
            .collect();
        (files, walked.get())
    }

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn a_listing_is_kept_until_a_change_below_it_is_reported() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(&root.join("a.parquet"), b"aaaa");
        std::fs::create_dir(root.join("k=1")).unwrap();
        write(&root.join("k=1/b.parquet"), b"bb");
        let (first, walked) = list(root);
        assert!(walked);
        assert_eq!(first, [("a.parquet".into(), 4), ("b.parquet".into(), 2)]);
        assert_eq!(list(root), (first.clone(), false), "kept: nothing changed");

        // Every kind of change is reported, in the root and in a subdirectory.
        type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let changes: Vec<Change<'_>> = vec![
            (
                "appended",
                Box::new(|| {
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(root.join("a.parquet"))
                        .unwrap();
                    f.write_all(b"a").unwrap();
                }),
            ),
            (
                "rewritten below",
                Box::new(|| write(&root.join("k=1/b.parquet"), b"bbb")),
            ),
            ("created", Box::new(|| write(&root.join("c.parquet"), b"c"))),
            (
                "renamed",
                Box::new(|| {
                    std::fs::rename(root.join("c.parquet"), root.join("d.parquet")).unwrap()
                }),
            ),
            (
                "touched",
                Box::new(|| {
                    let f = std::fs::File::options()
                        .write(true)
                        .open(root.join("d.parquet"))
                        .unwrap();
                    f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
                }),
            ),
            (
                "deleted",
                Box::new(|| std::fs::remove_file(root.join("d.parquet")).unwrap()),
            ),
        ];
        for (what, change) in changes {
            change();
            let (_, walked) = list(root);
            assert!(walked, "{what}: listed again");
            assert!(!list(root).1, "{what}: kept again");
        }
        assert_eq!(
            list(root).0,
            [("a.parquet".into(), 5), ("b.parquet".into(), 3)]
        );
    }

    /// How many kept listings use each watch of the kept listing of `root`.
    fn users(root: &Path) -> Vec<usize> {
        let state = watcher().unwrap().state();
        let kept = &state.kept[root];
        kept.watches.iter().map(|w| state.users[&w.wd]).collect()
    }

    #[test]
    fn a_listing_taken_again_releases_the_watches_of_the_one_it_replaces() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(&root.join("a.parquet"), b"a");
        list(root);
        assert_eq!(users(root), [1]);
        write(&root.join("b.parquet"), b"b");
        assert!(list(root).1);
        assert_eq!(users(root), [1], "the replaced listing's use is released");
        let wd = watcher().unwrap().state().kept[root].watches[0].wd;
        forget();
        assert!(!watcher().unwrap().state().users.contains_key(&wd));
    }

    #[test]
    fn forgotten_listings_are_listed_again() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("a.parquet"), b"a");
        list(dir.path());
        assert!(!list(dir.path()).1);
        forget();
        assert!(list(dir.path()).1);
    }

    #[test]
    fn a_root_that_names_another_directory_now_is_listed_again() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        std::fs::create_dir(&root).unwrap();
        write(&root.join("a.parquet"), b"a");
        list(&root);
        assert!(!list(&root).1);
        // Swapped in by renames of the parent's entries: no event reaches the old root's
        // watch about its name.
        let next = dir.path().join("next");
        std::fs::create_dir(&next).unwrap();
        write(&next.join("b.parquet"), b"bb");
        std::fs::rename(&root, dir.path().join("old")).unwrap();
        std::fs::rename(&next, &root).unwrap();
        let (files, walked) = list(&root);
        assert!(walked);
        assert_eq!(files, [("b.parquet".into(), 2)]);
    }

    #[test]
    fn listings_with_symlinks_or_hard_links_are_never_kept() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        write(&elsewhere.path().join("t.parquet"), b"t");

        let linked = dir.path().join("symlinked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("t.parquet"), linked.join("t.parquet"))
            .unwrap();
        list(&linked);
        assert!(list(&linked).1, "a symlink's target changes unreported");

        let hard = dir.path().join("hard");
        std::fs::create_dir(&hard).unwrap();
        std::fs::hard_link(elsewhere.path().join("t.parquet"), hard.join("t.parquet")).unwrap();
        list(&hard);
        assert!(
            list(&hard).1,
            "a write through the other name is reported there only"
        );
    }
}

//! A process-wide cache of parsed footers (and page indexes), bounded by bytes.
//!
//! Entries are keyed by path and checked against the file's full identity on every hit:
//! a file rewritten in place, even with the same size and mtime, changes its change time,
//! and a file replaced by rename changes its inode, so stale metadata is never served.

use std::sync::{Arc, Mutex, OnceLock};

use lru::LruCache;
use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::io::{FileIdentity, StorageFile};
use crate::metadata::encryption::Decryption;
use crate::metadata::footer::{load_page_index_with, read_footer_with};

pub const DEFAULT_CAPACITY: usize = 256 * 1024 * 1024;

struct Entry {
    identity: FileIdentity,
    metadata: Arc<ParquetMetaData>,
    page_index: bool,
    bytes: usize,
}

struct State {
    entries: LruCache<String, Entry>,
    bytes: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
}

pub struct MetadataCache {
    state: Mutex<State>,
    /// Keys for encrypted files. Only a cache of its own, made for the calls that were
    /// given the keys, holds them and what they decrypt; the process-wide one has none.
    decryption: Option<Decryption>,
}

/// Counters of a cache, for users and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheInfo {
    pub entries: usize,
    pub bytes: usize,
    pub capacity: usize,
    pub hits: u64,
    pub misses: u64,
}

/// What a lookup did, for the scan's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOutcome {
    pub footer_hit: bool,
    pub page_index_loaded: bool,
}

pub fn global_cache() -> &'static MetadataCache {
    static CACHE: OnceLock<MetadataCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        hold_across_fork();
        MetadataCache::new(DEFAULT_CAPACITY)
    })
}

thread_local! {
    static HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, State>>> =
        const { std::cell::RefCell::new(None) };
}

/// A process forked while another thread holds the global cache's lock (Spark forks its
/// Python workers from a driver that may be scanning) would copy it locked, with no thread
/// left to release it. The forking thread takes the lock around `fork` instead, so parent
/// and child both start with it free.
fn hold_across_fork() {
    extern "C" fn prepare() {
        let guard = global_cache().lock();
        HELD.with(|h| *h.borrow_mut() = Some(guard));
    }
    extern "C" fn release() {
        HELD.with(|h| h.borrow_mut().take());
    }
    // SAFETY: registers plain functions that take and release a lock on the forking thread.
    unsafe {
        libc::pthread_atfork(Some(prepare), Some(release), Some(release));
    }
}

impl MetadataCache {
    pub fn new(capacity: usize) -> Self {
        MetadataCache {
            state: Mutex::new(State {
                entries: LruCache::unbounded(),
                bytes: 0,
                capacity,
                hits: 0,
                misses: 0,
            }),
            decryption: None,
        }
    }

    /// A cache that decrypts encrypted files with `decryption`, for the calls given it.
    pub fn decrypting(capacity: usize, decryption: Decryption) -> Self {
        MetadataCache {
            decryption: Some(decryption),
            ..Self::new(capacity)
        }
    }

    /// The keys this cache decrypts with.
    pub fn decryption(&self) -> Option<&Decryption> {
        self.decryption.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map inconsistent (every update
        // is a single insert or pop), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The metadata of `file`, with the page index when `page_index` is set, from the
    /// cache when the cached entry belongs to this very version of the file.
    pub fn get(
        &self,
        file: &StorageFile,
        page_index: bool,
    ) -> Result<(Arc<ParquetMetaData>, LoadOutcome)> {
        let key = file.path().to_string();
        let cached = {
            let mut st = self.lock();
            let hit = match st.entries.get(&key) {
                Some(e) if &e.identity == file.identity().as_ref() => {
                    Some((e.metadata.clone(), e.page_index))
                }
                _ => None,
            };
            if hit.is_some() {
                st.hits += 1;
            } else {
                st.misses += 1;
            }
            hit
        };
        let mut outcome = LoadOutcome::default();
        let (metadata, has_index) = match cached {
            Some((md, has_index)) if has_index || !page_index => {
                outcome.footer_hit = true;
                return Ok((md, outcome));
            }
            Some((md, has_index)) => {
                outcome.footer_hit = true;
                (md, has_index)
            }
            None => (Arc::new(read_footer_with(file, self.decryption())?), false),
        };
        // On an object store the footer's tail read usually holds the page index too:
        // parsing it now costs no request, and saves a round trip when planning wants it.
        let page_index = page_index
            || (file.is_remote()
                && !has_index
                && crate::metadata::page_index::page_index_ranges(&metadata)
                    .iter()
                    .all(|r| file.is_buffered(r.clone())));
        let (metadata, has_index) = if page_index && !has_index {
            outcome.page_index_loaded = true;
            let footer = Arc::unwrap_or_clone(metadata);
            (
                Arc::new(load_page_index_with(file, footer, self.decryption())?),
                true,
            )
        } else {
            (metadata, has_index)
        };
        self.insert(
            key,
            file.identity().as_ref().clone(),
            metadata.clone(),
            has_index,
        );
        Ok((metadata, outcome))
    }

    /// The cached metadata of this very version of a file (as listed), without opening
    /// it. Not counted: a caller that does without [`Self::get`] calls [`Self::hit`].
    pub fn peek(&self, identity: &FileIdentity) -> Option<Arc<ParquetMetaData>> {
        let mut st = self.lock();
        match st.entries.get(&identity.path) {
            Some(e) if &e.identity == identity => Some(e.metadata.clone()),
            _ => None,
        }
    }

    /// Count a hit served by [`Self::peek`].
    pub fn hit(&self) {
        self.lock().hits += 1;
    }

    /// Whether the cache holds the metadata of this very version of a file.
    pub fn contains(&self, identity: &FileIdentity) -> bool {
        let st = self.lock();
        st.entries
            .peek(&identity.path)
            .is_some_and(|e| &e.identity == identity)
    }

    /// Put metadata obtained elsewhere (a catalog) for this version of a file.
    pub fn seed(&self, identity: FileIdentity, metadata: Arc<ParquetMetaData>, page_index: bool) {
        self.insert(identity.path.clone(), identity, metadata, page_index);
    }

    fn insert(
        &self,
        key: String,
        identity: FileIdentity,
        metadata: Arc<ParquetMetaData>,
        page_index: bool,
    ) {
        let bytes = metadata.memory_size() + key.len();
        let mut st = self.lock();
        if bytes > st.capacity {
            if let Some(old) = st.entries.pop(&key) {
                st.bytes -= old.bytes;
            }
            return;
        }
        if let Some(old) = st.entries.put(
            key,
            Entry {
                identity,
                metadata,
                page_index,
                bytes,
            },
        ) {
            st.bytes -= old.bytes;
        }
        st.bytes += bytes;
        while st.bytes > st.capacity {
            match st.entries.pop_lru() {
                Some((_, old)) => st.bytes -= old.bytes,
                None => break,
            }
        }
    }

    pub fn set_capacity(&self, capacity: usize) {
        let mut st = self.lock();
        st.capacity = capacity;
        while st.bytes > st.capacity {
            match st.entries.pop_lru() {
                Some((_, old)) => st.bytes -= old.bytes,
                None => break,
            }
        }
    }

    pub fn clear(&self) {
        let mut st = self.lock();
        st.entries.clear();
        st.bytes = 0;
        st.hits = 0;
        st.misses = 0;
    }

    pub fn info(&self) -> CacheInfo {
        let st = self.lock();
        CacheInfo {
            entries: st.entries.len(),
            bytes: st.bytes,
            capacity: st.capacity,
            hits: st.hits,
            misses: st.misses,
        }
    }
}

impl Default for MetadataCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_forked_while_another_thread_holds_the_lock_can_use_the_cache() {
        let cache = global_cache();
        let (held, go) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let _guard = cache.lock();
            held.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
        });
        go.recv().unwrap();
        // SAFETY: the child only uses the cache, then leaves without unwinding.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe { libc::alarm(5) }; // a deadlocked child dies of SIGALRM
            global_cache().info();
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        holder.join().unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
    }
}

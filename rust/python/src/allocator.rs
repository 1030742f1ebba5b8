//! The allocator of everything the extension allocates, and how long it keeps freed memory.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

/// Decoded columns are large, short-lived buffers. The system allocator returns them to
/// the kernel and page-faults fresh zeroed pages for the next batch; mimalloc keeps and
/// reuses them. Buffers handed to pyarrow are released through their Arrow release
/// callback, which frees them here, with the same allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in `mimalloc.h`'s `mi_option_e` (not exported by the bindings).
const PURGE_DELAY: mi_option_t = 15;
/// mimalloc 3's default purge delay, in ms: how `keep_freed_memory` knows `PURGE_DELAY`
/// still names that option.
const MIMALLOC_DEFAULT_MS: std::ffi::c_long = 1_000;
/// How long freed memory stays with the process, as jemalloc's `dirty_decay_ms` default.
const KEEP_MS: std::ffi::c_long = 10_000;

/// mimalloc returns freed memory to the kernel one second after it is freed. Scans free
/// hundreds of MB of decoded pages when they end; when the next scan comes more than a
/// second later, or the freed ranges were scheduled before being reused, it page-faults
/// that memory back in, zeroed: a full scan of three columns of TPC-H SF1 lineitem then
/// took 120-250 ms instead of 65. Ten seconds, unless `MIMALLOC_PURGE_DELAY` says
/// otherwise.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: reading and setting a mimalloc option is a plain store of a `long`; it runs
    // once, while the module is initialised, before the extension starts any thread.
    unsafe {
        if mi_option_get(PURGE_DELAY) == MIMALLOC_DEFAULT_MS {
            mi_option_set(PURGE_DELAY, KEEP_MS);
        }
    }
}

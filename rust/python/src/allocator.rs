//! The allocator of everything the extension allocates: how long it keeps freed memory,
//! and in which page size it asks the kernel for it.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

/// Decoded columns are large, short-lived buffers. The system allocator returns them to
/// the kernel and page-faults fresh zeroed pages for the next batch; mimalloc keeps and
/// reuses them. Buffers handed to pyarrow are released through their Arrow release
/// callback, which frees them here, with the same allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in `mimalloc.h`'s `mi_option_e` (not exported by the bindings).
const PURGE_DELAY: mi_option_t = 15;
/// mimalloc 3's default purge delay, in ms: how `tune` knows `PURGE_DELAY` still names
/// that option.
const MIMALLOC_DEFAULT_MS: std::ffi::c_long = 1_000;
/// How long freed memory stays with the process, as jemalloc's `dirty_decay_ms` default.
const KEEP_MS: std::ffi::c_long = 10_000;
/// `mi_option_allow_thp` in `mi_option_e`; its default is 1 (allowed).
const ALLOW_THP: mi_option_t = 43;

/// Set mimalloc's options, unless the environment sets them (`MIMALLOC_PURGE_DELAY`,
/// `MIMALLOC_ALLOW_THP`). Runs once, while the module is initialised.
pub fn tune() {
    keep_freed_memory();
    no_huge_pages();
}

/// mimalloc returns freed memory to the kernel one second after it is freed. Scans free
/// hundreds of MB of decoded pages when they end; when the next scan comes more than a
/// second later, or the freed ranges were scheduled before being reused, it page-faults
/// that memory back in, zeroed: a full scan of three columns of TPC-H SF1 lineitem then
/// took 120-250 ms instead of 65. Ten seconds instead.
fn keep_freed_memory() {
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

/// mimalloc asks for transparent huge pages (`MADV_HUGEPAGE`) on the memory it maps.
/// Where the kernel compacts memory for them on demand (`defrag` of `madvise`, the usual
/// setting) and the page cache holds the files being read, each first touch of a 2 MiB
/// page can wait for reclaim and compaction, then zeroes the whole page: the first
/// `SELECT *` of TPC-H SF1 lineitem in a process took 2.0-3.1 s instead of 0.7-1.1, and
/// a point lookup's second to fourth runs 12-35 ms instead of 4-6, with no difference
/// once the process's memory is warm. Ordinary pages are asked for instead; the rest of
/// the process keeps the kernel's setting.
fn no_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: as in `keep_freed_memory`; mimalloc reads the option on each new mapping.
    unsafe {
        if mi_option_get(ALLOW_THP) == 1 {
            mi_option_set(ALLOW_THP, 0);
        }
    }
}

//! Buffers of decompressed pages, reused on the thread that decompresses.
//!
//! A decompressor writes every byte of a page, yet a fresh buffer costs more than the
//! writing: the Snappy decoder takes an initialised slice, so the buffer is zero-filled
//! first, and memory fresh from the system has each of its pages faulted in and cleared by
//! the kernel. A page's buffer here goes back to its thread's pool when the page, and any
//! array holding views of its bytes, is dropped; the next page is written over it.

use std::cell::RefCell;

use bytes::Bytes;

/// Most bytes a thread keeps in buffers not in use.
const POOL_BYTES: usize = 16 << 20;

/// Most buffers a thread keeps: each page looks through them for the smallest that fits.
const POOL_BUFFERS: usize = 64;

/// Buffers larger than this are not kept: a page this large is rare, and a pool of them
/// would hold much memory for little.
const LARGEST_KEPT: usize = 4 << 20;

thread_local! {
    /// `None` on threads that never decompressed a page: a buffer dropped there (an
    /// output array freed by the caller) is freed, not kept for nothing.
    static POOL: RefCell<Option<Pool>> = const { RefCell::new(None) };
}

#[derive(Default)]
struct Pool {
    /// Each buffer's length is how many of its bytes are initialised.
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

/// A buffer with room for at least `capacity` bytes: the smallest kept one that has it,
/// else a new one with room to spare. Its length is how many of its bytes are initialised, which may be
/// fewer than `capacity` (none, for a new one).
pub(crate) fn take(capacity: usize) -> Vec<u8> {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let pool = pool.get_or_insert_with(Pool::default);
        let fits = pool
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        match fits {
            Some(i) => {
                let buffer = pool.buffers.swap_remove(i);
                pool.bytes -= buffer.capacity();
                buffer
            }
            // An eighth more, so that the next page of the column, a little larger,
            // fits in it too.
            None => Vec::with_capacity(capacity.saturating_add(capacity / 8).max(4096)),
        }
    })
}

/// The first `len` bytes of `buffer` (all initialised) as a page's bytes; the buffer goes
/// back to the pool of the thread that drops them.
pub(crate) fn page(buffer: Vec<u8>, len: usize) -> Bytes {
    debug_assert!(len <= buffer.len());
    let len = len.min(buffer.len());
    Bytes::from_owner(Kept { buffer, len })
}

/// A page's bytes in a buffer that is given back when they are dropped.
struct Kept {
    buffer: Vec<u8>,
    len: usize,
}

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.buffer[..self.len]
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let buffer = std::mem::take(&mut self.buffer);
        give_back(buffer);
    }
}

/// Keep `buffer` for this thread's next page, if the thread decompresses and its pool has
/// room; free it otherwise.
fn give_back(buffer: Vec<u8>) {
    let size = buffer.capacity();
    if size == 0 || size > LARGEST_KEPT {
        return;
    }
    // During the thread's exit the pool may be gone: the buffer is then freed.
    let _ = POOL.try_with(|pool| {
        let Ok(mut pool) = pool.try_borrow_mut() else {
            return;
        };
        let Some(pool) = pool.as_mut() else {
            return;
        };
        // Smaller buffers make room for a larger one (a page fits in a larger buffer, not
        // the other way round); an equal one is not kept.
        while pool.bytes + size > POOL_BYTES || pool.buffers.len() >= POOL_BUFFERS {
            let smallest = (0..pool.buffers.len()).min_by_key(|&i| pool.buffers[i].capacity());
            match smallest {
                Some(i) if pool.buffers[i].capacity() < size => {
                    pool.bytes -= pool.buffers.swap_remove(i).capacity();
                }
                _ => return,
            }
        }
        pool.bytes += size;
        pool.buffers.push(buffer);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> (usize, usize) {
        POOL.with(|p| {
            p.borrow()
                .as_ref()
                .map_or((0, 0), |p| (p.buffers.len(), p.bytes))
        })
    }

    #[test]
    fn a_dropped_page_gives_its_buffer_to_the_next_and_views_keep_it_alive() {
        std::thread::spawn(|| {
            // A thread that never took a buffer keeps none.
            give_back(vec![1u8; 100]);
            assert_eq!(kept(), (0, 0));

            let mut buffer = take(1000);
            assert!(buffer.capacity() >= 1000);
            buffer.resize(buffer.capacity(), 7);
            let len = buffer.len();
            let address = buffer.as_ptr();
            let bytes = page(buffer, 600);
            assert_eq!(bytes.len(), 600);
            let view = bytes.slice(100..200);
            drop(bytes);
            assert_eq!(kept().0, 0, "a view still holds the buffer");
            assert!(view.iter().all(|&b| b == 7));
            drop(view);
            assert_eq!(kept().0, 1);

            // The next page of up to its capacity is written over the same bytes, which
            // are still initialised.
            let again = take(800);
            assert_eq!(again.as_ptr(), address);
            assert_eq!(again.len(), len);
            give_back(again);

            // The smallest buffer that fits is taken; with none fitting, a new one.
            give_back(Vec::with_capacity(50_000));
            assert_eq!(take(len + 1).capacity(), 50_000);
            let new = take(10_000);
            assert!(new.is_empty() && new.capacity() >= 10_000);
            assert_eq!(kept().0, 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_pool_holds_a_bounded_number_of_bytes() {
        std::thread::spawn(|| {
            drop(take(1));
            give_back(Vec::with_capacity(LARGEST_KEPT + 1));
            assert_eq!(kept(), (0, 0), "a buffer over the largest kept is freed");
            give_back(Vec::with_capacity(1000));
            for _ in 0..(POOL_BYTES / LARGEST_KEPT + 3) {
                give_back(Vec::with_capacity(LARGEST_KEPT));
            }
            // The small buffer made room for a large one; then the pool was full.
            assert_eq!(kept(), (POOL_BYTES / LARGEST_KEPT, POOL_BYTES));
        })
        .join()
        .unwrap();
        std::thread::spawn(|| {
            drop(take(1));
            for size in 1..=(POOL_BUFFERS + 10) {
                give_back(Vec::with_capacity(size * 100));
            }
            // At most so many buffers, the largest kept.
            let smallest = POOL.with(|p| {
                let p = p.borrow();
                let p = p.as_ref().unwrap();
                p.buffers.iter().map(Vec::capacity).min()
            });
            assert_eq!(kept().0, POOL_BUFFERS);
            assert_eq!(smallest, Some(1100));
        })
        .join()
        .unwrap();
    }
}

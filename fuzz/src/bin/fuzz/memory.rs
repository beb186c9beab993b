//! The memory cap of a worker: the system allocator with a limit on live bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator with a cap on live bytes: past it, allocations fail and the worker
/// aborts (recorded as a crash) instead of taking the machine's memory.
struct Capped;

static LIVE: AtomicUsize = AtomicUsize::new(0);
pub(crate) static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

fn reserve(size: usize) -> bool {
    let limit = LIMIT.load(Ordering::Relaxed);
    let live = LIVE.fetch_add(size, Ordering::Relaxed);
    if live.saturating_add(size) > limit {
        LIVE.fetch_sub(size, Ordering::Relaxed);
        return false;
    }
    true
}

// SAFETY: every call forwards to `System` with the caller's layout and pointer; the counter
// only decides whether to forward.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if ptr.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded as received.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new.is_null() {
            if new_size > old {
                LIVE.fetch_sub(new_size - old, Ordering::Relaxed);
            }
        } else if new_size < old {
            LIVE.fetch_sub(old - new_size, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Capped = Capped;

//! The binary's global allocator: large buffers in transparent huge pages.
//!
//! A run holds its event columns and the replay's columns (hundreds of MB) in a few dozen
//! buffers of 1–50 MB, each touched once from start to end. Faulting them in 4 KiB pages
//! costs a kernel entry and a zeroing per page; in 2 MiB pages one per 512 of them (on the
//! 2-core VMs here, 300 MB touched take ~0.2 s in small pages, ~0.05 s in huge ones). The
//! kernel backs an address range with huge pages only where a whole 2 MiB block is both
//! inside one mapping and advised (`MADV_HUGEPAGE`, the `madvise` THP mode); glibc's
//! `malloc` puts a large buffer 16 bytes past the start of its own mapping and, once a
//! large buffer has been freed, serves buffers up to 32 MiB from its arenas, so most of a
//! buffer's first and last 2 MiB, and whole buffers in the arenas, ended up in small pages
//! (27,000 small-page faults on the 12 M-event, 4-rank ping-pong; `spill::advise_huge` can
//! only advise the whole blocks inside a buffer as it is placed).
//!
//! [`HugeAlloc`] gives every allocation of [`LARGE`] bytes or more a mapping of its own that
//! starts on a 2 MiB boundary, advised for huge pages, and grows it with `mremap` (no copy:
//! the pages move). Everything smaller goes to the system allocator. Content and alignment
//! guarantees are those of any allocator; only how the kernel backs the memory changes, so no
//! result depends on it. `src/main.rs` installs it; the library does not (a program linking
//! the library chooses its own allocator).

use std::alloc::{GlobalAlloc, Layout, System};

/// From this size on, an allocation is a mapping of its own (one whole huge page at least).
pub const LARGE: usize = 2 << 20;

/// The global allocator of the `perfexpert` binary (see the module documentation).
pub struct HugeAlloc;

#[inline]
fn is_large(size: usize, align: usize) -> bool {
    cfg!(target_os = "linux") && size >= LARGE && align <= imp::HUGE
}

// SAFETY: every method keeps `GlobalAlloc`'s contract: `alloc` returns null or a block of at
// least `layout.size()` bytes aligned to `layout.align()` that no other allocation overlaps;
// `dealloc` and `realloc` receive only blocks this allocator returned with the same layout
// (the contract's precondition), and `is_large` of that layout tells which of the two
// allocators returned it, since `realloc` hands a block whose new size crosses `LARGE` from
// one to the other by copying.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            imp::map(layout.size())
        } else {
            // SAFETY: forwarded with the caller's layout (non-zero size by the contract).
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            // a fresh anonymous mapping reads as zeros
            imp::map(layout.size())
        } else {
            // SAFETY: as in `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: `ptr` is a mapping `imp::map` (or `imp::remap`) made for this size.
            unsafe { imp::unmap(ptr, layout.size()) }
        } else {
            // SAFETY: `ptr` came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        match (is_large(layout.size(), align), is_large(new_size, align)) {
            // SAFETY: `ptr` is this size's mapping; `remap` keeps its content.
            (true, true) => unsafe { imp::remap(ptr, layout.size(), new_size) },
            // SAFETY: `ptr` came from `System` with `layout`, and stays there.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: `new_size` with the old alignment is a valid layout (the contract's
                // precondition for `realloc`).
                let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, align) };
                // SAFETY: non-zero size (the contract's precondition).
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks are valid for the smaller of the two sizes and
                    // distinct allocations, so they do not overlap; the old one is freed
                    // with the layout it was allocated with.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ptr::null_mut;

    pub const HUGE: usize = 2 << 20;
    const PAGE: usize = 4096;

    fn pages(size: usize) -> usize {
        size.next_multiple_of(PAGE)
    }

    /// A fresh read-write anonymous range of `pages(size)` bytes starting on a 2 MiB boundary,
    /// advised for huge pages; null when the kernel refuses.
    pub fn map(size: usize) -> *mut u8 {
        let len = pages(size);
        let Some(span) = len.checked_add(HUGE - PAGE) else {
            return null_mut();
        };
        // SAFETY: a new private anonymous mapping at an address the kernel chooses: it
        // touches no memory of anyone else.
        let raw = unsafe {
            libc::mmap(
                null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return null_mut();
        }
        let raw = raw as usize;
        let start = raw.next_multiple_of(HUGE);
        let end = start + len;
        // SAFETY: the head before `start` and the tail after `end` lie inside the mapping
        // just made and nothing refers to them; unmapping them leaves [start, end).
        unsafe {
            if start > raw {
                libc::munmap(raw as *mut libc::c_void, start - raw);
            }
            if raw + span > end {
                libc::munmap(end as *mut libc::c_void, raw + span - end);
            }
            // Advice only: it changes how the kernel backs the range, never its content,
            // and a failure (THP disabled) leaves ordinary pages.
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        start as *mut u8
    }

    /// Unmaps a range `map` or `remap` returned for `size` bytes.
    ///
    /// # Safety
    /// `ptr` is such a range, and nothing uses it any more.
    pub unsafe fn unmap(ptr: *mut u8, size: usize) {
        // SAFETY: the caller's guarantee: the range is ours and dead.
        unsafe {
            libc::munmap(ptr.cast(), pages(size));
        }
    }

    /// The range `ptr` (`old` bytes, from `map`/`remap`) resized to `new` bytes, content kept up
    /// to the smaller size: in place when the addresses after it are free (or it shrinks),
    /// else its pages moved (not copied) to a fresh 2 MiB-aligned range. Null when the kernel
    /// refuses; the old range is then unchanged.
    ///
    /// # Safety
    /// `ptr` is such a range of `old` bytes; on success the caller uses only the result.
    pub unsafe fn remap(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        let (old_len, new_len) = (pages(old), pages(new));
        if old_len == new_len {
            return ptr;
        }
        // SAFETY: resizes our own mapping without moving it (no MREMAP_MAYMOVE): it either
        // grows into free addresses, shrinks, or fails and changes nothing.
        let same = unsafe { libc::mremap(ptr.cast(), old_len, new_len, 0) };
        if same != libc::MAP_FAILED {
            // SAFETY: advice on our own range (see `map`).
            unsafe { libc::madvise(ptr.cast(), new_len, libc::MADV_HUGEPAGE) };
            return ptr;
        }
        let target = map(new);
        if target.is_null() {
            return null_mut();
        }
        // SAFETY: MREMAP_FIXED moves our old range's pages onto `target`, a range we just
        // mapped for this (the kernel replaces that mapping atomically); on failure the old
        // range is untouched and the target is unmapped again.
        let moved = unsafe {
            libc::mremap(
                ptr.cast(),
                old_len,
                new_len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                target.cast::<libc::c_void>(),
            )
        };
        if moved == libc::MAP_FAILED {
            // SAFETY: `target` is the range `map` made above, unused.
            unsafe { unmap(target, new) };
            return null_mut();
        }
        // SAFETY: advice on our own range (see `map`).
        unsafe { libc::madvise(target.cast(), new_len, libc::MADV_HUGEPAGE) };
        target
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    // never called: `is_large` is false off Linux
    pub const HUGE: usize = 2 << 20;
    pub fn map(_: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
    pub unsafe fn unmap(_: *mut u8, _: usize) {}
    pub unsafe fn remap(_: *mut u8, _: usize, _: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Large and small blocks, grown and shrunk across `LARGE` both ways, keep their
    /// content, alignment and zeroing.
    #[test]
    fn blocks_keep_content_across_sizes() {
        let a = HugeAlloc;
        for align in [1usize, 8, 64, 4096] {
            for (from, to) in [
                (100, LARGE + 5),
                (LARGE + 5, 100),
                (LARGE, 3 * LARGE + 1),
                (3 * LARGE + 1, LARGE + 7),
                (5 * LARGE, 5 * LARGE + 3),
                (1000, 2000),
            ] {
                let layout = Layout::from_size_align(from, align).unwrap();
                // SAFETY: non-zero sizes; every block is used within its size and freed once
                // with the layout it has.
                unsafe {
                    let p = a.alloc_zeroed(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0);
                    assert!((0..from).step_by(4093).all(|i| *p.add(i) == 0));
                    for i in (0..from).step_by(997) {
                        *p.add(i) = (i % 251) as u8;
                    }
                    let q = a.realloc(p, layout, to);
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0);
                    for i in (0..from.min(to)).step_by(997) {
                        assert_eq!(*q.add(i), (i % 251) as u8, "{from} -> {to} at {i}");
                    }
                    *q.add(to - 1) = 7;
                    a.dealloc(q, Layout::from_size_align(to, align).unwrap());
                }
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_blocks_start_on_huge_page_boundaries() {
        let layout = Layout::from_size_align(3 * LARGE + 12345, 8).unwrap();
        // SAFETY: as above.
        unsafe {
            let p = HugeAlloc.alloc(layout);
            assert_eq!(p as usize % imp::HUGE, 0);
            let q = HugeAlloc.realloc(p, layout, 9 * LARGE);
            assert_eq!(q as usize % imp::HUGE, 0);
            HugeAlloc.dealloc(q, Layout::from_size_align(9 * LARGE, 8).unwrap());
        }
    }
}

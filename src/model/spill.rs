//! Event columns that need not stay in memory (`perfexpert run --memory-limit`).
//!
//! A [`Column`] is either a vector on the heap (while a reader fills it) or a read-only
//! region of a *spill file* that [`Spill`] wrote and memory-mapped; everyone downstream sees
//! `&[T]` either way (`Deref`), so the replay and the analysis run unchanged and give the
//! same results. The spill file is unlinked as soon as it is created: it disappears with the
//! process however that ends (also on an error or a kill), and the mappings keep it alive
//! while they exist.
//!
//! Mapped pages are file-backed: the kernel can drop them whenever memory is short and read
//! them back on the next access. To keep the process under its limit even when memory is
//! plentiful, a [`Spill`] with a limit runs a small *trimmer* thread: when the resident set
//! comes near the limit, it tells the kernel that the mapped columns are not needed
//! (`madvise(MADV_DONTNEED)`), which drops them from the resident set without changing their
//! content. Whatever pass runs at the time (replay, rules, critical path) faults back only
//! the locations it is working on, so only a window of locations stays resident.
//!
//! The trimmer alone cannot hold a limit on a busy machine: it sleeps between readings,
//! and a thread that wakes may wait tens of milliseconds for a core while the passes,
//! which keep theirs, fault the page cache back at several MB a millisecond. So the passes
//! also look themselves, where they are done with a location (`Column::release_resident`):
//! a thread that maps columns back is a thread that runs, so its look is never late.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::event_kind::EventKind;

/// Plain values that can be written to the spill file as bytes and read back.
///
/// # Safety
/// The type has no padding, and every value of it that was written can be read back from
/// its bytes (the spill file is private to this process: created in a fresh unique file,
/// unlinked at once, and only written by [`Spill::store`]).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
// SAFETY: integers: no padding, every bit pattern valid.
unsafe impl Pod for u8 {}
unsafe impl Pod for u16 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u64 {}
// SAFETY: `#[repr(u8)]`, no padding; only values that were valid `EventKind`s are written.
unsafe impl Pod for EventKind {}

pub(crate) fn bytes_of<T: Pod>(v: &[T]) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so every byte of the slice is initialised.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// A read-only region of the spill file holding `len` values of `T`.
#[derive(Clone)]
struct Mapped<T> {
    map: Arc<memmap2::Mmap>,
    /// The spill file it is in (for columns stored beside it, `Column::spill_beside`).
    home: Arc<Home>,
    /// Byte offset in `map` (a multiple of 8: aligned for every `Pod` type here).
    start: usize,
    len: usize,
    _t: PhantomData<T>,
}

#[derive(Clone)]
enum Store<T> {
    Heap(Vec<T>),
    Mapped(Mapped<T>),
}

/// Asks the kernel to back `v`'s buffer with transparent huge pages where it is large
/// (Linux in `madvise` mode): memory that is touched once, column by column, then faults
/// once per 2 MiB instead of once per 4 KiB page. Content is unchanged; failure is harmless.
/// Only buffers of 4 MiB or more: a growing vector fills at least half of its buffer, so the
/// huge pages it touches are mostly its own (`advise_huge_full` for a buffer filled whole).
pub fn advise_huge<T>(v: &Vec<T>) {
    advise_huge_from(v, 4 << 20);
}

/// `advise_huge` for a buffer that will be filled to its capacity (`filled`, a reader's
/// columns sized by the declared event count): every whole 2 MiB page inside it, however
/// small the buffer (a 3 MiB pointer column of a 750,000-event location has one), since
/// each such page is touched in full anyway and resident memory stays what it would be.
pub fn advise_huge_full<T>(v: &Vec<T>) {
    advise_huge_from(v, 2 << 20);
}

fn advise_huge_from<T>(v: &Vec<T>, min_bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < min_bytes {
            return;
        }
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
        if end > start {
            // SAFETY: the range lies inside the vector's own allocation; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its content.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (v, min_bytes);
}

/// `vec![x; n]` in huge pages where it is large (`advise_huge_full`).
pub fn filled<T: Clone>(n: usize, x: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge_full(&v);
    v.resize(n, x);
    v
}

/// One column of event data: a heap vector, or a region of the spill file (read-only; a
/// write makes a heap copy first). Reads go through `Deref<Target = [T]>`.
///
/// `ptr`/`len` always describe the current storage, so a read costs what a `Vec`'s does
/// (no branch on where the column lives: the replay and the rules index columns in their
/// innermost loops); every method that changes the storage re-derives them.
pub struct Column<T: Pod> {
    ptr: *const T,
    len: usize,
    store: Store<T>,
}

// SAFETY: a Column owns its storage like a Vec<T> or an Arc<Mmap> does; `ptr` points into
// it and is only read through `&self`.
unsafe impl<T: Pod> Send for Column<T> {}
unsafe impl<T: Pod> Sync for Column<T> {}

impl<T: Pod> Column<T> {
    fn from_store(store: Store<T>) -> Column<T> {
        let mut c = Column {
            ptr: std::ptr::NonNull::dangling().as_ptr(),
            len: 0,
            store,
        };
        c.sync();
        c
    }

    /// Re-derive `ptr`/`len` from the storage (after any change to it).
    #[inline]
    fn sync(&mut self) {
        let (ptr, len) = match &self.store {
            Store::Heap(v) => (v.as_ptr(), v.len()),
            Store::Mapped(m) => (m.ptr(), m.len),
        };
        self.ptr = ptr;
        self.len = len;
    }

    pub fn new() -> Column<T> {
        Column::from_store(Store::Heap(Vec::new()))
    }

    /// An empty heap column for `n` values (in huge pages where it is large).
    pub fn with_capacity(n: usize) -> Column<T> {
        let v = Vec::with_capacity(n);
        advise_huge(&v);
        Column::from_store(Store::Heap(v))
    }

    /// The heap vector (copying a spilled column back first); `sync` must follow any change.
    fn heap_mut(&mut self) -> &mut Vec<T> {
        if let Store::Mapped(m) = &self.store {
            let v = m.as_slice().to_vec();
            self.store = Store::Heap(v);
        }
        match &mut self.store {
            Store::Heap(v) => v,
            Store::Mapped(_) => unreachable!("just copied to the heap"),
        }
    }

    /// The heap vector, if the column is on the heap.
    pub fn heap(&self) -> Option<&Vec<T>> {
        match &self.store {
            Store::Heap(v) => Some(v),
            Store::Mapped(_) => None,
        }
    }

    pub fn is_spilled(&self) -> bool {
        matches!(self.store, Store::Mapped(_))
    }

    /// A spilled column: drop its region of the spill file (all the columns stored with it)
    /// from the resident set, once a pass is done with it; the next access faults it back.
    /// Nothing for a column on the heap. The trimmer thread does the same for every region
    /// when the resident set nears the limit; this keeps a streaming pass from filling
    /// memory between two of the trimmer's readings, whatever the load of the machine.
    /// The regions stored beside it later (`spill_beside`: the replay's columns of the
    /// location) are dropped with it.
    ///
    /// Then, with a limit, it reads the resident set as the trimmer does (at most once a
    /// millisecond over all threads) and drops every mapped column when it is above the
    /// trimmer's mark (`Home::checkpoint`): what the passes read of other locations (a
    /// message's partner) cannot pile up while the trimmer waits for a core.
    #[inline(never)]
    pub fn release_resident(&self) {
        if let Store::Mapped(m) = &self.store {
            drop_resident(&m.map);
            m.home.release_beside(&m.map);
            m.home.checkpoint();
        }
    }

    /// Store `cols` in the spill file this column is in, as one region that
    /// `release_resident` on this column drops too (the replay's pointer, call-path and
    /// partner columns of a location beside its events). Nothing for a column on the heap.
    /// A write that fails leaves the columns on the heap (the same values; only the memory
    /// is not saved) and says so once on the log.
    pub fn spill_beside(&self, cols: &mut [&mut dyn Spillable]) {
        let Store::Mapped(m) = &self.store else {
            return;
        };
        match m.home.store(cols) {
            Ok(Some(map)) => m.home.add_beside(&m.map, map),
            Ok(None) => {}
            Err(e) => {
                if !m.home.failed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "cannot write the spill file: {e}; the replay's columns stay in memory"
                    );
                }
            }
        }
    }

    #[inline(always)]
    pub fn push(&mut self, x: T) {
        if let Store::Heap(v) = &mut self.store {
            if v.len() == v.capacity() {
                v.reserve(1);
                advise_huge(v);
            }
            v.push(x);
            self.ptr = v.as_ptr();
            self.len = v.len();
        } else {
            self.heap_mut().push(x);
            self.sync();
        }
    }

    pub fn extend_from_slice(&mut self, x: &[T]) {
        self.heap_mut().extend_from_slice(x);
        self.sync();
    }

    /// Elements of heap capacity (0 for a spilled column).
    pub fn capacity(&self) -> usize {
        self.heap().map_or(0, Vec::capacity)
    }

    pub fn shrink_to_fit(&mut self) {
        if let Store::Heap(v) = &mut self.store {
            v.shrink_to_fit();
        }
        self.sync();
    }
}

impl<T> Mapped<T> {
    fn ptr(&self) -> *const T {
        if self.len == 0 {
            return std::ptr::NonNull::dangling().as_ptr();
        }
        // SAFETY: `start` lies inside the mapping (`Spill::store` mapped the region it wrote).
        unsafe { self.map.as_ptr().add(self.start).cast() }
    }

    fn as_slice(&self) -> &[T] {
        // SAFETY: `Spill::store` wrote `len` values of `T` at `start` (8-aligned in a
        // page-aligned mapping) and nothing writes the file afterwards; the map lives as
        // long as `self`. T: Pod (see there).
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }
    }
}

impl<T: Pod> Clone for Column<T> {
    fn clone(&self) -> Self {
        Column::from_store(self.store.clone())
    }
}

impl<T: Pod> Default for Column<T> {
    fn default() -> Self {
        Column::new()
    }
}

impl<T: Pod> Deref for Column<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr`/`len` describe the current storage (`sync` after every change):
        // the Vec's buffer or the mapped region, both owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Pod> DerefMut for Column<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        let v = self.heap_mut();
        let (p, n) = (v.as_mut_ptr(), v.len());
        self.ptr = p;
        self.len = n;
        // SAFETY: the Vec's own buffer and length; `&mut self` is held for the slice's life.
        unsafe { std::slice::from_raw_parts_mut(p, n) }
    }
}

impl<'a, T: Pod> IntoIterator for &'a Column<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T: Pod> IntoIterator for &'a mut Column<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T: Pod> From<Vec<T>> for Column<T> {
    fn from(v: Vec<T>) -> Self {
        Column::from_store(Store::Heap(v))
    }
}

impl<T: Pod + PartialEq> PartialEq for Column<T> {
    fn eq(&self, o: &Self) -> bool {
        **self == **o
    }
}
impl<T: Pod + Eq> Eq for Column<T> {}

impl<T: Pod + PartialEq> PartialEq<Vec<T>> for Column<T> {
    fn eq(&self, o: &Vec<T>) -> bool {
        **self == **o
    }
}

impl<T: Pod + PartialEq, const N: usize> PartialEq<[T; N]> for Column<T> {
    fn eq(&self, o: &[T; N]) -> bool {
        **self == o[..]
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Resident bytes per event of a whole `perfexpert run` (trace model, replay and rule
/// state): 21.2 for the text report and for JSON on the 12 M-event ping-pong traces with
/// the 4-byte time column (`Times`; peak resident set with `/usr/bin/time`), 4 less than
/// with 8-byte times (25 text, 28 JSON measured then with `bench/run.sh`, 25 at 100 M
/// events), kept with the JSON margin; with `--memory-limit`, the columns spill when
/// `events × this` exceeds the limit.
pub const RESIDENT_BYTES_PER_EVENT: u64 = 24;

/// What is known of a run before it starts: the events the trace declares per unit its
/// reader decodes at once (OTF2: per location; OTF 1 and Paje: the whole trace), the
/// threads, and whether the report needs the extras (critical path, root causes, phases:
/// JSON, Cube, HTML).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunShape {
    pub events: u64,
    /// Events of the largest unit.
    pub largest: u64,
    pub units: u64,
    pub threads: u64,
    pub extras: bool,
}

impl RunShape {
    pub fn new(per_unit: &[u64], threads: usize, extras: bool) -> RunShape {
        RunShape {
            events: per_unit.iter().sum(),
            largest: per_unit.iter().copied().max().unwrap_or(0),
            units: per_unit.len() as u64,
            threads: threads.max(1) as u64,
            extras,
        }
    }
}

/// What a run needs in memory even with every event column and the replay's per-event
/// columns in the spill file, estimated before it starts (`RunShape`), in bytes:
///
/// * the program, its rules, threads and allocator, and what the trimmer lets the passes
///   map between two of its readings (`FIXED`);
/// * per event of the trace (`PER_EVENT`): the call-path column while the call tree is
///   merged (2 bytes), then the partner column and the sorted sides while messages are
///   matched (12 bytes a message record, at most one record in 3 events: each is inside an
///   MPI call's ENTER and LEAVE), the rules' state and the report; the extras add the
///   critical path's, the root causes' and the phases' state (`EXTRAS_PER_EVENT`);
/// * per event of the largest unit, once per thread that decodes or walks one at a time
///   (`WINDOW_PER_EVENT`): the unit's decoded columns before they go to the spill file and
///   its mapped input, or, in the passes, the mapped columns of the location a thread walks
///   and of the partners it reads, until it or the trimmer drops them.
///
/// Measured as the peak resident set under `--memory-limit 1`, where the trimmer drops
/// every mapped column as soon as it can (`/usr/bin/time`); `tests/memory_peak.rs`
/// which holds a limit just above this floor on a generated trace.
pub fn floor_bytes(s: &RunShape) -> u64 {
    const FIXED: u64 = 32 << 20;
    const PER_EVENT: u64 = 6;
    const EXTRAS_PER_EVENT: u64 = 8;
    const WINDOW_PER_EVENT: u64 = 32;
    let per_event = PER_EVENT + if s.extras { EXTRAS_PER_EVENT } else { 0 };
    let windows = s.threads.min(s.units.max(1));
    FIXED
        .saturating_add(s.events.saturating_mul(per_event))
        .saturating_add(
            windows
                .saturating_mul(s.largest)
                .saturating_mul(WINDOW_PER_EVENT),
        )
}

/// The spill file and, with a limit, the trimmer that keeps its mapped pages out of the
/// resident set.
pub struct Spill {
    home: Arc<Home>,
    stop: Arc<AtomicBool>,
    trimmer: Option<std::thread::JoinHandle<()>>,
}

/// The spill file itself, shared by the `Spill` and every column mapped from it (opaque).
pub struct Home {
    file: Mutex<SpillFile>,
    /// Every region written, for the trimmer.
    maps: Mutex<Vec<Arc<memmap2::Mmap>>>,
    /// Regions stored beside another (`Column::spill_beside`), by the address of that
    /// region's mapping: dropped from the resident set with it.
    beside: Mutex<HashMap<usize, Vec<Arc<memmap2::Mmap>>>>,
    /// A write of `spill_beside` failed (said once).
    failed: AtomicBool,
    path: PathBuf,
    /// With a limit: the resident set above which the mapped columns are dropped.
    high: Option<u64>,
    /// When a pass last read the resident set (`checkpoint`), in µs since `born`.
    checked: AtomicU64,
    born: std::time::Instant,
    /// How often the mapped columns were dropped (by the trimmer or a pass).
    trims: AtomicU64,
}

struct SpillFile {
    file: File,
    /// Where the next region starts (page-aligned).
    end: u64,
}

const ALIGN: usize = 8;

fn page_size() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            return p as u64;
        }
    }
    4096
}

impl Spill {
    /// A spill file in `dir` (unlinked at once); with `limit` (bytes), the trimmer keeps the
    /// resident set of the process near or under it as far as mapped columns allow.
    pub fn new(dir: &Path, limit: Option<u64>) -> std::io::Result<Spill> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = dir.join(format!(
            "perfexpert-spill-{}-{nanos}.bin",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // The file lives on through `file` and the mappings; nothing is left behind.
        #[cfg(unix)]
        std::fs::remove_file(&path)?;
        let home = Arc::new(Home {
            file: Mutex::new(SpillFile { file, end: 0 }),
            maps: Mutex::default(),
            beside: Mutex::default(),
            failed: AtomicBool::new(false),
            path,
            high: limit.map(high_mark),
            checked: AtomicU64::new(0),
            born: std::time::Instant::now(),
            trims: AtomicU64::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let trimmer = home.high.map(|high| {
            let (home, stop) = (home.clone(), stop.clone());
            std::thread::spawn(move || trim_loop(high, &home, &stop))
        });
        Ok(Spill {
            home,
            stop,
            trimmer,
        })
    }

    /// Where the spill file was made (it has no name any more on Unix).
    pub fn path(&self) -> &Path {
        &self.home.path
    }

    /// How often the trimmer or a pass dropped the mapped columns from the resident set.
    pub fn trims(&self) -> u64 {
        self.home.trims.load(Ordering::Relaxed)
    }

    /// Bytes written to the spill file so far.
    pub fn bytes(&self) -> u64 {
        self.home.file.lock().map_or(0, |f| f.end)
    }

    /// Write these columns to the spill file as one region and replace each by its mapped
    /// copy. Columns already spilled or empty stay as they are.
    pub fn store(&self, cols: &mut [&mut dyn Spillable]) -> std::io::Result<()> {
        self.home.store(cols).map(|_| ())
    }
}

impl Home {
    /// `Spill::store`; the region's mapping, if anything was written.
    fn store(
        self: &Arc<Home>,
        cols: &mut [&mut dyn Spillable],
    ) -> std::io::Result<Option<Arc<memmap2::Mmap>>> {
        let mut offsets = Vec::with_capacity(cols.len());
        let mut total = 0usize;
        for c in cols.iter() {
            offsets.push(total);
            if c.wants_spill() {
                total += c.spill_bytes().len().next_multiple_of(ALIGN);
            }
        }
        if total == 0 {
            return Ok(None);
        }
        let map = {
            let mut f = self
                .file
                .lock()
                .map_err(|_| std::io::Error::other("spill file lock poisoned"))?;
            let start = f.end;
            use std::io::Seek;
            f.file.seek(std::io::SeekFrom::Start(start))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, &f.file);
            let pad = [0u8; ALIGN];
            for c in cols.iter() {
                if c.wants_spill() {
                    let b = c.spill_bytes();
                    w.write_all(b)?;
                    w.write_all(&pad[..b.len().next_multiple_of(ALIGN) - b.len()])?;
                }
            }
            w.flush()?;
            drop(w);
            // SAFETY: the region was just written and is never written again; the file is
            // private to this process (unlinked, see `Pod`).
            let map = unsafe {
                memmap2::MmapOptions::new()
                    .offset(start)
                    .len(total)
                    .map(&f.file)?
            };
            let page = page_size();
            f.end = (start + total as u64).next_multiple_of(page);
            Arc::new(map)
        };
        for (c, off) in cols.iter_mut().zip(offsets) {
            if c.wants_spill() {
                c.become_mapped(map.clone(), self.clone(), off);
            }
        }
        if let Ok(mut m) = self.maps.lock() {
            m.push(map.clone());
        }
        Ok(Some(map))
    }

    fn key(map: &memmap2::Mmap) -> usize {
        map.as_ptr() as usize
    }

    fn add_beside(&self, of: &memmap2::Mmap, map: Arc<memmap2::Mmap>) {
        if let Ok(mut b) = self.beside.lock() {
            b.entry(Home::key(of)).or_default().push(map);
        }
    }

    /// A pass is done with a location: with a limit, and unless a pass looked less than a
    /// millisecond ago, drop every mapped column when the resident set is above the mark.
    fn checkpoint(&self) {
        let Some(high) = self.high else { return };
        let now = self.born.elapsed().as_micros() as u64;
        let last = self.checked.load(Ordering::Relaxed);
        if now < last.saturating_add(1000)
            || (self.checked)
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return; // another thread looked just now
        }
        self.trim_above(high);
    }

    /// Drop every mapped column from the resident set if it is above `high` and file-backed
    /// pages make up more than 4 MB of it; `false` when there is no `/proc` to read it from.
    fn trim_above(&self, high: u64) -> bool {
        let Some((rss, file)) = resident() else {
            return false;
        };
        if rss <= high || file <= 4 << 20 {
            return true;
        }
        let maps: Vec<Arc<memmap2::Mmap>> = match self.maps.lock() {
            Ok(m) => m.clone(),
            Err(_) => return false,
        };
        for m in &maps {
            drop_resident(m);
        }
        self.trims.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn release_beside(&self, of: &memmap2::Mmap) {
        let maps = match self.beside.lock() {
            Ok(b) => b.get(&Home::key(of)).cloned(),
            Err(_) => None,
        };
        for m in maps.iter().flatten() {
            drop_resident(m);
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.trimmer.take() {
            let _ = t.join();
        }
        #[cfg(not(unix))]
        let _ = std::fs::remove_file(&self.home.path);
    }
}

/// A column `Spill::store` can move to the spill file.
pub trait Spillable {
    fn wants_spill(&self) -> bool;
    fn spill_bytes(&self) -> &[u8];
    fn become_mapped(&mut self, map: Arc<memmap2::Mmap>, home: Arc<Home>, start: usize);
}

impl<T: Pod> Spillable for Column<T> {
    fn wants_spill(&self) -> bool {
        matches!(&self.store, Store::Heap(v) if !v.is_empty())
    }
    fn spill_bytes(&self) -> &[u8] {
        bytes_of(self)
    }
    fn become_mapped(&mut self, map: Arc<memmap2::Mmap>, home: Arc<Home>, start: usize) {
        let len = self.len();
        self.store = Store::Mapped(Mapped {
            map,
            home,
            start,
            len,
            _t: PhantomData,
        });
        self.sync();
    }
}

/// Resident and file-backed resident bytes of this process (`/proc/self/statm`).
fn resident() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut f = s.split_whitespace().skip(1);
    let rss: u64 = f.next()?.parse().ok()?;
    let shared: u64 = f.next()?.parse().ok()?;
    let page = page_size();
    Some((rss * page, shared * page))
}

/// Where the mapped columns are dropped under `limit`: 80 % of it. Pages of the page cache
/// map back fast (several MB in a millisecond when a pass scans a column), so the trimmer
/// and the passes' checkpoints start a fifth below the limit, and `floor_bytes` counts what
/// threads map between two readings; the peak then stays within the limit + 10 % whenever
/// the limit is above the floor.
fn high_mark(limit: u64) -> u64 {
    limit - limit / 5
}

/// Keeps the resident set under the limit: it reads the resident set every millisecond
/// (reading `/proc/self/statm` costs a few microseconds), and when it is above the mark
/// (`high_mark`), drops the mapped columns from it (`Home::trim_above`: their content stays
/// in the file and the page cache; the next access faults them back). It catches a pass
/// that maps much inside one location; the passes' own checkpoints (`Home::checkpoint`)
/// the rest, whenever this thread waits for a core.
fn trim_loop(high: u64, home: &Home, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(1));
        if !home.trim_above(high) {
            return; // no /proc: leave it to the kernel
        }
    }
}

/// Gives the heap memory that is free but still resident back to the system (glibc keeps
/// freed blocks in its per-thread arenas: after a read whose decoded columns went to the
/// spill file, tens of MB of them). Called when the columns are spilled, where the
/// resident set must stay under a limit; elsewhere the memory is reused as it is.
#[cold]
pub fn return_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas; it has
    // no preconditions and changes no allocated block.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn drop_resident(m: &memmap2::Mmap) {
    #[cfg(unix)]
    {
        if m.is_empty() {
            return;
        }
        // SAFETY: a read-only shared file mapping: MADV_DONTNEED only unmaps its pages from
        // this process; the next access reads the same bytes back from the page cache or
        // the file, so concurrent readers see no change.
        unsafe {
            libc::madvise(
                m.as_ptr() as *mut libc::c_void,
                m.len(),
                libc::MADV_DONTNEED,
            );
        }
    }
    #[cfg(not(unix))]
    let _ = m;
}

/// Parse a memory size: a positive integer with an optional unit K, M, G or T (powers of
/// 1024; `KB`, `KiB`, lower case alike), e.g. `2G`, `512M`, `1500000000`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let bad = || {
        format!("{s:?} is not a memory size: expected a positive number with an optional unit K, M, G or T (e.g. 2G, 512M)")
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let v = n.checked_mul(mult).ok_or_else(bad)?;
    if v == 0 {
        return Err(format!("{s:?}: the memory limit must be more than 0"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("1500000000"), Ok(1_500_000_000));
        for bad in [
            "abc",
            "0",
            "0G",
            "",
            "G",
            "-1G",
            "1.5G",
            "2X",
            "99999999999T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spilled_columns_read_back_and_copy_on_write() {
        let dir = std::env::temp_dir();
        let spill = Spill::new(&dir, Some(1)).unwrap();
        let mut a: Column<u64> = (0..1000u64).map(|i| i * 3).collect::<Vec<_>>().into();
        let mut b: Column<u8> = vec![1u8, 2, 3].into();
        let mut k: Column<EventKind> = vec![EventKind::Enter, EventKind::Leave].into();
        let mut e: Column<u32> = Column::new();
        spill.store(&mut [&mut a, &mut b, &mut k, &mut e]).unwrap();
        assert!(a.is_spilled() && b.is_spilled() && k.is_spilled() && !e.is_spilled());
        assert_eq!(a[999], 2997);
        assert_eq!(&b[..], &[1, 2, 3]);
        assert_eq!(&k[..], &[EventKind::Enter, EventKind::Leave]);
        // a second region lands on its own page
        let mut c: Column<u32> = vec![7u32; 10].into();
        spill.store(&mut [&mut c]).unwrap();
        assert_eq!(&c[..], &[7; 10]);
        // writing copies back to the heap, the rest stays mapped
        b[0] = 9;
        assert!(!b.is_spilled());
        assert_eq!(&b[..], &[9, 2, 3]);
        assert_eq!(a[1], 3);
        // the trimmer may drop the pages at any time: the content stays
        for m in spill.home.maps.lock().unwrap().iter() {
            drop_resident(m);
        }
        assert_eq!(a.iter().sum::<u64>(), 3 * 999 * 1000 / 2);
        assert!(!spill.path().exists(), "the spill file is unlinked at once");
    }
}

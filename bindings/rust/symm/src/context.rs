//! `Context`: one job membership and its symmetric heap.

use std::mem::{size_of, ManuallyDrop};
use std::os::raw::c_void;
use std::sync::{Arc, Mutex};

use symm_sys as ffi;

use crate::buffer::Buffer;
use crate::element::Element;
use crate::error::{check, Error, Result};
use crate::team::{PredefinedTeam, Team};
use crate::{u64_of, Stream};

/// Which backend holds the heap (`SYMM_BACKEND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// CUDA when a usable GPU is present, else host (`$SYMM_BACKEND` may override).
    Auto,
    /// memfd shared memory, CPU loads/stores.
    Host,
    /// GPU memory through the CUDA driver API.
    Cuda,
    /// A backend code this binding does not know.
    Other(u32),
}

impl Backend {
    fn raw(self) -> u32 {
        match self {
            Backend::Auto => ffi::SYMM_BACKEND_AUTO,
            Backend::Host => ffi::SYMM_BACKEND_HOST,
            Backend::Cuda => ffi::SYMM_BACKEND_CUDA,
            Backend::Other(v) => v,
        }
    }
    fn from_raw(v: u32) -> Backend {
        match v {
            ffi::SYMM_BACKEND_AUTO => Backend::Auto,
            ffi::SYMM_BACKEND_HOST => Backend::Host,
            ffi::SYMM_BACKEND_CUDA => Backend::Cuda,
            v => Backend::Other(v),
        }
    }
}

/// How the PEs find each other (`SYMM_BOOTSTRAP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bootstrap {
    /// symmrun, then launcher variables, else a single PE.
    Auto,
    /// symmrun/torchrun/Open MPI/Slurm variables.
    Env,
    /// A unique id plus rank and PE count (see [`ContextBuilder::unique_id`]).
    Uid,
    /// One PE, no peers.
    Single,
}

impl Bootstrap {
    fn raw(self) -> u32 {
        match self {
            Bootstrap::Auto => ffi::SYMM_BOOTSTRAP_AUTO,
            Bootstrap::Env => ffi::SYMM_BOOTSTRAP_ENV,
            Bootstrap::Uid => ffi::SYMM_BOOTSTRAP_UID,
            Bootstrap::Single => ffi::SYMM_BOOTSTRAP_SINGLE,
        }
    }
}

/// Thread level (`SYMM_THREAD_*`), requested at init and reported by
/// [`Context::query`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// One thread (a promise; costs nothing).
    Single,
    /// Only the initialising thread calls symm (enforced).
    Funneled,
    /// One thread at a time (a promise).
    Serialized,
    /// Any thread at any time (the default).
    Multiple,
}

impl ThreadLevel {
    fn raw(self) -> u32 {
        match self {
            ThreadLevel::Single => ffi::SYMM_THREAD_SINGLE,
            ThreadLevel::Funneled => ffi::SYMM_THREAD_FUNNELED,
            ThreadLevel::Serialized => ffi::SYMM_THREAD_SERIALIZED,
            ThreadLevel::Multiple => ffi::SYMM_THREAD_MULTIPLE,
        }
    }
    fn from_raw(v: u32) -> ThreadLevel {
        match v {
            ffi::SYMM_THREAD_SINGLE => ThreadLevel::Single,
            ffi::SYMM_THREAD_FUNNELED => ThreadLevel::Funneled,
            ffi::SYMM_THREAD_SERIALIZED => ThreadLevel::Serialized,
            _ => ThreadLevel::Multiple,
        }
    }
}

/// The bytes naming a job for [`Bootstrap::Uid`] (`symm_unique_id`).
#[derive(Clone, Copy, Debug)]
pub struct UniqueId(pub ffi::symm_unique_id);

impl UniqueId {
    /// Make an id for a new job (`symm_get_unique_id`). The process that made
    /// it must initialise as rank 0 with it; send the bytes to the other PEs
    /// over your own channel.
    pub fn new() -> Result<UniqueId> {
        let mut id = ffi::symm_unique_id {
            bytes: [0; ffi::SYMM_UNIQUE_ID_BYTES],
        };
        // SAFETY: id is a valid out-parameter.
        check(unsafe { ffi::symm_get_unique_id(&mut id) })?;
        Ok(UniqueId(id))
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; ffi::SYMM_UNIQUE_ID_BYTES] {
        &self.0.bytes
    }

    /// An id received from the PE that made it.
    pub fn from_bytes(bytes: [u8; ffi::SYMM_UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId(ffi::symm_unique_id { bytes })
    }
}

/// Options for [`Context::builder`]; unset options keep the library's
/// defaults (and the environment variables that adjust them).
#[derive(Clone, Debug, Default)]
pub struct ContextBuilder {
    backend: Option<Backend>,
    bootstrap: Option<Bootstrap>,
    thread_level: Option<ThreadLevel>,
    heap_cap: Option<u64>,
    device: Option<i32>,
    timeout_ms: Option<u32>,
    uid: Option<(UniqueId, i32, i32)>,
}

impl ContextBuilder {
    /// The backend (default [`Backend::Auto`]; `$SYMM_BACKEND` overrides Auto).
    pub fn backend(mut self, b: Backend) -> Self {
        self.backend = Some(b);
        self
    }
    /// The bootstrap mode (default [`Bootstrap::Auto`]).
    pub fn bootstrap(mut self, b: Bootstrap) -> Self {
        self.bootstrap = Some(b);
        self
    }
    /// The requested thread level (default [`ThreadLevel::Multiple`]).
    pub fn thread_level(mut self, t: ThreadLevel) -> Self {
        self.thread_level = Some(t);
        self
    }
    /// Maximum heap bytes per PE (default `$SYMM_HEAP_CAP` or the library's).
    pub fn heap_cap(mut self, bytes: u64) -> Self {
        self.heap_cap = Some(bytes);
        self
    }
    /// CUDA device ordinal (default: the local rank).
    pub fn device(mut self, ordinal: i32) -> Self {
        self.device = Some(ordinal);
        self
    }
    /// Bootstrap and peer-failure timeout in milliseconds.
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
    /// Join the job named by `id` as `rank` of `n_pes` (sets
    /// [`Bootstrap::Uid`]).
    pub fn unique_id(mut self, id: UniqueId, rank: i32, n_pes: i32) -> Self {
        self.uid = Some((id, rank, n_pes));
        self.bootstrap = Some(Bootstrap::Uid);
        self
    }

    /// Join the job (`symm_init`). Collective over every PE of the job.
    pub fn build(self) -> Result<Context> {
        // SAFETY: symm_init_attr is plain data; symm_init_attr_init fills it.
        let mut attr: ffi::symm_init_attr = unsafe { std::mem::zeroed() };
        // SAFETY: attr is valid for size_of bytes.
        check(unsafe {
            ffi::symm_init_attr_init(&mut attr, size_of::<ffi::symm_init_attr>() as u32)
        })?;
        if let Some(b) = self.backend {
            attr.backend = b.raw();
        }
        if let Some(b) = self.bootstrap {
            attr.bootstrap = b.raw();
        }
        if let Some(t) = self.thread_level {
            attr.thread_level = t.raw();
        }
        if let Some(c) = self.heap_cap {
            attr.heap_cap = c;
        }
        if let Some(d) = self.device {
            attr.device = d;
        }
        if let Some(t) = self.timeout_ms {
            attr.timeout_ms = t;
        }
        if let Some((id, rank, n)) = self.uid {
            attr.unique_id = id.0;
            attr.rank = rank;
            attr.n_pes = n;
        }
        let mut raw: ffi::symm_ctx = std::ptr::null_mut();
        // SAFETY: attr and raw are valid.
        check(unsafe { ffi::symm_init(&attr, &mut raw) })?;
        Ok(Context {
            raw,
            team_locks: Default::default(),
        })
    }
}

/// What [`Context::query`] reports (`symm_ctx_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextInfo {
    /// The backend in use (host or CUDA).
    pub backend: Backend,
    /// The provided thread level.
    pub thread_level: ThreadLevel,
    /// This PE's number.
    pub my_pe: i32,
    /// Number of PEs.
    pub n_pes: i32,
    /// Rank among the PEs of this host.
    pub local_pe: i32,
    /// Number of PEs on this host.
    pub local_n_pes: i32,
    /// CUDA ordinal, -1 on the host backend.
    pub device: i32,
    /// Heap cap in bytes.
    pub heap_cap: u64,
    /// Heap bytes currently backed.
    pub heap_mapped: u64,
    /// Heap bytes in live allocations.
    pub heap_used: u64,
}

/// One membership of a symm job with its symmetric heap (`symm_ctx`).
///
/// Create it with [`Context::init`] or [`Context::builder`] (collective over
/// the job); release it with [`Context::finalize`] (collective). Dropping a
/// context without `finalize` does **not** finalize it: the handle is leaked
/// (debug builds warn) and the OS reclaims the heap at process exit, because a
/// destructor must not run a collective that the other PEs may not be making.
///
/// `Send + Sync`: see the crate documentation on threads.
pub struct Context {
    raw: ffi::symm_ctx,
    /// One lock per predefined team (collectives on one team are serialised).
    pub(crate) team_locks: [Arc<Mutex<()>>; 4],
}

// SAFETY: the runtime is thread-safe at every level (symm.h, "Threads"); the
// handle is an opaque integer-like value; collectives per team are serialised
// by the team locks.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("my_pe", &self.my_pe())
            .field("n_pes", &self.n_pes())
            .finish()
    }
}

impl Context {
    /// Join the job with default attributes (from the environment: symmrun,
    /// torchrun, Open MPI, Slurm; else a single PE). Collective.
    pub fn init() -> Result<Context> {
        ContextBuilder::default().build()
    }

    /// Attributes for [`ContextBuilder::build`].
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// The raw handle (valid until `finalize`).
    pub fn as_raw(&self) -> ffi::symm_ctx {
        self.raw
    }

    /// This PE's number in `[0, n_pes)`.
    pub fn my_pe(&self) -> i32 {
        // SAFETY: any handle is accepted.
        unsafe { ffi::symm_my_pe(self.raw) }
    }

    /// Number of PEs in the job.
    pub fn n_pes(&self) -> i32 {
        // SAFETY: any handle is accepted.
        unsafe { ffi::symm_n_pes(self.raw) }
    }

    /// Describe the context (`symm_ctx_query`).
    pub fn query(&self) -> Result<ContextInfo> {
        // SAFETY: plain data.
        let mut i: ffi::symm_ctx_info = unsafe { std::mem::zeroed() };
        i.struct_size = size_of::<ffi::symm_ctx_info>() as u32;
        // SAFETY: i is valid and sized.
        check(unsafe { ffi::symm_ctx_query(self.raw, &mut i) })?;
        Ok(ContextInfo {
            backend: Backend::from_raw(i.backend),
            thread_level: ThreadLevel::from_raw(i.thread_level),
            my_pe: i.my_pe,
            n_pes: i.n_pes,
            local_pe: i.local_pe,
            local_n_pes: i.local_n_pes,
            device: i.device,
            heap_cap: i.heap_cap,
            heap_mapped: i.heap_mapped,
            heap_used: i.heap_used,
        })
    }

    /// The first asynchronous failure recorded on the context (a stream
    /// operation or GPU wait that failed after its call returned), or
    /// `Ok(None)`. With `clear` the record is cleared after reading
    /// (`symm_ctx_async_error`).
    pub fn async_error(&self, clear: bool) -> Result<Option<Error>> {
        let mut status: ffi::symm_status = 0;
        let mut msg = [0u8; 1024];
        let flags = if clear { ffi::SYMM_ASYNC_CLEAR } else { 0 };
        // SAFETY: msg holds msg_cap bytes; status is valid.
        check(unsafe {
            ffi::symm_ctx_async_error(
                self.raw,
                flags,
                msg.len() as u64,
                &mut status,
                msg.as_mut_ptr().cast(),
            )
        })?;
        if status == ffi::SYMM_SUCCESS {
            return Ok(None);
        }
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        Ok(Some(Error::from_code(
            status,
            String::from_utf8_lossy(&msg[..end]).into_owned(),
        )))
    }

    /// A predefined team (`symm_team_get`).
    pub fn team(&self, which: PredefinedTeam) -> Result<Team<'_>> {
        let mut t: ffi::symm_team = std::ptr::null_mut();
        // SAFETY: t is a valid out-parameter.
        check(unsafe { ffi::symm_team_get(self.raw, which.raw(), &mut t) })?;
        Ok(Team::predefined(
            self,
            t,
            self.team_locks[which.index()].clone(),
        ))
    }

    /// The team of every PE ([`PredefinedTeam::World`]).
    ///
    /// # Panics
    /// Never for a live context (the world team always exists).
    pub fn world(&self) -> Team<'_> {
        self.team(PredefinedTeam::World)
            .expect("symm: a live context always has its world team")
    }

    /// Allocate `count` elements of `T` on every PE, zeroed (`symm_buf_alloc`).
    /// Collective over the context: every PE passes the same `T` and `count`
    /// (else [`Error::Mismatch`] everywhere).
    pub fn alloc<T: Element>(&self, count: usize) -> Result<Buffer<'_, T>> {
        let mut b: ffi::symm_buf = std::ptr::null_mut();
        // SAFETY: b is a valid out-parameter.
        check(unsafe { ffi::symm_buf_alloc(self.raw, T::DTYPE, u64_of(count), &mut b) })?;
        Ok(Buffer::from_raw(self, b, count))
    }

    /// Make existing memory symmetric (`symm_buf_register`; CUDA backend
    /// only). Collective.
    ///
    /// # Safety
    /// `ptr` must point to `count` elements of `T` allocated as the C function
    /// requires (cuMemCreate with POSIX fd handles, mapped with cuMemMap), and
    /// stay valid until [`Buffer::free`] of the result (or `finalize`).
    pub unsafe fn register<T: Element>(&self, ptr: *mut T, count: usize) -> Result<Buffer<'_, T>> {
        let mut b: ffi::symm_buf = std::ptr::null_mut();
        check(ffi::symm_buf_register(
            self.raw,
            ptr.cast(),
            T::DTYPE,
            u64_of(count),
            &mut b,
        ))?;
        Ok(Buffer::from_raw(self, b, count))
    }

    /// Complete every outstanding operation this PE issued (`symm_quiet`).
    pub fn quiet(&self) -> Result<()> {
        // SAFETY: handle only.
        check(unsafe { ffi::symm_quiet(self.raw) })
    }

    /// Order puts/atomics to each PE before later ones (`symm_fence`).
    pub fn fence(&self) -> Result<()> {
        // SAFETY: handle only.
        check(unsafe { ffi::symm_fence(self.raw) })
    }

    /// Quiet, then wait for every PE (`symm_barrier_all`). Collective.
    pub fn barrier_all(&self) -> Result<()> {
        let _g = crate::team::lock(&self.team_locks[PredefinedTeam::World.index()]);
        // SAFETY: handle only.
        check(unsafe { ffi::symm_barrier_all(self.raw) })
    }

    /// Wait for every PE, no quiet (`symm_sync_all`). Collective.
    pub fn sync_all(&self) -> Result<()> {
        let _g = crate::team::lock(&self.team_locks[PredefinedTeam::World.index()]);
        // SAFETY: handle only.
        check(unsafe { ffi::symm_sync_all(self.raw) })
    }

    /// Byte put to a symmetric address (`symm_putmem`).
    ///
    /// # Safety
    /// `dst_sym` must be a symmetric address of this context (inside this PE's
    /// heap; the range is bounds-checked against the heap, not against a
    /// buffer); `src` must be readable for `nbytes`.
    pub unsafe fn putmem(
        &self,
        dst_sym: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        pe: i32,
    ) -> Result<()> {
        check(ffi::symm_putmem(self.raw, dst_sym, src, u64_of(nbytes), pe))
    }

    /// Byte get from a symmetric address (`symm_getmem`).
    ///
    /// # Safety
    /// `dst` must be writable for `nbytes`; `src_sym` a symmetric address.
    pub unsafe fn getmem(
        &self,
        dst: *mut c_void,
        src_sym: *const c_void,
        nbytes: usize,
        pe: i32,
    ) -> Result<()> {
        check(ffi::symm_getmem(self.raw, dst, src_sym, u64_of(nbytes), pe))
    }

    /// Non-blocking [`Context::putmem`] (`symm_putmem_nbi`).
    ///
    /// # Safety
    /// As `putmem`, and `src` must stay valid and unchanged until the next
    /// quiet (or barrier) on this context.
    pub unsafe fn putmem_nbi(
        &self,
        dst_sym: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        pe: i32,
    ) -> Result<()> {
        check(ffi::symm_putmem_nbi(
            self.raw,
            dst_sym,
            src,
            u64_of(nbytes),
            pe,
        ))
    }

    /// Non-blocking [`Context::getmem`] (`symm_getmem_nbi`).
    ///
    /// # Safety
    /// As `getmem`, and `dst` must stay valid (and unread) until the next
    /// quiet (or barrier) on this context.
    pub unsafe fn getmem_nbi(
        &self,
        dst: *mut c_void,
        src_sym: *const c_void,
        nbytes: usize,
        pe: i32,
    ) -> Result<()> {
        check(ffi::symm_getmem_nbi(
            self.raw,
            dst,
            src_sym,
            u64_of(nbytes),
            pe,
        ))
    }

    /// Address at which this process can load/store `pe`'s copy of the
    /// symmetric address `sym`, or `None` when `pe` is not reachable
    /// (`symm_ptr`).
    // sym is an address to translate, never dereferenced.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn ptr(&self, sym: *const c_void, pe: i32) -> Result<Option<*mut c_void>> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: sym is only compared against the heap range, never read.
        check(unsafe { ffi::symm_ptr(self.raw, sym, pe, &mut p) })?;
        Ok(if p.is_null() { None } else { Some(p) })
    }

    /// Stream-ordered quiet (`symm_quiet_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn quiet_on_stream(&self, stream: Stream) -> Result<()> {
        check(ffi::symm_quiet_on_stream(self.raw, stream))
    }

    /// Stream-ordered barrier over every PE (`symm_barrier_all_on_stream`).
    /// Collective.
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn barrier_all_on_stream(&self, stream: Stream) -> Result<()> {
        let _g = crate::team::lock(&self.team_locks[PredefinedTeam::World.index()]);
        check(ffi::symm_barrier_all_on_stream(self.raw, stream))
    }

    /// Stream-ordered byte put (`symm_putmem_on_stream`).
    ///
    /// # Safety
    /// As [`Context::putmem`]; `src` (device or pinned memory) must stay valid
    /// and unchanged until the stream reaches the operation.
    pub unsafe fn putmem_on_stream(
        &self,
        dst_sym: *mut c_void,
        src: *const c_void,
        nbytes: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_putmem_on_stream(
            self.raw,
            dst_sym,
            src,
            u64_of(nbytes),
            pe,
            stream,
        ))
    }

    /// Stream-ordered byte get (`symm_getmem_on_stream`).
    ///
    /// # Safety
    /// As [`Context::getmem`]; `dst` must stay valid until the stream reaches
    /// the operation.
    pub unsafe fn getmem_on_stream(
        &self,
        dst: *mut c_void,
        src_sym: *const c_void,
        nbytes: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_getmem_on_stream(
            self.raw,
            dst,
            src_sym,
            u64_of(nbytes),
            pe,
            stream,
        ))
    }

    /// The context as seen by GPU code (`symm_device_ctx_get`; CUDA backend,
    /// [`Error::NotSupported`] on the host backend). Valid until `finalize`.
    pub fn device_ctx(&self) -> Result<ffi::symm_device_ctx> {
        // SAFETY: plain data.
        let mut d: ffi::symm_device_ctx = unsafe { std::mem::zeroed() };
        d.struct_size = size_of::<ffi::symm_device_ctx>() as u32;
        // SAFETY: d is valid and sized.
        check(unsafe { ffi::symm_device_ctx_get(self.raw, &mut d) })?;
        Ok(d)
    }

    /// Leave the job (`symm_finalize`): barrier, then release everything the
    /// context holds, including buffers and split teams that were dropped
    /// without `free`/`destroy`. Collective over the context. If a peer died,
    /// local resources are still released and [`Error::PeerFailed`] returned.
    pub fn finalize(self) -> Result<()> {
        let mut me = ManuallyDrop::new(self);
        let mut raw = me.raw;
        // SAFETY: raw is our live handle; it is not used again.
        let r = check(unsafe { ffi::symm_finalize(&mut raw) });
        // SAFETY: the locks are dropped exactly once (Drop does not run).
        unsafe { std::ptr::drop_in_place(&mut me.team_locks) };
        r
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if cfg!(debug_assertions) && !std::thread::panicking() {
            eprintln!(
                "symm: Context dropped without finalize(); its heap is leaked until the process \
                 exits (finalize is collective: call it explicitly on every PE)"
            );
        }
    }
}

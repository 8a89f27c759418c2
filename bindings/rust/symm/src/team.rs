//! `Team`: an ordered subset of a context's PEs, and the collectives over it.
// The collectives mirror the C signatures (team, dst, index, src, index, n, ...).
#![allow(clippy::too_many_arguments)]

use std::mem::{size_of, ManuallyDrop};
use std::sync::{Arc, Mutex, MutexGuard};

use symm_sys as ffi;

use crate::buffer::Buffer;
use crate::context::Context;
use crate::element::{Count, Element};
use crate::error::{check, Result};
use crate::{u64_of, warn_leak, ReduceOp, Stream};

/// The teams every context has (`SYMM_TEAM_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PredefinedTeam {
    /// Every PE of the context.
    World,
    /// The PEs load/store reachable from this PE.
    Shared,
    /// The PEs of this host.
    Node,
    /// The PEs with this PE's local rank, one per host.
    SameLocalPe,
}

impl PredefinedTeam {
    pub(crate) fn raw(self) -> u32 {
        match self {
            PredefinedTeam::World => ffi::SYMM_TEAM_WORLD,
            PredefinedTeam::Shared => ffi::SYMM_TEAM_SHARED,
            PredefinedTeam::Node => ffi::SYMM_TEAM_NODE,
            PredefinedTeam::SameLocalPe => ffi::SYMM_TEAM_SAME_LOCAL_PE,
        }
    }
    pub(crate) fn index(self) -> usize {
        self.raw() as usize
    }
}

pub(crate) fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An ordered subset of a context's PEs (`symm_team`), borrowed from its
/// [`Context`].
///
/// Predefined teams ([`Context::world`], [`Context::team`]) belong to the
/// context. Split teams ([`Team::split_strided`], [`Team::split_2d`]) are
/// released with [`Team::destroy`], which is collective over the team; a
/// dropped split team is leaked (no collective runs; debug builds warn) until
/// [`Context::finalize`].
///
/// Collectives on one team are serialised by a lock inside the team, so a
/// `Team` may be shared between threads; every PE must still call a team's
/// collectives in the same order. Collectives on different teams may run in
/// different threads at once. Every PE passes the same `dst` and `src`
/// buffers and indices (an in-place gather's `src` is its own block of `dst`),
/// and is in place or not alike: the blocking forms return
/// [`Error::Mismatch`](crate::Error::Mismatch) otherwise, the stream forms
/// cannot check.
pub struct Team<'ctx> {
    raw: ffi::symm_team,
    ctx: &'ctx Context,
    lock: Arc<Mutex<()>>,
    split: bool,
}

// SAFETY: the runtime is thread-safe; collectives are serialised by `lock`.
unsafe impl Send for Team<'_> {}
// SAFETY: as above.
unsafe impl Sync for Team<'_> {}

impl std::fmt::Debug for Team<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("my_pe", &self.my_pe())
            .field("n_pes", &self.n_pes())
            .field("split", &self.split)
            .finish()
    }
}

fn team_config(num_contexts: Option<i32>) -> Result<Option<ffi::symm_team_config>> {
    let Some(n) = num_contexts else {
        return Ok(None);
    };
    let mut c = ffi::symm_team_config {
        struct_size: 0,
        num_contexts: 0,
    };
    // SAFETY: c is valid for its size.
    check(unsafe {
        ffi::symm_team_config_init(&mut c, size_of::<ffi::symm_team_config>() as u32)
    })?;
    c.num_contexts = n;
    Ok(Some(c))
}

fn cfg_ptr(c: &Option<ffi::symm_team_config>) -> *const ffi::symm_team_config {
    c.as_ref().map_or(std::ptr::null(), |c| c as *const _)
}

impl<'ctx> Team<'ctx> {
    pub(crate) fn predefined(
        ctx: &'ctx Context,
        raw: ffi::symm_team,
        lock: Arc<Mutex<()>>,
    ) -> Self {
        Team {
            raw,
            ctx,
            lock,
            split: false,
        }
    }

    fn new_split(&self, raw: ffi::symm_team) -> Option<Team<'ctx>> {
        if raw.is_null() {
            None
        } else {
            Some(Team {
                raw,
                ctx: self.ctx,
                lock: Arc::new(Mutex::new(())),
                split: true,
            })
        }
    }

    /// The raw handle.
    pub fn as_raw(&self) -> ffi::symm_team {
        self.raw
    }

    /// The context the team belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// This PE's number in the team.
    pub fn my_pe(&self) -> i32 {
        // SAFETY: any handle is accepted.
        unsafe { ffi::symm_team_my_pe(self.raw) }
    }

    /// Number of PEs in the team.
    pub fn n_pes(&self) -> i32 {
        // SAFETY: any handle is accepted.
        unsafe { ffi::symm_team_n_pes(self.raw) }
    }

    /// The number in `dst` of this team's PE `pe`, or `None` when that PE is
    /// not in `dst` (`symm_team_translate_pe`).
    pub fn translate_pe(&self, pe: i32, dst: &Team<'_>) -> Option<i32> {
        // SAFETY: any handles are accepted.
        let r = unsafe { ffi::symm_team_translate_pe(self.raw, pe, dst.raw) };
        (r >= 0).then_some(r)
    }

    /// The team's `num_contexts` hint (`symm_team_get_config`).
    pub fn num_contexts(&self) -> Result<i32> {
        let mut c = ffi::symm_team_config {
            struct_size: size_of::<ffi::symm_team_config>() as u32,
            num_contexts: 0,
        };
        // SAFETY: c is valid and sized.
        check(unsafe { ffi::symm_team_get_config(self.raw, &mut c) })?;
        Ok(c.num_contexts)
    }

    /// New team of this team's PEs `start, start + stride, ...` (`size` PEs;
    /// stride may be negative, not 0). `None` on PEs that are not members.
    /// Collective over this team (`symm_team_split_strided`).
    pub fn split_strided(&self, start: i32, stride: i32, size: i32) -> Result<Option<Team<'ctx>>> {
        self.split_strided_with(start, stride, size, None)
    }

    /// [`Team::split_strided`] with a `num_contexts` hint for the new team.
    pub fn split_strided_with(
        &self,
        start: i32,
        stride: i32,
        size: i32,
        num_contexts: Option<i32>,
    ) -> Result<Option<Team<'ctx>>> {
        let c = team_config(num_contexts)?;
        let mut t: ffi::symm_team = std::ptr::null_mut();
        let _g = lock(&self.lock);
        // SAFETY: config is NULL or valid; t is an out-parameter.
        check(unsafe {
            ffi::symm_team_split_strided(self.raw, start, stride, size, cfg_ptr(&c), &mut t)
        })?;
        Ok(self.new_split(t))
    }

    /// Split this team into a grid of rows of `xrange` PEs: returns this PE's
    /// (row, column) teams. Collective over this team (`symm_team_split_2d`).
    pub fn split_2d(&self, xrange: i32) -> Result<(Option<Team<'ctx>>, Option<Team<'ctx>>)> {
        let mut x: ffi::symm_team = std::ptr::null_mut();
        let mut y: ffi::symm_team = std::ptr::null_mut();
        let _g = lock(&self.lock);
        // SAFETY: configs NULL; x, y out-parameters.
        check(unsafe {
            ffi::symm_team_split_2d(
                self.raw,
                xrange,
                std::ptr::null(),
                std::ptr::null(),
                &mut x,
                &mut y,
            )
        })?;
        Ok((self.new_split(x), self.new_split(y)))
    }

    /// Destroy a split team (`symm_team_destroy`). Collective over the team.
    /// A predefined team belongs to its context: destroying one is
    /// [`Error::InvalidArg`](crate::Error::InvalidArg) and changes nothing.
    pub fn destroy(self) -> Result<()> {
        let mut me = ManuallyDrop::new(self);
        let r = {
            let _g = lock(&me.lock);
            // SAFETY: our handle, not used again (a predefined one is refused).
            check(unsafe { ffi::symm_team_destroy(me.raw) })
        };
        // SAFETY: the Arc is dropped exactly once (Drop does not run).
        unsafe { std::ptr::drop_in_place(&mut me.lock) };
        r
    }

    /// The team as seen by GPU code (`symm_device_team_get`).
    pub fn device_team(&self) -> Result<ffi::symm_device_team> {
        // SAFETY: plain data.
        let mut d: ffi::symm_device_team = unsafe { std::mem::zeroed() };
        d.struct_size = size_of::<ffi::symm_device_team>() as u32;
        // SAFETY: d valid and sized.
        check(unsafe { ffi::symm_device_team_get(self.raw, &mut d) })?;
        Ok(d)
    }

    /// Quiet, then wait for every PE of the team (`symm_barrier`). Collective.
    pub fn barrier(&self) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: handle only.
        check(unsafe { ffi::symm_barrier(self.raw) })
    }

    /// Wait for every PE of the team, no quiet (`symm_team_sync`). Collective.
    pub fn sync(&self) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: handle only.
        check(unsafe { ffi::symm_team_sync(self.raw) })
    }

    /// Root's `src[src_index ..+ nelems]` is copied to every PE's `dst` range
    /// (`root` in team numbers). Collective (`symm_broadcast`).
    pub fn broadcast<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        root: i32,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: handles and integers; ranges are bounds-checked by the runtime.
        check(unsafe {
            ffi::symm_broadcast(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
                root,
            )
        })
    }

    /// `dst[i * nelems ..]` receives team PE i's `src` range, on every PE.
    /// Collective (`symm_fcollect`).
    pub fn fcollect<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: as broadcast.
        check(unsafe {
            ffi::symm_fcollect(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
            )
        })
    }

    /// Like fcollect with per-PE `nelems`: blocks concatenated in team order.
    /// Collective (`symm_collect`).
    pub fn collect<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: as broadcast.
        check(unsafe {
            ffi::symm_collect(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
            )
        })
    }

    /// Block j of `src` (`nelems` each) goes to team PE j's `dst` block i
    /// (i = this PE). Collective (`symm_alltoall`).
    pub fn alltoall<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: as broadcast.
        check(unsafe {
            ffi::symm_alltoall(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
            )
        })
    }

    /// Variable-size all-to-all with its counts in symmetric memory, as MoE
    /// dispatch and combine need it (`symm_alltoallv`, since ABI 1.2).
    /// Collective.
    ///
    /// Every PE sends `send_counts[send_index + j]` elements to team PE `j`.
    /// The counts are read from symmetric memory when the call gets there
    /// (peers read them too), so counts that a kernel just computed need no
    /// copy to the host. With `n` = [`Team::n_pes`]:
    ///
    /// - `src`: `src_nelems` elements from `src_index`, packed in team order:
    ///   the elements for team PE 0, then those for PE 1, ...
    /// - `send_counts`: `n` entries from `send_index`: how many elements go to
    ///   each team PE.
    /// - `dst`: room for `dst_nelems` elements from `dst_index`; receives PE 0's
    ///   elements for this PE, then PE 1's, ... (packed).
    /// - `recv_counts`: `2 * n` entries from `recv_index`, written by the call:
    ///   `[j]` how many elements came from team PE `j`, `[n + j]` where they
    ///   start in `dst`, relative to `dst_index`.
    ///
    /// Count buffers are `u64` or `i64` ([`Count`]) and read as `u64`: a
    /// negative `i64` count is a huge one. Every buffer belongs to the team's
    /// context, and the `dst`, `src`, `send_counts` and `recv_counts` ranges
    /// must not overlap, except `src` with `send_counts` (both only read);
    /// an overlap is [`Error::InvalidArg`](crate::Error::InvalidArg).
    /// `src_index`, `src_nelems` and `send_index` must be the same on every PE
    /// (peers are read at this PE's offsets): otherwise every PE gets
    /// [`Error::Mismatch`](crate::Error::Mismatch). An argument error of one PE
    /// is that PE's error, and the other PEs get `Error::Mismatch`; nothing is
    /// moved then.
    ///
    /// # Out of bounds
    ///
    /// The counts are only known when the call runs; each PE checks what
    /// concerns it and returns [`Error::OutOfBounds`](crate::Error::OutOfBounds)
    /// when
    ///
    /// - its send counts add up to more than `src_nelems`, or
    /// - it would receive more than `dst_nelems` elements, or some of its
    ///   incoming elements lie beyond their sender's `src_nelems`: then it
    ///   copies nothing into `dst`, but still writes `recv_counts` (what would
    ///   have come).
    ///
    /// The other PEs finish normally with their complete result, and the team
    /// stays usable.
    ///
    /// A runtime older than 1.2 (the loader compiled into this crate is 1.2)
    /// answers [`Error::NotSupported`](crate::Error::NotSupported).
    ///
    /// # Combine
    ///
    /// The reverse exchange is the same call with the forward call's
    /// `recv_counts` (its first `n` entries, at the forward `recv_index`) as
    /// `send_counts`, and the forward `dst` (at `dst_index`) as `src`: every
    /// element returns to the slot of the forward `src` it left from. The
    /// combine writes its own receive counts to another range.
    pub fn alltoallv<T: Element, C: Count>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        dst_nelems: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        src_nelems: usize,
        send_counts: &Buffer<'_, C>,
        send_index: usize,
        recv_counts: &Buffer<'_, C>,
        recv_index: usize,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: handles and integers; every range is checked by the runtime.
        check(unsafe {
            ffi::symm_alltoallv(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                u64_of(dst_nelems),
                src.as_raw(),
                u64_of(src_index),
                u64_of(src_nelems),
                send_counts.as_raw(),
                u64_of(send_index),
                recv_counts.as_raw(),
                u64_of(recv_index),
            )
        })
    }

    /// Element-wise reduction of every PE's `src` range into every PE's `dst`
    /// range. Collective (`symm_reduce`).
    pub fn reduce<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        op: ReduceOp,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: as broadcast.
        check(unsafe {
            ffi::symm_reduce(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
                op.raw(),
            )
        })
    }

    /// `src` holds n_pes blocks of `nelems`; PE i's `dst` receives the
    /// reduction of every PE's block i. Collective (`symm_reducescatter`).
    pub fn reducescatter<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        op: ReduceOp,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        // SAFETY: as broadcast.
        check(unsafe {
            ffi::symm_reducescatter(
                self.raw,
                dst.as_raw(),
                u64_of(dst_index),
                src.as_raw(),
                u64_of(src_index),
                u64_of(nelems),
                op.raw(),
            )
        })
    }

    /// Stream-ordered [`Team::barrier`] (`symm_barrier_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn barrier_on_stream(&self, stream: Stream) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_barrier_on_stream(self.raw, stream))
    }

    /// Stream-ordered [`Team::sync`] (`symm_team_sync_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn sync_on_stream(&self, stream: Stream) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_team_sync_on_stream(self.raw, stream))
    }

    /// Stream-ordered [`Team::broadcast`] (`symm_broadcast_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null), and
    /// both buffers must stay allocated until the stream reaches the operation.
    pub unsafe fn broadcast_on_stream<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        root: i32,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_broadcast_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            src.as_raw(),
            u64_of(src_index),
            u64_of(nelems),
            root,
            stream,
        ))
    }

    /// Stream-ordered [`Team::fcollect`] (`symm_fcollect_on_stream`).
    ///
    /// # Safety
    /// As [`Team::broadcast_on_stream`].
    pub unsafe fn fcollect_on_stream<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_fcollect_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            src.as_raw(),
            u64_of(src_index),
            u64_of(nelems),
            stream,
        ))
    }

    /// Stream-ordered [`Team::alltoall`] (`symm_alltoall_on_stream`).
    ///
    /// # Safety
    /// As [`Team::broadcast_on_stream`].
    pub unsafe fn alltoall_on_stream<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_alltoall_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            src.as_raw(),
            u64_of(src_index),
            u64_of(nelems),
            stream,
        ))
    }

    /// Stream-ordered [`Team::alltoallv`] (`symm_alltoallv_on_stream`, since
    /// ABI 1.2): enqueued on `stream` (graph-capturable); on the CUDA backend
    /// one kernel that reads the counts on the GPU when the stream reaches it.
    ///
    /// The returned status is about the arguments. An out-of-bounds exchange
    /// found on the GPU is not returned here: it is recorded on the context
    /// ([`Context::async_error`]), and `recv_counts` says what would have
    /// come. The stream form cannot compare `src_index`, `src_nelems` and
    /// `send_index` across PEs (no [`Error::Mismatch`](crate::Error::Mismatch)):
    /// they must agree. On the host backend the call runs to completion
    /// before returning and returns its status as [`Team::alltoallv`] does.
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null), and the
    /// four buffers must stay allocated until the stream reaches the
    /// operation.
    pub unsafe fn alltoallv_on_stream<T: Element, C: Count>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        dst_nelems: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        src_nelems: usize,
        send_counts: &Buffer<'_, C>,
        send_index: usize,
        recv_counts: &Buffer<'_, C>,
        recv_index: usize,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_alltoallv_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            u64_of(dst_nelems),
            src.as_raw(),
            u64_of(src_index),
            u64_of(src_nelems),
            send_counts.as_raw(),
            u64_of(send_index),
            recv_counts.as_raw(),
            u64_of(recv_index),
            stream,
        ))
    }

    /// Stream-ordered [`Team::reduce`] (`symm_reduce_on_stream`).
    ///
    /// # Safety
    /// As [`Team::broadcast_on_stream`].
    pub unsafe fn reduce_on_stream<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        op: ReduceOp,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_reduce_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            src.as_raw(),
            u64_of(src_index),
            u64_of(nelems),
            op.raw(),
            stream,
        ))
    }

    /// Stream-ordered [`Team::reducescatter`] (`symm_reducescatter_on_stream`).
    ///
    /// # Safety
    /// As [`Team::broadcast_on_stream`].
    pub unsafe fn reducescatter_on_stream<T: Element>(
        &self,
        dst: &Buffer<'_, T>,
        dst_index: usize,
        src: &Buffer<'_, T>,
        src_index: usize,
        nelems: usize,
        op: ReduceOp,
        stream: Stream,
    ) -> Result<()> {
        let _g = lock(&self.lock);
        check(ffi::symm_reducescatter_on_stream(
            self.raw,
            dst.as_raw(),
            u64_of(dst_index),
            src.as_raw(),
            u64_of(src_index),
            u64_of(nelems),
            op.raw(),
            stream,
        ))
    }
}

impl Drop for Team<'_> {
    fn drop(&mut self) {
        if self.split {
            warn_leak("a split Team");
        }
    }
}

//! `Buffer<T>`: a typed symmetric allocation, with RMA, signals, atomics,
//! waits and tests, and the non-blocking scope.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::raw::c_void;

use symm_sys as ffi;

use crate::context::Context;
use crate::element::{Element, Integer};
use crate::error::{check, Error, Result};
use crate::{u64_of, warn_leak, AtomicOp, Cmp, SignalOp, Stream};

/// `count` elements of `T` at the same symmetric offset on every PE
/// (`symm_buf`), borrowed from its [`Context`].
///
/// Indices are element indices; every range is bounds-checked by the runtime
/// ([`Error::OutOfBounds`] with a message, nothing transferred). `pe` is a PE
/// number of the context ([`Error::InvalidArg`] outside `[0, n_pes)`).
///
/// Release it with [`Buffer::free`] (collective). Dropping a live buffer does
/// not free it (that is a collective): the allocation is leaked until
/// [`Context::finalize`] releases it, and debug builds print a warning.
pub struct Buffer<'ctx, T: Element> {
    raw: ffi::symm_buf,
    ctx: &'ctx Context,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: the runtime is thread-safe; the handle is an opaque value and no
// local memory is owned by the Rust object.
unsafe impl<T: Element> Send for Buffer<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for Buffer<'_, T> {}

impl<T: Element> std::fmt::Debug for Buffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len)
            .finish()
    }
}

fn mask(status: Option<&[i32]>, nelems: usize, what: &str) -> Result<*const i32> {
    match status {
        None => Ok(std::ptr::null()),
        Some(s) if s.len() == nelems => Ok(s.as_ptr()),
        Some(s) => Err(Error::invalid_arg(format!(
            "{what}: the status mask has {} entries for {nelems} elements",
            s.len()
        ))),
    }
}

fn found(i: u64) -> Option<usize> {
    (i != ffi::SYMM_INDEX_NONE).then_some(i as usize)
}

impl<'ctx, T: Element> Buffer<'ctx, T> {
    pub(crate) fn from_raw(ctx: &'ctx Context, raw: ffi::symm_buf, len: usize) -> Self {
        Buffer {
            raw,
            ctx,
            len,
            _t: PhantomData,
        }
    }

    /// The raw handle.
    pub fn as_raw(&self) -> ffi::symm_buf {
        self.raw
    }

    /// The context the buffer belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Symmetric byte offset of the buffer in the heap (`symm_buf_query`).
    pub fn offset(&self) -> Result<u64> {
        let mut off = 0u64;
        // SAFETY: dtype and count outs are optional (NULL).
        check(unsafe {
            ffi::symm_buf_query(
                self.raw,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut off,
            )
        })?;
        Ok(off)
    }

    /// Local address of element 0 (`symm_buf_ptr`): host memory on the host
    /// backend, device memory on CUDA. Reading or writing through it races
    /// with remote PEs unless your protocol orders them.
    pub fn as_ptr(&self) -> Result<*mut T> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: p is an out-parameter.
        check(unsafe { ffi::symm_buf_ptr(self.raw, &mut p) })?;
        Ok(p.cast())
    }

    /// Address at which this process can load/store `pe`'s copy, or `None`
    /// when `pe` is not reachable (`symm_buf_peer_ptr`).
    pub fn peer_ptr(&self, pe: i32) -> Result<Option<*mut T>> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: p is an out-parameter.
        check(unsafe { ffi::symm_buf_peer_ptr(self.raw, pe, &mut p) })?;
        Ok(if p.is_null() { None } else { Some(p.cast()) })
    }

    /// Write `src` into `pe`'s copy at `index..index + src.len()`; returns when
    /// the data is visible at the target (`symm_put`).
    pub fn put(&self, index: usize, src: &[T], pe: i32) -> Result<()> {
        // SAFETY: src is readable for src.len() elements; not kept.
        check(unsafe {
            ffi::symm_put(
                self.raw,
                u64_of(index),
                src.as_ptr().cast(),
                u64_of(src.len()),
                pe,
            )
        })
    }

    /// Read `pe`'s copy at `index..index + dst.len()` into `dst` (`symm_get`).
    pub fn get(&self, index: usize, dst: &mut [T], pe: i32) -> Result<()> {
        // SAFETY: dst is writable for dst.len() elements; T accepts any bits.
        check(unsafe {
            ffi::symm_get(
                dst.as_mut_ptr().cast(),
                self.raw,
                u64_of(index),
                u64_of(dst.len()),
                pe,
            )
        })
    }

    /// Write one element (`symm_p`).
    pub fn p(&self, index: usize, value: T, pe: i32) -> Result<()> {
        // SAFETY: value is one element, read at call time.
        check(unsafe { ffi::symm_p(self.raw, u64_of(index), (&value as *const T).cast(), pe) })
    }

    /// Read one element (`symm_g`).
    pub fn g(&self, index: usize, pe: i32) -> Result<T> {
        let mut v = T::default();
        // SAFETY: v is one writable element.
        check(unsafe { ffi::symm_g(self.raw, u64_of(index), pe, (&mut v as *mut T).cast()) })?;
        Ok(v)
    }

    /// Non-blocking put (`symm_put_nbi`): completes at the next quiet.
    /// Prefer [`Context::nbi_scope`], which is safe.
    ///
    /// # Safety
    /// `src` is read until the next [`Context::quiet`] (or barrier) on this
    /// context returns: it must not be freed or modified before then.
    pub unsafe fn put_nbi(&self, index: usize, src: &[T], pe: i32) -> Result<()> {
        check(ffi::symm_put_nbi(
            self.raw,
            u64_of(index),
            src.as_ptr().cast(),
            u64_of(src.len()),
            pe,
        ))
    }

    /// Non-blocking get (`symm_get_nbi`): `dst` is written by the next quiet.
    /// Prefer [`Context::nbi_scope`], which is safe.
    ///
    /// # Safety
    /// `dst` is written until the next [`Context::quiet`] (or barrier) on this
    /// context returns: it must stay valid and must not be read or written
    /// before then.
    pub unsafe fn get_nbi(&self, index: usize, dst: &mut [T], pe: i32) -> Result<()> {
        check(ffi::symm_get_nbi(
            dst.as_mut_ptr().cast(),
            self.raw,
            u64_of(index),
            u64_of(dst.len()),
            pe,
        ))
    }

    /// Put `src`, then update `pe`'s signal `sig[sig_index]` with `op` and
    /// `signal` once the data is visible (`symm_put_signal`). `sig` must be in
    /// the same context and its element outside the data range.
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal(
        &self,
        index: usize,
        src: &[T],
        sig: &Buffer<'_, u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: i32,
    ) -> Result<()> {
        // SAFETY: src readable for its length; not kept.
        check(unsafe {
            ffi::symm_put_signal(
                self.raw,
                u64_of(index),
                src.as_ptr().cast(),
                u64_of(src.len()),
                sig.raw,
                u64_of(sig_index),
                signal,
                op.raw(),
                pe,
            )
        })
    }

    /// Non-blocking [`Buffer::put_signal`] (`symm_put_signal_nbi`). Prefer
    /// [`Context::nbi_scope`].
    ///
    /// # Safety
    /// As [`Buffer::put_nbi`]: `src` is read until the next quiet.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal_nbi(
        &self,
        index: usize,
        src: &[T],
        sig: &Buffer<'_, u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: i32,
    ) -> Result<()> {
        check(ffi::symm_put_signal_nbi(
            self.raw,
            u64_of(index),
            src.as_ptr().cast(),
            u64_of(src.len()),
            sig.raw,
            u64_of(sig_index),
            signal,
            op.raw(),
            pe,
        ))
    }

    /// One atomic operation on `pe`'s element `index` (`symm_atomic`); returns
    /// the prior value for fetching ops (`Fetch*`, `Swap`, `CompareSwap`) and
    /// `T::default()` otherwise. `compare` is used by `CompareSwap` only.
    /// Integer ops need a 32/64-bit integer buffer; `Fetch`, `Set`, `Swap`
    /// also take `f32`/`f64` (else [`Error::InvalidArg`]).
    pub fn atomic(&self, index: usize, op: AtomicOp, value: T, compare: T, pe: i32) -> Result<T> {
        let mut fetched = T::default();
        // SAFETY: operands are single elements read at call time; fetched is
        // written before return.
        check(unsafe {
            ffi::symm_atomic(
                self.raw,
                u64_of(index),
                op.raw(),
                (&value as *const T).cast(),
                (&compare as *const T).cast(),
                pe,
                (&mut fetched as *mut T).cast(),
            )
        })?;
        Ok(fetched)
    }

    /// Non-blocking atomic (`symm_atomic_nbi`): `*fetched` is written by the
    /// next quiet. Prefer [`NbiScope::atomic`].
    ///
    /// # Safety
    /// `fetched` must stay valid (and unread) until the next quiet on this
    /// context returns.
    pub unsafe fn atomic_nbi(
        &self,
        index: usize,
        op: AtomicOp,
        value: T,
        compare: T,
        pe: i32,
        fetched: *mut T,
    ) -> Result<()> {
        check(ffi::symm_atomic_nbi(
            self.raw,
            u64_of(index),
            op.raw(),
            (&value as *const T).cast(),
            (&compare as *const T).cast(),
            pe,
            fetched.cast(),
        ))
    }

    /// Atomically read `pe`'s element.
    pub fn atomic_fetch(&self, index: usize, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::Fetch, T::default(), T::default(), pe)
    }

    /// Atomically write `pe`'s element.
    pub fn atomic_set(&self, index: usize, value: T, pe: i32) -> Result<()> {
        self.atomic(index, AtomicOp::Set, value, T::default(), pe)
            .map(drop)
    }

    /// Atomically swap; returns the prior value.
    pub fn atomic_swap(&self, index: usize, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::Swap, value, T::default(), pe)
    }

    /// Write `value` if the element equals `compare`; returns the prior value.
    pub fn atomic_compare_swap(&self, index: usize, compare: T, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::CompareSwap, value, compare, pe)
    }

    /// Signal-style update of `pe`'s element `sig_index` without data
    /// (`symm_signal_op`; needs a `u64` buffer).
    pub fn signal_op(&self, sig_index: usize, signal: u64, op: SignalOp, pe: i32) -> Result<()> {
        // SAFETY: handle and integers.
        check(unsafe { ffi::symm_signal_op(self.raw, u64_of(sig_index), signal, op.raw(), pe) })
    }

    /// Read this PE's signal atomically (`symm_signal_fetch`).
    pub fn signal_fetch(&self, sig_index: usize) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: v is an out-parameter.
        check(unsafe { ffi::symm_signal_fetch(self.raw, u64_of(sig_index), &mut v) })?;
        Ok(v)
    }

    /// Wait until this PE's signal compares true against `value`; returns the
    /// value that satisfied it (`symm_signal_wait_until`). A dead peer gives
    /// [`Error::PeerFailed`].
    pub fn signal_wait_until(&self, sig_index: usize, cmp: Cmp, value: u64) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: v is an out-parameter.
        check(unsafe {
            ffi::symm_signal_wait_until(self.raw, u64_of(sig_index), cmp.raw(), value, &mut v)
        })?;
        Ok(v)
    }

    /// Stream-ordered put (`symm_put_on_stream`).
    ///
    /// # Safety
    /// `src` (device or pinned memory, `nelems` elements) must stay valid and
    /// unchanged until `stream` (a valid CUDA stream or null) reaches the
    /// operation.
    pub unsafe fn put_on_stream(
        &self,
        index: usize,
        src: *const T,
        nelems: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_put_on_stream(
            self.raw,
            u64_of(index),
            src.cast(),
            u64_of(nelems),
            pe,
            stream,
        ))
    }

    /// Stream-ordered get (`symm_get_on_stream`).
    ///
    /// # Safety
    /// `dst` (`nelems` elements) must stay valid until `stream` reaches the
    /// operation.
    pub unsafe fn get_on_stream(
        &self,
        index: usize,
        dst: *mut T,
        nelems: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_get_on_stream(
            dst.cast(),
            self.raw,
            u64_of(index),
            u64_of(nelems),
            pe,
            stream,
        ))
    }

    /// Stream-ordered non-blocking put (`symm_put_nbi_on_stream`).
    ///
    /// # Safety
    /// As [`Buffer::put_on_stream`].
    pub unsafe fn put_nbi_on_stream(
        &self,
        index: usize,
        src: *const T,
        nelems: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_put_nbi_on_stream(
            self.raw,
            u64_of(index),
            src.cast(),
            u64_of(nelems),
            pe,
            stream,
        ))
    }

    /// Stream-ordered non-blocking get (`symm_get_nbi_on_stream`).
    ///
    /// # Safety
    /// As [`Buffer::get_on_stream`].
    pub unsafe fn get_nbi_on_stream(
        &self,
        index: usize,
        dst: *mut T,
        nelems: usize,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_get_nbi_on_stream(
            dst.cast(),
            self.raw,
            u64_of(index),
            u64_of(nelems),
            pe,
            stream,
        ))
    }

    /// Stream-ordered one-element put; `value` is read at call time
    /// (`symm_p_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn p_on_stream(
        &self,
        index: usize,
        value: T,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_p_on_stream(
            self.raw,
            u64_of(index),
            (&value as *const T).cast(),
            pe,
            stream,
        ))
    }

    /// Stream-ordered [`Buffer::put_signal`] (`symm_put_signal_on_stream`).
    ///
    /// # Safety
    /// As [`Buffer::put_on_stream`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal_on_stream(
        &self,
        index: usize,
        src: *const T,
        nelems: usize,
        sig: &Buffer<'_, u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_put_signal_on_stream(
            self.raw,
            u64_of(index),
            src.cast(),
            u64_of(nelems),
            sig.raw,
            u64_of(sig_index),
            signal,
            op.raw(),
            pe,
            stream,
        ))
    }

    /// Stream-ordered [`Buffer::signal_op`] (`symm_signal_op_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn signal_op_on_stream(
        &self,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: i32,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_signal_op_on_stream(
            self.raw,
            u64_of(sig_index),
            signal,
            op.raw(),
            pe,
            stream,
        ))
    }

    /// The stream waits until this PE's signal compares true
    /// (`symm_signal_wait_until_on_stream`).
    ///
    /// # Safety
    /// `stream` must be a valid CUDA stream of this process (or null).
    pub unsafe fn signal_wait_until_on_stream(
        &self,
        sig_index: usize,
        cmp: Cmp,
        value: u64,
        stream: Stream,
    ) -> Result<()> {
        check(ffi::symm_signal_wait_until_on_stream(
            self.raw,
            u64_of(sig_index),
            cmp.raw(),
            value,
            stream,
        ))
    }

    /// Free the buffer on every PE (`symm_buf_free`). Collective over the
    /// context; completes outstanding operations first. On an error (e.g.
    /// [`Error::Mismatch`], [`Error::PeerFailed`]) the handle is gone from
    /// Rust and [`Context::finalize`] releases what is left.
    pub fn free(self) -> Result<()> {
        let me = ManuallyDrop::new(self);
        // SAFETY: our live handle, not used again.
        check(unsafe { ffi::symm_buf_free(me.raw) })
    }
}

/// Integer-only operations: the remaining atomics, and the point-to-point
/// waits and tests on this PE's elements (comparisons signed for `i*`,
/// unsigned for `u*`). `status` masks, when given, hold one entry per element
/// (non-zero excludes it).
impl<T: Integer> Buffer<'_, T> {
    /// Atomically increment; returns the prior value.
    pub fn atomic_fetch_inc(&self, index: usize, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::FetchInc, T::default(), T::default(), pe)
    }
    /// Atomically increment.
    pub fn atomic_inc(&self, index: usize, pe: i32) -> Result<()> {
        self.atomic(index, AtomicOp::Inc, T::default(), T::default(), pe)
            .map(drop)
    }
    /// Atomically add; returns the prior value.
    pub fn atomic_fetch_add(&self, index: usize, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::FetchAdd, value, T::default(), pe)
    }
    /// Atomically add.
    pub fn atomic_add(&self, index: usize, value: T, pe: i32) -> Result<()> {
        self.atomic(index, AtomicOp::Add, value, T::default(), pe)
            .map(drop)
    }
    /// Atomically and; returns the prior value.
    pub fn atomic_fetch_and(&self, index: usize, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::FetchAnd, value, T::default(), pe)
    }
    /// Atomically or; returns the prior value.
    pub fn atomic_fetch_or(&self, index: usize, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::FetchOr, value, T::default(), pe)
    }
    /// Atomically xor; returns the prior value.
    pub fn atomic_fetch_xor(&self, index: usize, value: T, pe: i32) -> Result<T> {
        self.atomic(index, AtomicOp::FetchXor, value, T::default(), pe)
    }

    /// Wait until element `index` compares true against `value` (`symm_wait_until`).
    pub fn wait_until(&self, index: usize, cmp: Cmp, value: T) -> Result<()> {
        // SAFETY: value is one element read during the call.
        check(unsafe {
            ffi::symm_wait_until(
                self.raw,
                u64_of(index),
                cmp.raw(),
                (&value as *const T).cast(),
            )
        })
    }

    /// Wait until every included element of `index..index + nelems` compares
    /// true (`symm_wait_until_all`).
    pub fn wait_until_all(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        let st = mask(status, nelems, "wait_until_all")?;
        // SAFETY: st is NULL or nelems entries; value one element.
        check(unsafe {
            ffi::symm_wait_until_all(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
            )
        })
    }

    /// Wait until one included element compares true; returns its index
    /// relative to `index`, `None` for an empty set (`symm_wait_until_any`).
    pub fn wait_until_any(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let st = mask(status, nelems, "wait_until_any")?;
        let mut f = ffi::SYMM_INDEX_NONE;
        // SAFETY: as wait_until_all; f is an out-parameter.
        check(unsafe {
            ffi::symm_wait_until_any(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
                &mut f,
            )
        })?;
        Ok(found(f))
    }

    /// Wait until at least one included element compares true; returns every
    /// satisfied index (relative to `index`, increasing) (`symm_wait_until_some`).
    pub fn wait_until_some(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let st = mask(status, nelems, "wait_until_some")?;
        let mut idx = vec![0u64; nelems];
        let mut n = 0u64;
        // SAFETY: idx has nelems capacity; n is an out-parameter.
        check(unsafe {
            ffi::symm_wait_until_some(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
                idx.as_mut_ptr(),
                &mut n,
            )
        })?;
        Ok(idx[..n as usize].iter().map(|&i| i as usize).collect())
    }

    /// [`Buffer::wait_until_all`] with element i compared against `values[i]`
    /// (`symm_wait_until_all_vector`).
    pub fn wait_until_all_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        let st = mask(status, values.len(), "wait_until_all_vector")?;
        // SAFETY: values has nelems elements.
        check(unsafe {
            ffi::symm_wait_until_all_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
            )
        })
    }

    /// [`Buffer::wait_until_any`], vector form (`symm_wait_until_any_vector`).
    pub fn wait_until_any_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        let st = mask(status, values.len(), "wait_until_any_vector")?;
        let mut f = ffi::SYMM_INDEX_NONE;
        // SAFETY: values has nelems elements; f an out-parameter.
        check(unsafe {
            ffi::symm_wait_until_any_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
                &mut f,
            )
        })?;
        Ok(found(f))
    }

    /// [`Buffer::wait_until_some`], vector form (`symm_wait_until_some_vector`).
    pub fn wait_until_some_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        let st = mask(status, values.len(), "wait_until_some_vector")?;
        let mut idx = vec![0u64; values.len()];
        let mut n = 0u64;
        // SAFETY: idx has nelems capacity.
        check(unsafe {
            ffi::symm_wait_until_some_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
                idx.as_mut_ptr(),
                &mut n,
            )
        })?;
        Ok(idx[..n as usize].iter().map(|&i| i as usize).collect())
    }

    /// Does element `index` compare true against `value`? Never blocks (`symm_test`).
    pub fn test(&self, index: usize, cmp: Cmp, value: T) -> Result<bool> {
        let mut s = 0i32;
        // SAFETY: value one element; s an out-parameter.
        check(unsafe {
            ffi::symm_test(
                self.raw,
                u64_of(index),
                cmp.raw(),
                (&value as *const T).cast(),
                &mut s,
            )
        })?;
        Ok(s != 0)
    }

    /// Do all included elements compare true? (`symm_test_all`)
    pub fn test_all(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        let st = mask(status, nelems, "test_all")?;
        let mut s = 0i32;
        // SAFETY: as wait_until_all.
        check(unsafe {
            ffi::symm_test_all(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
                &mut s,
            )
        })?;
        Ok(s != 0)
    }

    /// One included element that compares true, if any (`symm_test_any`).
    pub fn test_any(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let st = mask(status, nelems, "test_any")?;
        let mut s = 0i32;
        let mut f = ffi::SYMM_INDEX_NONE;
        // SAFETY: as wait_until_any.
        check(unsafe {
            ffi::symm_test_any(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
                &mut s,
                &mut f,
            )
        })?;
        Ok(if s != 0 { found(f) } else { None })
    }

    /// Every included element that compares true now (`symm_test_some`).
    pub fn test_some(
        &self,
        index: usize,
        nelems: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let st = mask(status, nelems, "test_some")?;
        let mut idx = vec![0u64; nelems];
        let mut n = 0u64;
        // SAFETY: idx has nelems capacity.
        check(unsafe {
            ffi::symm_test_some(
                self.raw,
                u64_of(index),
                u64_of(nelems),
                st,
                cmp.raw(),
                (&value as *const T).cast(),
                idx.as_mut_ptr(),
                &mut n,
            )
        })?;
        Ok(idx[..n as usize].iter().map(|&i| i as usize).collect())
    }

    /// [`Buffer::test_all`], vector form (`symm_test_all_vector`).
    pub fn test_all_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<bool> {
        let st = mask(status, values.len(), "test_all_vector")?;
        let mut s = 0i32;
        // SAFETY: values has nelems elements.
        check(unsafe {
            ffi::symm_test_all_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
                &mut s,
            )
        })?;
        Ok(s != 0)
    }

    /// [`Buffer::test_any`], vector form (`symm_test_any_vector`).
    pub fn test_any_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        let st = mask(status, values.len(), "test_any_vector")?;
        let mut s = 0i32;
        let mut f = ffi::SYMM_INDEX_NONE;
        // SAFETY: values has nelems elements.
        check(unsafe {
            ffi::symm_test_any_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
                &mut s,
                &mut f,
            )
        })?;
        Ok(if s != 0 { found(f) } else { None })
    }

    /// [`Buffer::test_some`], vector form (`symm_test_some_vector`).
    pub fn test_some_vector(
        &self,
        index: usize,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        let st = mask(status, values.len(), "test_some_vector")?;
        let mut idx = vec![0u64; values.len()];
        let mut n = 0u64;
        // SAFETY: idx has nelems capacity.
        check(unsafe {
            ffi::symm_test_some_vector(
                self.raw,
                u64_of(index),
                u64_of(values.len()),
                st,
                cmp.raw(),
                values.as_ptr().cast(),
                idx.as_mut_ptr(),
                &mut n,
            )
        })?;
        Ok(idx[..n as usize].iter().map(|&i| i as usize).collect())
    }
}

impl<T: Element> Drop for Buffer<'_, T> {
    fn drop(&mut self) {
        warn_leak("a Buffer");
    }
}

/// Issues non-blocking operations whose local memory is borrowed for the
/// whole [`Context::nbi_scope`] call, which quiets before it returns: the
/// kept-pointer rule of the `_nbi` forms holds by construction.
pub struct NbiScope<'scope, 'env: 'scope> {
    ctx: &'env Context,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> NbiScope<'scope, 'env> {
    /// Non-blocking put of `src` (`symm_put_nbi`); complete when the scope ends.
    pub fn put<T: Element>(
        &'scope self,
        buf: &Buffer<'_, T>,
        index: usize,
        src: &'env [T],
        pe: i32,
    ) -> Result<()> {
        self.same_ctx(buf.context())?;
        // SAFETY: src is borrowed until nbi_scope returns, after its quiet.
        unsafe { buf.put_nbi(index, src, pe) }
    }

    /// Non-blocking get into `dst` (`symm_get_nbi`); `dst` is written by the
    /// end of the scope (it stays exclusively borrowed until then).
    pub fn get<T: Element>(
        &'scope self,
        buf: &Buffer<'_, T>,
        index: usize,
        dst: &'env mut [T],
        pe: i32,
    ) -> Result<()> {
        self.same_ctx(buf.context())?;
        // SAFETY: dst is exclusively borrowed until nbi_scope returns, after its quiet.
        unsafe { buf.get_nbi(index, dst, pe) }
    }

    /// Non-blocking [`Buffer::put_signal`] (`symm_put_signal_nbi`).
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal<T: Element>(
        &'scope self,
        buf: &Buffer<'_, T>,
        index: usize,
        src: &'env [T],
        sig: &Buffer<'_, u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: i32,
    ) -> Result<()> {
        self.same_ctx(buf.context())?;
        // SAFETY: as put.
        unsafe { buf.put_signal_nbi(index, src, sig, sig_index, signal, op, pe) }
    }

    /// Non-blocking atomic (`symm_atomic_nbi`); `fetched` receives the prior
    /// value by the end of the scope.
    #[allow(clippy::too_many_arguments)]
    pub fn atomic<T: Element>(
        &'scope self,
        buf: &Buffer<'_, T>,
        index: usize,
        op: AtomicOp,
        value: T,
        compare: T,
        pe: i32,
        fetched: &'env mut T,
    ) -> Result<()> {
        self.same_ctx(buf.context())?;
        // SAFETY: fetched is exclusively borrowed until after the quiet.
        unsafe { buf.atomic_nbi(index, op, value, compare, pe, fetched) }
    }

    fn same_ctx(&self, c: &Context) -> Result<()> {
        if std::ptr::eq(c, self.ctx) {
            Ok(())
        } else {
            Err(Error::invalid_arg(
                "nbi_scope: the buffer belongs to another context than the scope's",
            ))
        }
    }
}

/// Quiets the context when the scope ends, also when the closure panics.
struct QuietOnDrop<'a>(&'a Context, Option<Result<()>>);

impl QuietOnDrop<'_> {
    fn finish(mut self) -> Result<()> {
        let r = self.0.quiet();
        self.1 = Some(Ok(()));
        r
    }
}

impl Drop for QuietOnDrop<'_> {
    fn drop(&mut self) {
        if self.1.is_none() {
            let _ = self.0.quiet();
        }
    }
}

impl Context {
    /// Run `f` with a scope for non-blocking operations, then quiet the
    /// context (`symm_quiet`), also if `f` panics. Memory passed to the
    /// scope's operations is borrowed for the whole call, so it cannot be
    /// freed, changed (puts) or read (gets) before the operations complete.
    /// Returns `f`'s value, or the quiet's error.
    ///
    /// ```no_run
    /// # fn f(ctx: &symm::Context, buf: &symm::Buffer<'_, f32>) -> symm::Result<()> {
    /// let src = vec![1.0f32; 4];
    /// let mut back = vec![0.0f32; 4];
    /// ctx.nbi_scope(|s| -> symm::Result<()> {
    ///     s.put(buf, 0, &src, 1)?;
    ///     s.get(buf, 4, &mut back, 1)?;
    ///     Ok(())
    /// })??;
    /// // here both are complete and `back` is readable
    /// # Ok(()) }
    /// ```
    pub fn nbi_scope<'env, F, R>(&'env self, f: F) -> Result<R>
    where
        F: for<'scope> FnOnce(&'scope NbiScope<'scope, 'env>) -> R,
    {
        let scope = NbiScope {
            ctx: self,
            _scope: PhantomData,
            _env: PhantomData,
        };
        let guard = QuietOnDrop(self, None);
        let r = f(&scope);
        guard.finish()?;
        Ok(r)
    }
}

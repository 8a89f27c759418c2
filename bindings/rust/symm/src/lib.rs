//! Safe Rust API for **symm**: one-sided communication (put, get, atomics,
//! signals, collectives) over a symmetric heap shared by the processing
//! elements (PEs) of a job, on CPUs (host backend) or GPUs (CUDA backend).
//!
//! The crate compiles the symm loader in (through `symm-sys`), so building a
//! program needs no installed symm and the program always starts. The runtime
//! (`libsymm_runtime.so.1`) is opened on the first call that needs it; when it
//! is missing that call returns [`Error::LibraryNotFound`] and [`probe`] says
//! so up front.
//!
//! ```no_run
//! use symm::{Context, ReduceOp};
//!
//! fn main() -> symm::Result<()> {
//!     let ctx = Context::init()?; // joins the job started by `symmrun -n 4`
//!     let (me, n) = (ctx.my_pe(), ctx.n_pes());
//!     let buf = ctx.alloc::<i64>(1)?; // collective
//!     buf.put(0, &[me as i64], (me + 1) % n)?; // into the right neighbour
//!     ctx.barrier_all()?;
//!     let mut got = [0i64];
//!     buf.get(0, &mut got, me)?; // my own copy: the left neighbour's rank
//!     assert_eq!(got[0], ((me + n - 1) % n) as i64);
//!     let sum = ctx.alloc::<i64>(1)?;
//!     ctx.world().reduce(&sum, 0, &buf, 0, 1, ReduceOp::Sum)?;
//!     sum.free()?; // collective
//!     buf.free()?;
//!     ctx.finalize() // collective
//! }
//! ```
//!
//! # Resource rules
//!
//! Freeing a buffer, destroying a team and finalizing a context are
//! *collective*: every PE must make the same call. This crate never makes a
//! collective call behind your back:
//!
//! - [`Buffer::free`], [`Team::destroy`] and [`Context::finalize`] are explicit
//!   and return a [`Result`].
//! - Dropping a live [`Buffer`] or split [`Team`] leaks its handle (nothing is
//!   called; debug builds print a warning on stderr). [`Context::finalize`]
//!   releases everything the context still holds.
//! - Dropping a [`Context`] that was not finalized does not finalize it (that
//!   would be a collective hidden in a destructor, which could hang or mismatch
//!   the other PEs when it runs on an error path): the handle is leaked and
//!   the operating system reclaims the heap when the process exits. Debug
//!   builds print a warning.
//!
//! Buffers and teams borrow their context, so `finalize` cannot be called
//! while one is still in scope.
//!
//! # Threads
//!
//! [`Context`], [`Team`] and [`Buffer`] are `Send + Sync`: a context is
//! created at `SYMM_THREAD_MULTIPLE` by default, where every function may be
//! called from any thread. The C rule that collectives on one team must not run
//! concurrently is kept by a lock per team inside this crate (concurrent calls
//! from several threads are serialised in the order they take it; every PE must
//! still issue a team's collectives in the same order, and team splits from
//! several threads in the same order on every PE). With
//! [`ThreadLevel::Funneled`], calls from another thread than the one that
//! called `init` return [`Error::ThreadLevel`].
//!
//! # Errors
//!
//! Every fallible call returns [`Result`]; [`Error`] has one variant per status
//! code and carries the message `symm_last_error()` gave on the calling thread
//! right after the call. Bad arguments (an index outside the buffer, a wrong
//! PE) are errors, never panics.
//!
//! # Kept pointers
//!
//! Non-blocking (`_nbi`) operations read or write local memory until the next
//! quiet. The safe form is [`Context::nbi_scope`], which borrows that memory
//! for the scope and quiets before returning; the raw forms
//! ([`Buffer::put_nbi`] and friends) are `unsafe` with the contract spelled
//! out. Stream-ordered (`_on_stream`) forms take a raw CUDA stream and are
//! `unsafe`.
#![warn(missing_docs)]

mod buffer;
mod context;
mod element;
mod error;
mod team;

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use buffer::{Buffer, NbiScope};
pub use context::{
    Backend, Bootstrap, Context, ContextBuilder, ContextInfo, ThreadLevel, UniqueId,
};
pub use element::{dtype_size, Count, Element, Integer, BF16, F16};
pub use error::{status_name, Error, Result};
pub use team::{PredefinedTeam, Team};
/// The README's examples compile (`cargo test` runs them as doc tests).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The raw C declarations (`symm-sys`), for what the safe API does not cover.
pub use symm_sys as sys;

use symm_sys as ffi;

/// A raw CUDA stream (`CUstream` / `cudaStream_t`) for the `_on_stream`
/// forms; null is the legacy default stream. Ignored on the host backend.
pub type Stream = ffi::symm_stream_t;

/// A version as `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version (the ABI major).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl Version {
    /// Decodes `SYMM_VERSION_ENCODE(major, minor, patch)`.
    pub fn from_encoded(v: u32) -> Version {
        Version {
            major: v / 1_000_000,
            minor: v / 1000 % 1000,
            patch: v % 1000,
        }
    }

    /// `major * 1000000 + minor * 1000 + patch`.
    pub fn encoded(&self) -> u32 {
        self.major * 1_000_000 + self.minor * 1000 + self.patch
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The header version these bindings were generated from (`SYMM_VERSION`).
pub const HEADER_VERSION: u32 = ffi::SYMM_VERSION;

/// Is symm usable here? Loads and negotiates with the runtime (once) without
/// initialising anything: `Ok(())`, [`Error::LibraryNotFound`] (the message
/// lists every path tried) or [`Error::AbiMismatch`].
pub fn probe() -> Result<()> {
    // SAFETY: no arguments.
    error::check(unsafe { ffi::symm_loader_probe() })
}

/// Use the runtime at `path` (a file) instead of searching the loader's
/// directory and the system path. `$SYMM_RUNTIME`, when set, still wins. Valid
/// only before the runtime was first looked for: afterwards
/// [`Error::InvalidState`].
pub fn set_runtime(path: impl AsRef<Path>) -> Result<()> {
    let c = CString::new(path.as_ref().as_os_str().as_bytes())
        .map_err(|_| Error::invalid_arg("set_runtime: the path contains a NUL byte"))?;
    // SAFETY: c is a valid NUL-terminated string; the loader copies it.
    error::check(unsafe { ffi::symm_loader_set_runtime(c.as_ptr()) })
}

/// Restore the default runtime search (undo [`set_runtime`]); same rules.
pub fn reset_runtime() -> Result<()> {
    // SAFETY: NULL restores the search.
    error::check(unsafe { ffi::symm_loader_set_runtime(std::ptr::null()) })
}

/// Version of the loader compiled into this crate. Never loads the runtime.
pub fn loader_version() -> Version {
    let mut v = 0u32;
    // SAFETY: v is a valid out-parameter.
    let st = unsafe { ffi::symm_loader_get_version(&mut v) };
    debug_assert_eq!(st, ffi::SYMM_SUCCESS);
    Version::from_encoded(v)
}

/// Version of the loaded runtime (loads it if needed).
pub fn runtime_version() -> Result<Version> {
    let mut v = 0u32;
    // SAFETY: v is a valid out-parameter.
    error::check(unsafe { ffi::symm_get_version(&mut v) })?;
    Ok(Version::from_encoded(v))
}

/// Path of the runtime the loader opened, or `None` when none is loaded (yet).
/// Never starts a load.
pub fn runtime_path() -> Option<String> {
    // SAFETY: the string lives for the whole process.
    let s = unsafe { CStr::from_ptr(ffi::symm_loader_runtime_path()) };
    if s.to_bytes().is_empty() {
        None
    } else {
        Some(s.to_string_lossy().into_owned())
    }
}

/// Comparison of the waits and tests (`SYMM_CMP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Greater than.
    Gt,
    /// Greater or equal.
    Ge,
    /// Less than.
    Lt,
    /// Less or equal.
    Le,
}

impl Cmp {
    pub(crate) fn raw(self) -> u32 {
        match self {
            Cmp::Eq => ffi::SYMM_CMP_EQ,
            Cmp::Ne => ffi::SYMM_CMP_NE,
            Cmp::Gt => ffi::SYMM_CMP_GT,
            Cmp::Ge => ffi::SYMM_CMP_GE,
            Cmp::Lt => ffi::SYMM_CMP_LT,
            Cmp::Le => ffi::SYMM_CMP_LE,
        }
    }
}

/// How a signal is updated (`SYMM_SIGNAL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalOp {
    /// `sig = value`.
    Set,
    /// `sig += value` (wraps modulo 2^64).
    Add,
}

impl SignalOp {
    pub(crate) fn raw(self) -> u32 {
        match self {
            SignalOp::Set => ffi::SYMM_SIGNAL_SET,
            SignalOp::Add => ffi::SYMM_SIGNAL_ADD,
        }
    }
}

/// Reduction operator (`SYMM_OP_*`). `And`, `Or`, `Xor` are for integer
/// element types (floating ones give [`Error::NotSupported`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers wrap).
    Sum,
    /// Product (integers wrap).
    Prod,
    /// Minimum (`fmin` for floating types).
    Min,
    /// Maximum (`fmax` for floating types).
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

impl ReduceOp {
    pub(crate) fn raw(self) -> u32 {
        match self {
            ReduceOp::Sum => ffi::SYMM_OP_SUM,
            ReduceOp::Prod => ffi::SYMM_OP_PROD,
            ReduceOp::Min => ffi::SYMM_OP_MIN,
            ReduceOp::Max => ffi::SYMM_OP_MAX,
            ReduceOp::And => ffi::SYMM_OP_AND,
            ReduceOp::Or => ffi::SYMM_OP_OR,
            ReduceOp::Xor => ffi::SYMM_OP_XOR,
        }
    }
}

/// Atomic memory operation (`SYMM_AMO_*`), for [`Buffer::atomic`]. The typed
/// helpers ([`Buffer::atomic_fetch_add`], ...) cover the common cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Read the element.
    Fetch,
    /// Write the element.
    Set,
    /// Write `value` if the element equals `compare`; fetch the prior value.
    CompareSwap,
    /// Write `value`; fetch the prior value.
    Swap,
    /// Increment; fetch the prior value.
    FetchInc,
    /// Increment.
    Inc,
    /// Add `value`; fetch the prior value.
    FetchAdd,
    /// Add `value`.
    Add,
    /// And with `value`; fetch the prior value.
    FetchAnd,
    /// And with `value`.
    And,
    /// Or with `value`; fetch the prior value.
    FetchOr,
    /// Or with `value`.
    Or,
    /// Xor with `value`; fetch the prior value.
    FetchXor,
    /// Xor with `value`.
    Xor,
}

impl AtomicOp {
    pub(crate) fn raw(self) -> u32 {
        use AtomicOp::*;
        match self {
            Fetch => ffi::SYMM_AMO_FETCH,
            Set => ffi::SYMM_AMO_SET,
            CompareSwap => ffi::SYMM_AMO_COMPARE_SWAP,
            Swap => ffi::SYMM_AMO_SWAP,
            FetchInc => ffi::SYMM_AMO_FETCH_INC,
            Inc => ffi::SYMM_AMO_INC,
            FetchAdd => ffi::SYMM_AMO_FETCH_ADD,
            Add => ffi::SYMM_AMO_ADD,
            FetchAnd => ffi::SYMM_AMO_FETCH_AND,
            And => ffi::SYMM_AMO_AND,
            FetchOr => ffi::SYMM_AMO_FETCH_OR,
            Or => ffi::SYMM_AMO_OR,
            FetchXor => ffi::SYMM_AMO_FETCH_XOR,
            Xor => ffi::SYMM_AMO_XOR,
        }
    }
}

/// `usize` -> `u64` (lossless on every supported target).
#[inline]
pub(crate) fn u64_of(n: usize) -> u64 {
    n as u64
}

/// Debug builds: say that a handle was leaked by a destructor.
pub(crate) fn warn_leak(what: &str) {
    if cfg!(debug_assertions) && !std::thread::panicking() {
        eprintln!(
            "symm: {what} dropped without its collective release; leaked until the context \
             is finalized (call it explicitly on every PE)"
        );
    }
}

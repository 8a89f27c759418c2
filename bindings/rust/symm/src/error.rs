//! Errors: one variant per symm status code, each with the library's message.

use std::ffi::CStr;
use std::fmt;

use symm_sys as sys;

/// The result of every fallible symm call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! errors {
    ($( $(#[$doc:meta])* $variant:ident = $code:ident ),* $(,)?) => {
        /// A failed symm call: which status it returned and the message that
        /// `symm_last_error()` gave on the same thread right after the call.
        ///
        /// There is one variant per `SYMM_ERR_*` status (the message is the
        /// variant's `String`), plus [`Error::Unknown`] for a code this binding
        /// does not know (a newer runtime). Match on the variant, or use
        /// [`Error::code`], [`Error::name`] and [`Error::message`].
        ///
        /// ```
        /// # fn f(e: symm::Error) {
        /// match e {
        ///     symm::Error::LibraryNotFound(msg) => eprintln!("symm is not installed: {msg}"),
        ///     other => eprintln!("symm failed: {other}"),
        /// }
        /// # }
        /// ```
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Error {
            $( $(#[$doc])* $variant(String), )*
            /// A status code this binding does not know (from a newer runtime).
            Unknown {
                /// The status code.
                code: i32,
                /// The library's message.
                message: String,
            },
        }

        impl Error {
            /// The error for status `code` with `message`. `SYMM_SUCCESS` (0)
            /// is not an error: it maps to [`Error::Unknown`] with code 0.
            pub fn from_code(code: i32, message: impl Into<String>) -> Error {
                let message = message.into();
                match code {
                    $( sys::$code => Error::$variant(message), )*
                    _ => Error::Unknown { code, message },
                }
            }

            /// The status code (`SYMM_ERR_*`).
            pub fn code(&self) -> i32 {
                match self {
                    $( Error::$variant(_) => sys::$code, )*
                    Error::Unknown { code, .. } => *code,
                }
            }

            /// The message that came with the error (may be empty).
            pub fn message(&self) -> &str {
                match self {
                    $( Error::$variant(m) => m, )*
                    Error::Unknown { message, .. } => message,
                }
            }
        }
    };
}

errors! {
    /// `SYMM_ERR_INVALID_ARG`: an argument is out of its domain.
    InvalidArg = SYMM_ERR_INVALID_ARG,
    /// `SYMM_ERR_INVALID_HANDLE`: stale, foreign or NULL handle.
    InvalidHandle = SYMM_ERR_INVALID_HANDLE,
    /// `SYMM_ERR_OUT_OF_BOUNDS`: element or byte range outside a buffer or the heap.
    OutOfBounds = SYMM_ERR_OUT_OF_BOUNDS,
    /// `SYMM_ERR_OUT_OF_MEMORY`: heap cap reached or host memory exhausted.
    OutOfMemory = SYMM_ERR_OUT_OF_MEMORY,
    /// `SYMM_ERR_LIBRARY_NOT_FOUND`: no usable runtime was found (the message
    /// lists every path tried). symm is "not available" here.
    LibraryNotFound = SYMM_ERR_LIBRARY_NOT_FOUND,
    /// `SYMM_ERR_ABI_MISMATCH`: the runtime implements another ABI major.
    AbiMismatch = SYMM_ERR_ABI_MISMATCH,
    /// `SYMM_ERR_NOT_SUPPORTED`: entry or feature not available here.
    NotSupported = SYMM_ERR_NOT_SUPPORTED,
    /// `SYMM_ERR_NO_DEVICE`: a GPU backend was asked for and no GPU is usable.
    NoDevice = SYMM_ERR_NO_DEVICE,
    /// `SYMM_ERR_BOOTSTRAP`: could not form or talk to the job.
    Bootstrap = SYMM_ERR_BOOTSTRAP,
    /// `SYMM_ERR_PEER_FAILED`: a peer PE died or left the job.
    PeerFailed = SYMM_ERR_PEER_FAILED,
    /// `SYMM_ERR_TIMEOUT`: a bounded wait expired.
    Timeout = SYMM_ERR_TIMEOUT,
    /// `SYMM_ERR_MISMATCH`: PEs disagree on a collective's arguments.
    Mismatch = SYMM_ERR_MISMATCH,
    /// `SYMM_ERR_TEAM_EXHAUSTED`: no free team slot.
    TeamExhausted = SYMM_ERR_TEAM_EXHAUSTED,
    /// `SYMM_ERR_CUDA`: the CUDA driver reported an error.
    Cuda = SYMM_ERR_CUDA,
    /// `SYMM_ERR_SYSTEM`: an operating-system call failed (the message has errno).
    System = SYMM_ERR_SYSTEM,
    /// `SYMM_ERR_THREAD_LEVEL`: the call violates the context's thread level.
    ThreadLevel = SYMM_ERR_THREAD_LEVEL,
    /// `SYMM_ERR_INTERNAL`: a bug in symm.
    Internal = SYMM_ERR_INTERNAL,
    /// `SYMM_ERR_INVALID_STATE`: the call is not valid now (e.g. the runtime is loaded).
    InvalidState = SYMM_ERR_INVALID_STATE,
}

impl Error {
    /// The status name, from the library's `symm_status_string`
    /// (`"SYMM_ERR_OUT_OF_BOUNDS"`; `"SYMM_ERR_UNKNOWN"` for unknown codes).
    pub fn name(&self) -> &'static str {
        status_name(self.code())
    }

    /// An error raised by this binding itself (no C call was made), e.g. a
    /// slice whose length does not fit the call.
    pub(crate) fn invalid_arg(message: impl Into<String>) -> Error {
        Error::InvalidArg(message.into())
    }
}

/// The name of a status code (`symm_status_string`; answered by the loader,
/// no runtime needed).
pub fn status_name(code: i32) -> &'static str {
    // SAFETY: symm_status_string returns a pointer to a static string literal
    // of the loader (never freed), for every code.
    unsafe {
        let p = sys::symm_status_string(code);
        if p.is_null() {
            return "SYMM_ERR_UNKNOWN";
        }
        CStr::from_ptr(p).to_str().unwrap_or("SYMM_ERR_UNKNOWN")
    }
}

/// The calling thread's last symm message (`symm_last_error`), copied.
pub(crate) fn last_error() -> String {
    // SAFETY: the pointer is valid until the next symm call on this thread; it
    // is copied at once.
    unsafe {
        let p = sys::symm_last_error();
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// Turns a status into a `Result`, reading the message on this thread right
/// after the call (callers pass the status of the call they just made).
#[inline]
pub(crate) fn check(status: sys::symm_status) -> Result<()> {
    if status == sys::SYMM_SUCCESS {
        Ok(())
    } else {
        Err(Error::from_code(status, last_error()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message().is_empty() {
            write!(f, "{} ({})", self.name(), self.code())
        } else {
            write!(f, "{} ({}): {}", self.name(), self.code(), self.message())
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// One variant per status: every code below SYMM_STATUS_COUNT (checked
    /// against abi/symm-abi.json by symm-sys's ABI test) has its own variant,
    /// named as the loader names it, and round-trips.
    #[test]
    fn every_status_has_its_variant() {
        for code in 1..sys::SYMM_STATUS_COUNT as i32 {
            let e = Error::from_code(code, "m");
            assert!(
                !matches!(e, Error::Unknown { .. }),
                "status {code} has no variant"
            );
            assert_eq!(e.code(), code);
            assert_eq!(e.message(), "m");
            assert_ne!(e.name(), "SYMM_ERR_UNKNOWN");
            assert_eq!(e.to_string(), format!("{} ({code}): m", e.name()));
        }
        let e = Error::from_code(sys::SYMM_STATUS_COUNT as i32, "");
        assert!(matches!(e, Error::Unknown { .. }));
        assert_eq!(e.name(), "SYMM_ERR_UNKNOWN");
        assert!(matches!(Error::from_code(5, "x"), Error::LibraryNotFound(ref m) if m == "x"));
        assert!(check(sys::SYMM_SUCCESS).is_ok());
    }
}

//! symm for Zig: one-sided communication over a symmetric heap.
//!
//! This module wraps the C ABI 1.2 of `include/symm/symm.h` (translated by
//! translate-c, available raw as `symm.c`). The symm loader is compiled into
//! the program, so it always starts: the runtime (`libsymm_runtime.so.1`) is
//! opened on the first call that needs it, and where none can be found that
//! call returns `error.LibraryNotFound` (and `lastError()` lists every path
//! tried). The runtime is found through `$SYMM_RUNTIME`, then the path given
//! to `setRuntime`, then the executable's own directory, then the system
//! search path.
//!
//! Rules the API encodes:
//! - Every fallible call returns an error union over `Error`, one member per
//!   symm status code; `lastError()` gives the message of the last failure
//!   on the calling thread.
//! - Buffers are typed: `Buffer(T)` carries the element type at compile time
//!   (`dtypeOf(T)`); every range is given by a slice and bounds-checked by the
//!   runtime (`error.OutOfBounds`), never by a panic.
//! - Collective releases are explicit: `Buffer(T).free`, `Team.destroy` and
//!   `Context.finalize` are collective calls that every PE makes. Nothing is
//!   freed behind your back; `finalize` releases whatever is still live.
//! - Kept pointers: the `*Nbi` forms read (put) or write (get, fetched
//!   values) your local memory until the next `Context.quiet` (or barrier);
//!   the `*OnStream` forms until the CUDA stream reaches the operation. Each
//!   such function says so again. All other calls keep no pointer.
//!
//! Example (every PE sends its number to its right neighbour):
//!
//! ```zig
//! var ctx = try symm.Context.init(.{});
//! const me = ctx.myPe();
//! const n = ctx.nPes();
//! var ring = try ctx.alloc(i64, 1); // collective
//! try ring.put(0, &.{me}, @mod(me + 1, n));
//! try ctx.barrierAll();
//! try ring.free(); // collective
//! try ctx.finalize(); // collective
//! ```
const std = @import("std");

/// The C ABI as translate-c sees `include/symm/symm.h`: every function,
/// constant, handle and struct, for anything this module does not cover.
pub const c = @import("symm_c");

// ---------------------------------------------------------------- errors --

/// One member per symm status code (SYMM_STATUS_TABLE in symm.h, the
/// `statuses` of abi/symm-abi.json), plus `UnknownStatus` for a code this
/// binding does not know (from a newer runtime).
pub const Error = error{
    /// SYMM_ERR_INVALID_ARG: an argument is out of its domain.
    InvalidArg,
    /// SYMM_ERR_INVALID_HANDLE: stale, foreign or NULL handle.
    InvalidHandle,
    /// SYMM_ERR_OUT_OF_BOUNDS: element or byte range outside a buffer or the heap.
    OutOfBounds,
    /// SYMM_ERR_OUT_OF_MEMORY: heap cap reached or host memory exhausted.
    OutOfMemory,
    /// SYMM_ERR_LIBRARY_NOT_FOUND: no usable runtime was found (the message
    /// lists every path tried). Fall back to single-process mode here.
    LibraryNotFound,
    /// SYMM_ERR_ABI_MISMATCH: the runtime implements another ABI major.
    AbiMismatch,
    /// SYMM_ERR_NOT_SUPPORTED: entry or feature not available here.
    NotSupported,
    /// SYMM_ERR_NO_DEVICE: a GPU backend was asked for and no GPU is usable.
    NoDevice,
    /// SYMM_ERR_BOOTSTRAP: could not form or talk to the job.
    Bootstrap,
    /// SYMM_ERR_PEER_FAILED: a peer PE died or left the job.
    PeerFailed,
    /// SYMM_ERR_TIMEOUT: a bounded wait expired.
    Timeout,
    /// SYMM_ERR_MISMATCH: PEs disagree on a collective's arguments.
    Mismatch,
    /// SYMM_ERR_TEAM_EXHAUSTED: no free team slot.
    TeamExhausted,
    /// SYMM_ERR_CUDA: the CUDA driver reported an error.
    Cuda,
    /// SYMM_ERR_SYSTEM: an operating-system call failed (the message has errno).
    System,
    /// SYMM_ERR_THREAD_LEVEL: the call violates the context's thread level.
    ThreadLevel,
    /// SYMM_ERR_INTERNAL: a bug in symm: please report it.
    Internal,
    /// SYMM_ERR_INVALID_STATE: the call is not valid now (e.g. the runtime is loaded).
    InvalidState,
    /// A status code this binding does not know (a newer runtime's).
    UnknownStatus,
};

/// A status code and the `Error` member it maps to.
pub const StatusError = struct { code: c.symm_status, err: Error };

/// Every failure status of the ABI, in code order (code i at index i - 1).
pub const status_errors = [_]StatusError{
    .{ .code = c.SYMM_ERR_INVALID_ARG, .err = error.InvalidArg },
    .{ .code = c.SYMM_ERR_INVALID_HANDLE, .err = error.InvalidHandle },
    .{ .code = c.SYMM_ERR_OUT_OF_BOUNDS, .err = error.OutOfBounds },
    .{ .code = c.SYMM_ERR_OUT_OF_MEMORY, .err = error.OutOfMemory },
    .{ .code = c.SYMM_ERR_LIBRARY_NOT_FOUND, .err = error.LibraryNotFound },
    .{ .code = c.SYMM_ERR_ABI_MISMATCH, .err = error.AbiMismatch },
    .{ .code = c.SYMM_ERR_NOT_SUPPORTED, .err = error.NotSupported },
    .{ .code = c.SYMM_ERR_NO_DEVICE, .err = error.NoDevice },
    .{ .code = c.SYMM_ERR_BOOTSTRAP, .err = error.Bootstrap },
    .{ .code = c.SYMM_ERR_PEER_FAILED, .err = error.PeerFailed },
    .{ .code = c.SYMM_ERR_TIMEOUT, .err = error.Timeout },
    .{ .code = c.SYMM_ERR_MISMATCH, .err = error.Mismatch },
    .{ .code = c.SYMM_ERR_TEAM_EXHAUSTED, .err = error.TeamExhausted },
    .{ .code = c.SYMM_ERR_CUDA, .err = error.Cuda },
    .{ .code = c.SYMM_ERR_SYSTEM, .err = error.System },
    .{ .code = c.SYMM_ERR_THREAD_LEVEL, .err = error.ThreadLevel },
    .{ .code = c.SYMM_ERR_INTERNAL, .err = error.Internal },
    .{ .code = c.SYMM_ERR_INVALID_STATE, .err = error.InvalidState },
};

// A header with another number of status codes does not compile against
// this binding (the ABI check reports names and values too).
comptime {
    if (status_errors.len + 1 != c.SYMM_STATUS_COUNT)
        @compileError("symm.h has a status code that symm.Error does not map");
    for (status_errors, 1..) |e, i| {
        if (e.code != i) @compileError("symm.status_errors is out of code order");
    }
}

/// The `Error` member of a failure status (`UnknownStatus` for a code this
/// binding does not know). `status` must not be SYMM_SUCCESS.
pub fn errorOf(status: c.symm_status) Error {
    inline for (status_errors) |e| {
        if (status == e.code) return e.err;
    }
    return error.UnknownStatus;
}

/// The status code of an `Error` member (-1 for `UnknownStatus`).
pub fn statusOf(err: Error) c.symm_status {
    inline for (status_errors) |e| {
        if (err == e.err) return e.code;
    }
    return -1;
}

/// `void` for SYMM_SUCCESS, else the status' `Error` member.
pub fn check(status: c.symm_status) Error!void {
    if (status == c.SYMM_SUCCESS) return;
    return errorOf(status);
}

/// A failure the binding itself detected (a slice that does not match its
/// count): it is reported like the runtime's own, through `lastError()`.
threadlocal var binding_msg: ?[:0]const u8 = null;

fn call(status: c.symm_status) Error!void {
    binding_msg = null;
    return check(status);
}

fn fail(comptime msg: [:0]const u8) Error {
    binding_msg = msg;
    return error.InvalidArg;
}

/// The message describing the last failure on the calling thread ("" if
/// none), e.g. "symm_put: element range [8, 9) outside the buffer's 4
/// elements". Valid until the next symm call on this thread: copy it to
/// keep it.
pub fn lastError() [:0]const u8 {
    if (binding_msg) |m| return m;
    return std.mem.span(c.symm_last_error());
}

/// The C name of a status code ("SYMM_ERR_OUT_OF_BOUNDS"); unknown codes
/// give "SYMM_ERR_UNKNOWN". Answered by the loader, valid for the process.
pub fn statusString(status: c.symm_status) [:0]const u8 {
    return std.mem.span(c.symm_status_string(status));
}

/// The C name of an `Error` member's status code.
pub fn errorName(err: Error) [:0]const u8 {
    return statusString(statusOf(err));
}

// ---------------------------------------------------------------- loader --

/// Is symm usable here? Loads and negotiates with the runtime (once)
/// without initialising anything: `error.LibraryNotFound` (the message
/// lists every path tried) or `error.AbiMismatch` when not.
pub fn probe() Error!void {
    return call(c.symm_loader_probe());
}

/// Use the runtime at `path` (a file) instead of searching the
/// executable's directory and the system path; null restores the search.
/// `$SYMM_RUNTIME`, when set, still wins. Only before the first load:
/// afterwards `error.InvalidState`. The path is copied.
pub fn setRuntime(path: ?[:0]const u8) Error!void {
    return call(c.symm_loader_set_runtime(if (path) |p| p.ptr else null));
}

/// Path of the runtime the loader opened, "" when none is loaded (yet).
/// Never starts a load; valid for the life of the process.
pub fn runtimePath() [:0]const u8 {
    return std.mem.span(c.symm_loader_runtime_path());
}

/// A version as the ABI encodes it (major * 1000000 + minor * 1000 + patch).
pub const Version = struct {
    major: u32,
    minor: u32,
    patch: u32,

    /// Split an encoded version.
    pub fn decode(v: u32) Version {
        return .{ .major = v / 1000000, .minor = v / 1000 % 1000, .patch = v % 1000 };
    }
};

/// The ABI version of the header this binding was built with (SYMM_VERSION).
pub const header_version: u32 = c.SYMM_VERSION;

/// The version of this Zig package (build.zig.zon): its major.minor is the
/// ABI's it wraps (the ABI check, tests/abi_check.zig, holds it there).
pub const package_version: []const u8 = @import("symm_package").version;

/// Version of the compiled-in loader (never loads the runtime).
pub fn loaderVersion() Error!u32 {
    var v: u32 = 0;
    try call(c.symm_loader_get_version(&v));
    return v;
}

/// Version of the loaded runtime (loads it when needed).
pub fn runtimeVersion() Error!u32 {
    var v: u32 = 0;
    try call(c.symm_get_version(&v));
    return v;
}

// ------------------------------------------------------------- constants --

/// Memory backends (SYMM_BACKEND_*).
pub const Backend = enum(u32) {
    /// CUDA when a usable GPU is present, else host (env SYMM_BACKEND overrides).
    auto = c.SYMM_BACKEND_AUTO,
    /// memfd shared memory, CPU loads/stores.
    host = c.SYMM_BACKEND_HOST,
    /// GPU memory through the CUDA driver API.
    cuda = c.SYMM_BACKEND_CUDA,
    _,
};

/// How `Context.init` forms the job (SYMM_BOOTSTRAP_*).
pub const Bootstrap = enum(u32) {
    /// symmrun, then a launcher's environment, else a single PE.
    auto = c.SYMM_BOOTSTRAP_AUTO,
    /// symmrun/torchrun/Open MPI/Slurm variables.
    env = c.SYMM_BOOTSTRAP_ENV,
    /// Unique id + rank + n_pes (set `InitOptions.uid` instead).
    uid = c.SYMM_BOOTSTRAP_UID,
    /// One PE, no peers.
    single = c.SYMM_BOOTSTRAP_SINGLE,
    _,
};

/// Thread levels (SYMM_THREAD_*). FUNNELED is enforced: calls from another
/// thread than the initialising one give `error.ThreadLevel`.
pub const ThreadLevel = enum(u32) {
    single = c.SYMM_THREAD_SINGLE,
    funneled = c.SYMM_THREAD_FUNNELED,
    serialized = c.SYMM_THREAD_SERIALIZED,
    multiple = c.SYMM_THREAD_MULTIPLE,
    _,
};

/// Element types of symmetric buffers (SYMM_DTYPE_*).
pub const Dtype = enum(u32) {
    int8 = c.SYMM_DTYPE_INT8,
    int16 = c.SYMM_DTYPE_INT16,
    int32 = c.SYMM_DTYPE_INT32,
    int64 = c.SYMM_DTYPE_INT64,
    uint8 = c.SYMM_DTYPE_UINT8,
    uint16 = c.SYMM_DTYPE_UINT16,
    uint32 = c.SYMM_DTYPE_UINT32,
    uint64 = c.SYMM_DTYPE_UINT64,
    /// IEEE binary16: Zig's `f16`.
    float16 = c.SYMM_DTYPE_FLOAT16,
    /// bfloat16: `symm.BF16`.
    bfloat16 = c.SYMM_DTYPE_BFLOAT16,
    float32 = c.SYMM_DTYPE_FLOAT32,
    float64 = c.SYMM_DTYPE_FLOAT64,
    _,
};

/// Comparisons of waits and tests (SYMM_CMP_*).
pub const Cmp = enum(u32) {
    eq = c.SYMM_CMP_EQ,
    ne = c.SYMM_CMP_NE,
    gt = c.SYMM_CMP_GT,
    ge = c.SYMM_CMP_GE,
    lt = c.SYMM_CMP_LT,
    le = c.SYMM_CMP_LE,
};

/// How a signal is updated (SYMM_SIGNAL_*): set, or add (wraps modulo 2^64).
pub const SignalOp = enum(u32) {
    set = c.SYMM_SIGNAL_SET,
    add = c.SYMM_SIGNAL_ADD,
};

/// Atomic memory operations (SYMM_AMO_*), for `Buffer(T).atomic`.
pub const AmoOp = enum(u32) {
    fetch = c.SYMM_AMO_FETCH,
    set = c.SYMM_AMO_SET,
    compare_swap = c.SYMM_AMO_COMPARE_SWAP,
    swap = c.SYMM_AMO_SWAP,
    fetch_inc = c.SYMM_AMO_FETCH_INC,
    inc = c.SYMM_AMO_INC,
    fetch_add = c.SYMM_AMO_FETCH_ADD,
    add = c.SYMM_AMO_ADD,
    fetch_and = c.SYMM_AMO_FETCH_AND,
    @"and" = c.SYMM_AMO_AND,
    fetch_or = c.SYMM_AMO_FETCH_OR,
    @"or" = c.SYMM_AMO_OR,
    fetch_xor = c.SYMM_AMO_FETCH_XOR,
    xor = c.SYMM_AMO_XOR,

    /// Whether the operation returns the prior value.
    pub fn fetches(op: AmoOp) bool {
        return switch (op) {
            .fetch, .compare_swap, .swap, .fetch_inc, .fetch_add, .fetch_and, .fetch_or, .fetch_xor => true,
            else => false,
        };
    }
};

/// Reduction operators (SYMM_OP_*); and/or/xor on integer buffers only.
pub const ReduceOp = enum(u32) {
    sum = c.SYMM_OP_SUM,
    prod = c.SYMM_OP_PROD,
    min = c.SYMM_OP_MIN,
    max = c.SYMM_OP_MAX,
    @"and" = c.SYMM_OP_AND,
    @"or" = c.SYMM_OP_OR,
    xor = c.SYMM_OP_XOR,
};

/// The predefined teams of a context (SYMM_TEAM_*).
pub const PredefinedTeam = enum(u32) {
    /// Every PE of the context.
    world = c.SYMM_TEAM_WORLD,
    /// PEs load/store reachable from this PE.
    shared = c.SYMM_TEAM_SHARED,
    /// PEs of this host.
    node = c.SYMM_TEAM_NODE,
    /// PEs with this PE's local number, one per host.
    same_local_pe = c.SYMM_TEAM_SAME_LOCAL_PE,
};

/// "No element" in the `found` result of the C `_any` waits and tests
/// (the wrapper returns null instead).
pub const index_none: u64 = c.SYMM_INDEX_NONE;

/// A raw CUDA stream (`CUstream` / `cudaStream_t`); null is the legacy
/// default stream. On the host backend stream operations complete before
/// returning and the stream is ignored.
pub const Stream = c.symm_stream_t;

/// bfloat16 (SYMM_DTYPE_BFLOAT16): the upper 16 bits of an IEEE float32.
pub const BF16 = extern struct {
    bits: u16,

    /// Round a float32 to the nearest bfloat16 (ties to even; NaN stays NaN).
    pub fn fromF32(x: f32) BF16 {
        const u: u32 = @bitCast(x);
        if (std.math.isNan(x)) return .{ .bits = @intCast((u >> 16) | 0x40) };
        const rounded = u +% (0x7fff + ((u >> 16) & 1));
        return .{ .bits = @intCast(rounded >> 16) };
    }

    /// The float32 this bfloat16 stands for (exact).
    pub fn toF32(self: BF16) f32 {
        return @bitCast(@as(u32, self.bits) << 16);
    }
};

/// The dtype of a Zig element type, at compile time: i8..i64, u8..u64,
/// f16, `BF16`, f32, f64. Any other type is a compile error.
pub fn dtypeOf(comptime T: type) Dtype {
    return switch (T) {
        i8 => .int8,
        i16 => .int16,
        i32 => .int32,
        i64 => .int64,
        u8 => .uint8,
        u16 => .uint16,
        u32 => .uint32,
        u64 => .uint64,
        f16 => .float16,
        BF16 => .bfloat16,
        f32 => .float32,
        f64 => .float64,
        else => @compileError("symm: no dtype for element type " ++ @typeName(T)),
    };
}

/// Size in bytes of one element of dtype (0 for an unknown one). Answered
/// by the loader, also without a runtime.
pub fn dtypeSize(dtype: Dtype) u32 {
    return c.symm_dtype_size(@intFromEnum(dtype));
}

fn requireInteger(comptime T: type, comptime what: []const u8) void {
    if (@typeInfo(T) != .int) @compileError("symm: " ++ what ++ " needs an integer buffer, not " ++ @typeName(T));
}

// ---------------------------------------------------------- init options --

/// Opaque bytes naming a job (UID bootstrap), made by `uniqueId()`.
pub const UniqueId = c.symm_unique_id;

/// Make a unique id for a new job. The process that made it initialises as
/// rank 0 with it and sends the bytes to the other PEs over its own channel.
pub fn uniqueId() Error!UniqueId {
    var id: UniqueId = undefined;
    try call(c.symm_get_unique_id(&id));
    return id;
}

/// Joining a job by unique id (the NCCL/NVSHMEM model).
pub const UidJoin = struct {
    id: UniqueId,
    /// This PE's rank in [0, n_pes).
    rank: i32,
    n_pes: i32,
};

/// Options of `Context.init`. Every null field keeps symm's default (from
/// `symm_init_attr_init`, answered by the loader).
pub const InitOptions = struct {
    /// Default `.auto` (env SYMM_BACKEND overrides auto).
    backend: ?Backend = null,
    /// Default `.auto`. Setting `uid` selects `.uid`.
    bootstrap: ?Bootstrap = null,
    /// Requested thread level; default `.multiple`.
    thread_level: ?ThreadLevel = null,
    /// Maximum heap bytes per PE; default SYMM_HEAP_CAP or 16 GiB.
    heap_cap: ?u64 = null,
    /// CUDA device ordinal; default -1: the local rank.
    device: ?i32 = null,
    /// Bootstrap and peer-failure timeout in ms; default from the environment.
    timeout_ms: ?u32 = null,
    /// Join by unique id (sets bootstrap `.uid`, rank and n_pes).
    uid: ?UidJoin = null,
};

/// The C init attributes these options give (symm's defaults for null
/// fields). Works without a runtime.
pub fn initAttr(opts: InitOptions) Error!c.symm_init_attr {
    var attr: c.symm_init_attr = undefined;
    try call(c.symm_init_attr_init(&attr, @sizeOf(c.symm_init_attr)));
    if (opts.backend) |v| attr.backend = @intFromEnum(v);
    if (opts.bootstrap) |v| attr.bootstrap = @intFromEnum(v);
    if (opts.thread_level) |v| attr.thread_level = @intFromEnum(v);
    if (opts.heap_cap) |v| attr.heap_cap = v;
    if (opts.device) |v| attr.device = v;
    if (opts.timeout_ms) |v| attr.timeout_ms = v;
    if (opts.uid) |u| {
        attr.bootstrap = c.SYMM_BOOTSTRAP_UID;
        attr.unique_id = u.id;
        attr.rank = u.rank;
        attr.n_pes = u.n_pes;
    }
    return attr;
}

/// Options of a team split (defaults from `symm_team_config_init`).
pub const TeamConfig = struct {
    /// OpenSHMEM hint, recorded and reported (>= 0).
    num_contexts: ?i32 = null,

    fn toC(self: TeamConfig) Error!c.symm_team_config {
        var cfg: c.symm_team_config = undefined;
        try call(c.symm_team_config_init(&cfg, @sizeOf(c.symm_team_config)));
        if (self.num_contexts) |n| cfg.num_contexts = n;
        return cfg;
    }
};

/// What `Context.query` reports.
pub const Info = struct {
    backend: Backend,
    /// The provided thread level.
    thread_level: ThreadLevel,
    my_pe: i32,
    n_pes: i32,
    /// Rank among the PEs of this host.
    local_pe: i32,
    local_n_pes: i32,
    /// CUDA ordinal, -1 on the host backend.
    device: i32,
    /// Bytes each PE may allocate.
    heap_cap: u64,
    /// Bytes currently backed.
    heap_mapped: u64,
    /// Bytes in live allocations.
    heap_used: u64,
};

/// An asynchronous failure recorded on a context (`Context.asyncError`).
pub const AsyncFailure = struct {
    err: Error,
    /// The recorded message, in the caller's buffer (truncated to it).
    message: []const u8,
};

// --------------------------------------------------------------- context --

/// One job membership and its symmetric heap (`symm_ctx`).
pub const Context = struct {
    handle: c.symm_ctx,

    /// Join a job and set up the symmetric heap. Collective over every PE
    /// of the job. `error.LibraryNotFound` when no runtime can be loaded:
    /// fall back to single-process mode then.
    pub fn init(opts: InitOptions) Error!Context {
        const attr = try initAttr(opts);
        var h: c.symm_ctx = null;
        try call(c.symm_init(&attr, &h));
        return .{ .handle = h };
    }

    /// Leave the job: barrier, then release everything the context holds
    /// (buffers and teams still live too). Collective. The context is
    /// unusable afterwards, also when a peer died (`error.PeerFailed`: the
    /// local resources are released all the same).
    pub fn finalize(self: *Context) Error!void {
        return call(c.symm_finalize(&self.handle));
    }

    /// This PE's number in [0, nPes()); -1 for a finalized context.
    pub fn myPe(self: Context) i32 {
        return c.symm_my_pe(self.handle);
    }

    /// Number of PEs in the job; -1 for a finalized context.
    pub fn nPes(self: Context) i32 {
        return c.symm_n_pes(self.handle);
    }

    /// Describe the context (backend, thread level, PEs, heap use).
    pub fn query(self: Context) Error!Info {
        var i: c.symm_ctx_info = std.mem.zeroes(c.symm_ctx_info);
        i.struct_size = @sizeOf(c.symm_ctx_info);
        try call(c.symm_ctx_query(self.handle, &i));
        return .{
            .backend = @enumFromInt(i.backend),
            .thread_level = @enumFromInt(i.thread_level),
            .my_pe = i.my_pe,
            .n_pes = i.n_pes,
            .local_pe = i.local_pe,
            .local_n_pes = i.local_n_pes,
            .device = i.device,
            .heap_cap = i.heap_cap,
            .heap_mapped = i.heap_mapped,
            .heap_used = i.heap_used,
        };
    }

    /// The first failure recorded after its call returned (a stream
    /// operation, a GPU-side wait that gave up), or null. Its message goes
    /// into `msg_buf` (may be empty). With `clear` the record is reset.
    pub fn asyncError(self: Context, clear: bool, msg_buf: []u8) Error!?AsyncFailure {
        var st: c.symm_status = c.SYMM_SUCCESS;
        const flags: u32 = if (clear) c.SYMM_ASYNC_CLEAR else 0;
        const msg: [*c]u8 = if (msg_buf.len > 0) msg_buf.ptr else null;
        try call(c.symm_ctx_async_error(self.handle, flags, msg_buf.len, &st, msg));
        if (st == c.SYMM_SUCCESS) return null;
        const text: []const u8 = if (msg_buf.len > 0) std.mem.sliceTo(msg_buf, 0) else "";
        return .{ .err = errorOf(st), .message = text };
    }

    /// A predefined team (owned by the context; never destroyed).
    pub fn team(self: Context, which: PredefinedTeam) Error!Team {
        var t: c.symm_team = null;
        try call(c.symm_team_get(self.handle, @intFromEnum(which), &t));
        return .{ .handle = t };
    }

    /// The team of every PE of the context.
    pub fn world(self: Context) Error!Team {
        return self.team(.world);
    }

    /// Allocate `count` elements of `T` on every PE at the same symmetric
    /// offset, zeroed. Collective: every PE passes the same type and count
    /// (else all get `error.Mismatch`). Free with `Buffer(T).free`.
    pub fn alloc(self: Context, comptime T: type, count: u64) Error!Buffer(T) {
        var b: c.symm_buf = null;
        try call(c.symm_buf_alloc(self.handle, @intFromEnum(dtypeOf(T)), count, &b));
        return .{ .handle = b, .len = count };
    }

    /// Make existing memory symmetric (CUDA backend: memory from cuMemCreate
    /// with POSIX fd handles; the host backend gives `error.NotSupported`).
    /// Collective. Kept pointer: `mem` is used until `free` of the buffer,
    /// which unregisters it without freeing it.
    pub fn register(self: Context, comptime T: type, mem: []T) Error!Buffer(T) {
        var b: c.symm_buf = null;
        try call(c.symm_buf_register(self.handle, mem.ptr, @intFromEnum(dtypeOf(T)), mem.len, &b));
        return .{ .handle = b, .len = mem.len };
    }

    /// Complete every outstanding operation this PE issued on the context
    /// (puts visible, nbi gets and fetches written): memory kept by `*Nbi`
    /// calls is free again.
    pub fn quiet(self: Context) Error!void {
        return call(c.symm_quiet(self.handle));
    }

    /// Puts and atomics to each PE issued before the fence are delivered
    /// before those issued after it.
    pub fn fence(self: Context) Error!void {
        return call(c.symm_fence(self.handle));
    }

    /// Quiet, then wait until every PE arrived. Collective.
    pub fn barrierAll(self: Context) Error!void {
        return call(c.symm_barrier_all(self.handle));
    }

    /// Wait until every PE arrived (no quiet). Collective.
    pub fn syncAll(self: Context) Error!void {
        return call(c.symm_sync_all(self.handle));
    }

    /// Stream-ordered quiet (see `Stream`).
    pub fn quietOnStream(self: Context, stream: Stream) Error!void {
        return call(c.symm_quiet_on_stream(self.handle, stream));
    }

    /// Stream-ordered barrier over every PE. Collective.
    pub fn barrierAllOnStream(self: Context, stream: Stream) Error!void {
        return call(c.symm_barrier_all_on_stream(self.handle, stream));
    }

    /// Copy `src` to the symmetric address `dst_sym` (a local address in
    /// this PE's heap, e.g. from `Buffer(T).localPtr`) on `pe`. The byte
    /// range must lie inside the heap (`error.OutOfBounds`).
    pub fn putmem(self: Context, dst_sym: *anyopaque, src: []const u8, pe: i32) Error!void {
        return call(c.symm_putmem(self.handle, dst_sym, src.ptr, src.len, pe));
    }

    /// Copy from the symmetric address `src_sym` on `pe` into `dst`.
    pub fn getmem(self: Context, dst: []u8, src_sym: *const anyopaque, pe: i32) Error!void {
        return call(c.symm_getmem(self.handle, dst.ptr, src_sym, dst.len, pe));
    }

    /// Non-blocking `putmem`. Kept pointer: `src` is read until the next
    /// `quiet` (or barrier) on the context; do not change or free it before.
    pub fn putmemNbi(self: Context, dst_sym: *anyopaque, src: []const u8, pe: i32) Error!void {
        return call(c.symm_putmem_nbi(self.handle, dst_sym, src.ptr, src.len, pe));
    }

    /// Non-blocking `getmem`. Kept pointer: `dst` is written until the next
    /// `quiet` (or barrier); read it only after that.
    pub fn getmemNbi(self: Context, dst: []u8, src_sym: *const anyopaque, pe: i32) Error!void {
        return call(c.symm_getmem_nbi(self.handle, dst.ptr, src_sym, dst.len, pe));
    }

    /// Stream-ordered `putmem`. Kept pointer: `src` (device or pinned
    /// memory) is read when the stream reaches the operation.
    pub fn putmemOnStream(self: Context, dst_sym: *anyopaque, src: []const u8, pe: i32, stream: Stream) Error!void {
        return call(c.symm_putmem_on_stream(self.handle, dst_sym, src.ptr, src.len, pe, stream));
    }

    /// Stream-ordered `getmem`. Kept pointer: `dst` is written when the
    /// stream reaches the operation.
    pub fn getmemOnStream(self: Context, dst: []u8, src_sym: *const anyopaque, pe: i32, stream: Stream) Error!void {
        return call(c.symm_getmem_on_stream(self.handle, dst.ptr, src_sym, dst.len, pe, stream));
    }

    /// Address at which this process can load/store `pe`'s copy of the
    /// symmetric address `sym`, or null when `pe` is not load/store reachable.
    pub fn ptr(self: Context, sym: *const anyopaque, pe: i32) Error!?*anyopaque {
        var p: ?*anyopaque = null;
        try call(c.symm_ptr(self.handle, sym, pe, &p));
        return p;
    }

    /// The context as seen by GPU code (symm_device.cuh); CUDA backend only
    /// (`error.NotSupported` on the host backend). Valid until `finalize`.
    pub fn deviceCtx(self: Context) Error!c.symm_device_ctx {
        var d = std.mem.zeroes(c.symm_device_ctx);
        d.struct_size = @sizeOf(c.symm_device_ctx);
        try call(c.symm_device_ctx_get(self.handle, &d));
        return d;
    }
};

// ------------------------------------------------------------------ team --

/// An ordered subset of a context's PEs (`symm_team`). Predefined teams
/// belong to their context; split teams are released with `destroy`.
pub const Team = struct {
    handle: c.symm_team,

    /// This PE's number in the team; -1 for a destroyed team.
    pub fn myPe(self: Team) i32 {
        return c.symm_team_my_pe(self.handle);
    }

    /// Number of PEs in the team; -1 for a destroyed team.
    pub fn nPes(self: Team) i32 {
        return c.symm_team_n_pes(self.handle);
    }

    /// The number in `dst` of this team's PE `pe`, or null when that PE is
    /// not in `dst`.
    pub fn translatePe(self: Team, pe: i32, dst: Team) ?i32 {
        const r = c.symm_team_translate_pe(self.handle, pe, dst.handle);
        return if (r < 0) null else r;
    }

    /// The team's configuration.
    pub fn config(self: Team) Error!TeamConfig {
        var cfg: c.symm_team_config = undefined;
        cfg.struct_size = @sizeOf(c.symm_team_config);
        try call(c.symm_team_get_config(self.handle, &cfg));
        return .{ .num_contexts = cfg.num_contexts };
    }

    /// New team of this team's PEs start, start+stride, ... (size PEs;
    /// stride may be negative, not 0). Collective over this team; null on
    /// the PEs that are not members. Release with `destroy`.
    pub fn splitStrided(self: Team, start: i32, stride: i32, size: i32, cfg: TeamConfig) Error!?Team {
        const ccfg = try cfg.toC();
        var t: c.symm_team = null;
        try call(c.symm_team_split_strided(self.handle, start, stride, size, &ccfg, &t));
        return if (t == null) null else Team{ .handle = t };
    }

    /// The two teams of `split2d`: this PE's row and column.
    pub const Grid = struct { x: ?Team, y: ?Team };

    /// Split this team into a 2-D grid of rows of `xrange` PEs: `x` is this
    /// PE's row, `y` its column (the last row may be short). Collective.
    pub fn split2d(self: Team, xrange: i32, xcfg: TeamConfig, ycfg: TeamConfig) Error!Grid {
        const cx = try xcfg.toC();
        const cy = try ycfg.toC();
        var x: c.symm_team = null;
        var y: c.symm_team = null;
        try call(c.symm_team_split_2d(self.handle, xrange, &cx, &cy, &x, &y));
        return .{
            .x = if (x == null) null else Team{ .handle = x },
            .y = if (y == null) null else Team{ .handle = y },
        };
    }

    /// Destroy a split team. Collective over the team (a predefined team
    /// gives `error.InvalidArg`).
    pub fn destroy(self: *Team) Error!void {
        try call(c.symm_team_destroy(self.handle));
        self.handle = null;
    }

    /// Quiet, then wait for all team PEs. Collective.
    pub fn barrier(self: Team) Error!void {
        return call(c.symm_barrier(self.handle));
    }

    /// Wait for all team PEs (no quiet). Collective.
    pub fn sync(self: Team) Error!void {
        return call(c.symm_team_sync(self.handle));
    }

    /// Stream-ordered `barrier`. Collective.
    pub fn barrierOnStream(self: Team, stream: Stream) Error!void {
        return call(c.symm_barrier_on_stream(self.handle, stream));
    }

    /// Stream-ordered `sync`. Collective.
    pub fn syncOnStream(self: Team, stream: Stream) Error!void {
        return call(c.symm_team_sync_on_stream(self.handle, stream));
    }

    /// Collectives: every PE passes the same `dst` and `src` buffers and
    /// indices (an in-place gather's `src` is its own block of `dst`) and is
    /// in place or not alike; the blocking forms return `error.Mismatch`
    /// otherwise, the stream forms cannot check.
    ///
    /// Team PE `root`'s `src[src_index ..][0..nelems]` is copied into every
    /// PE's `dst[dst_index ..]` (root's too). Collective.
    pub fn broadcast(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, root: i32) Error!void {
        return call(c.symm_broadcast(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, root));
    }

    /// `dst[dst_index + i * nelems ..]` receives team PE i's src range, on
    /// every PE. Collective.
    pub fn fcollect(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64) Error!void {
        return call(c.symm_fcollect(self.handle, dst.handle, dst_index, src.handle, src_index, nelems));
    }

    /// Like `fcollect` with each PE's own `nelems`: blocks are concatenated
    /// in team order. Collective.
    pub fn collect(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64) Error!void {
        return call(c.symm_collect(self.handle, dst.handle, dst_index, src.handle, src_index, nelems));
    }

    /// Block j of src (`nelems` each) goes to team PE j's dst block i (i =
    /// this PE). Collective.
    pub fn alltoall(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64) Error!void {
        return call(c.symm_alltoall(self.handle, dst.handle, dst_index, src.handle, src_index, nelems));
    }

    /// Variable-size all-to-all with the counts in symmetric memory (ABI
    /// 1.2; MoE dispatch, PyTorch's all_to_all_vdev): this PE sends
    /// `send_counts[send_index + j]` elements to team PE j. The counts are
    /// read from symmetric memory when the call gets there, so counts that
    /// a kernel just computed need no copy to the host. Collective.
    /// - `src`: `src_nelems` elements from `src_index`: those for team PE 0,
    ///   then those for PE 1, ... (packed).
    /// - `send_counts`: `Buffer(u64)` or `Buffer(i64)` (checked at compile
    ///   time), nPes() entries from `send_index`. Peers read it.
    /// - `dst`: room for `dst_nelems` elements from `dst_index`; receives
    ///   PE 0's elements for this PE, then PE 1's, ... (packed).
    /// - `recv_counts`: `Buffer(u64)` or `Buffer(i64)`, 2 * nPes() entries
    ///   from `recv_index`, written: [j] the elements that came from PE j,
    ///   [nPes() + j] where they start in dst (relative to `dst_index`).
    ///
    /// `dst` and `src` have one element type; every buffer is in the team's
    /// context; the dst, src, send_counts and recv_counts ranges must not
    /// overlap (src with send_counts may: both are only read). `src_index`,
    /// `src_nelems` and `send_index` must be the same on every PE, else
    /// `error.Mismatch`. Counts are read as u64 (a negative i64 count is a
    /// huge one). When this PE's counts add up to more than `src_nelems`,
    /// `error.OutOfBounds`; when what it would receive exceeds `dst_nelems`,
    /// or a peer's elements for it lie beyond that peer's `src_nelems`, it
    /// copies nothing, still writes `recv_counts` (what would have come) and
    /// returns `error.OutOfBounds`. Either way the other PEs finish normally.
    ///
    /// Combine (the reverse exchange) is the same call with the forward
    /// call's `recv_counts` (its first nPes() entries) as `send_counts` and
    /// its `dst` as `src`: every element returns to the slot it left from.
    /// A 1.1 runtime lacks the entry: `error.NotSupported`. Keeps no pointer.
    pub fn alltoallv(self: Team, dst: anytype, dst_index: u64, dst_nelems: u64, src: @TypeOf(dst), src_index: u64, src_nelems: u64, send_counts: anytype, send_index: u64, recv_counts: anytype, recv_index: u64) Error!void {
        comptime requireCounts(@TypeOf(send_counts), "send_counts");
        comptime requireCounts(@TypeOf(recv_counts), "recv_counts");
        return call(c.symm_alltoallv(self.handle, dst.handle, dst_index, dst_nelems, src.handle, src_index, src_nelems, send_counts.handle, send_index, recv_counts.handle, recv_index));
    }

    /// Element-wise reduction of every PE's src range into every PE's dst
    /// range; bitwise-identical results on every PE. Collective.
    pub fn reduce(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, op: ReduceOp) Error!void {
        return call(c.symm_reduce(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, @intFromEnum(op)));
    }

    /// src holds nPes() blocks of `nelems`; PE i's dst receives the
    /// reduction of every PE's block i. Collective.
    pub fn reducescatter(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, op: ReduceOp) Error!void {
        return call(c.symm_reducescatter(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, @intFromEnum(op)));
    }

    /// Stream-ordered `broadcast`. Collective.
    pub fn broadcastOnStream(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, root: i32, stream: Stream) Error!void {
        return call(c.symm_broadcast_on_stream(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, root, stream));
    }

    /// Stream-ordered `fcollect`. Collective.
    pub fn fcollectOnStream(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, stream: Stream) Error!void {
        return call(c.symm_fcollect_on_stream(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, stream));
    }

    /// Stream-ordered `alltoall`. Collective.
    pub fn alltoallOnStream(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, stream: Stream) Error!void {
        return call(c.symm_alltoall_on_stream(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, stream));
    }

    /// Stream-ordered `alltoallv` (graph-capturable; on the CUDA backend one
    /// kernel that reads the counts on the GPU). Collective.
    /// The returned error is about the arguments; the agreement of
    /// `src_index`, `src_nelems` and `send_index` across PEs cannot always
    /// be checked here (keep them equal). An out-of-bounds exchange found on the GPU is
    /// recorded on the context (`Context.asyncError`), and `recv_counts` says
    /// what would have come. On the host backend it runs to completion first
    /// and returns the error itself, as `alltoallv`. Keeps no pointer.
    pub fn alltoallvOnStream(self: Team, dst: anytype, dst_index: u64, dst_nelems: u64, src: @TypeOf(dst), src_index: u64, src_nelems: u64, send_counts: anytype, send_index: u64, recv_counts: anytype, recv_index: u64, stream: Stream) Error!void {
        comptime requireCounts(@TypeOf(send_counts), "send_counts");
        comptime requireCounts(@TypeOf(recv_counts), "recv_counts");
        return call(c.symm_alltoallv_on_stream(self.handle, dst.handle, dst_index, dst_nelems, src.handle, src_index, src_nelems, send_counts.handle, send_index, recv_counts.handle, recv_index, stream));
    }

    /// Stream-ordered `reduce`. Collective.
    pub fn reduceOnStream(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, op: ReduceOp, stream: Stream) Error!void {
        return call(c.symm_reduce_on_stream(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, @intFromEnum(op), stream));
    }

    /// Stream-ordered `reducescatter`. Collective.
    pub fn reducescatterOnStream(self: Team, dst: anytype, dst_index: u64, src: @TypeOf(dst), src_index: u64, nelems: u64, op: ReduceOp, stream: Stream) Error!void {
        return call(c.symm_reducescatter_on_stream(self.handle, dst.handle, dst_index, src.handle, src_index, nelems, @intFromEnum(op), stream));
    }

    /// A split (strided) or predefined team as seen by GPU code; CUDA
    /// backend only.
    pub fn deviceTeam(self: Team) Error!c.symm_device_team {
        var d = std.mem.zeroes(c.symm_device_team);
        d.struct_size = @sizeOf(c.symm_device_team);
        try call(c.symm_device_team_get(self.handle, &d));
        return d;
    }
};

// ---------------------------------------------------------------- buffer --

/// A typed symmetric buffer of `len` elements of `T` on every PE
/// (`symm_buf`). Indices are element indices; every range comes from a
/// slice and is bounds-checked by the runtime (`error.OutOfBounds`); a PE
/// outside [0, nPes) is `error.InvalidArg`. Released with `free`
/// (collective).
pub fn Buffer(comptime T: type) type {
    return struct {
        const Self = @This();
        /// The element type.
        pub const Element = T;
        /// The element type's dtype.
        pub const dtype: Dtype = dtypeOf(T);

        handle: c.symm_buf,
        /// Number of elements.
        len: u64,

        /// Free the buffer on every PE (collective over its context);
        /// outstanding operations complete first.
        pub fn free(self: *Self) Error!void {
            try call(c.symm_buf_free(self.handle));
            self.handle = null;
            self.len = 0;
        }

        /// Local address of element 0 (host memory on the host backend,
        /// device memory on CUDA: do not dereference it on the host then).
        pub fn localPtr(self: Self) Error![*]T {
            var addr: ?*anyopaque = null;
            try call(c.symm_buf_ptr(self.handle, &addr));
            return @ptrCast(@alignCast(addr.?));
        }

        /// This PE's copy as a slice (host backend: plain memory).
        pub fn localSlice(self: Self) Error![]T {
            const addr = try self.localPtr();
            return addr[0..@intCast(self.len)];
        }

        /// Where this process can load/store `pe`'s copy, or null when `pe`
        /// is not load/store reachable.
        pub fn peerPtr(self: Self, pe: i32) Error!?[*]T {
            var addr: ?*anyopaque = null;
            try call(c.symm_buf_peer_ptr(self.handle, pe, &addr));
            return if (addr) |a| @ptrCast(@alignCast(a)) else null;
        }

        /// What the runtime records for the buffer.
        pub const Query = struct { dtype: Dtype, count: u64, offset: u64 };

        /// dtype, element count and symmetric byte offset of the buffer.
        pub fn query(self: Self) Error!Query {
            var dt: u32 = 0;
            var count: u64 = 0;
            var offset: u64 = 0;
            try call(c.symm_buf_query(self.handle, &dt, &count, &offset));
            return .{ .dtype = @enumFromInt(dt), .count = count, .offset = offset };
        }

        // -- RMA --

        /// Copy `src` into `pe`'s elements [index, index + src.len).
        /// Returns when `src` may be reused and the data is visible at `pe`.
        pub fn put(self: Self, index: u64, src: []const T, pe: i32) Error!void {
            return call(c.symm_put(self.handle, index, src.ptr, src.len, pe));
        }

        /// Copy `pe`'s elements [index, index + dst.len) into `dst`.
        pub fn get(self: Self, index: u64, dst: []T, pe: i32) Error!void {
            return call(c.symm_get(dst.ptr, self.handle, index, dst.len, pe));
        }

        /// Non-blocking `put`. Kept pointer: `src` is read until the next
        /// `Context.quiet` (or barrier); the data is visible at `pe` then.
        pub fn putNbi(self: Self, index: u64, src: []const T, pe: i32) Error!void {
            return call(c.symm_put_nbi(self.handle, index, src.ptr, src.len, pe));
        }

        /// Non-blocking `get`. Kept pointer: `dst` is written until the
        /// next `Context.quiet` (or barrier); read it after that.
        pub fn getNbi(self: Self, index: u64, dst: []T, pe: i32) Error!void {
            return call(c.symm_get_nbi(dst.ptr, self.handle, index, dst.len, pe));
        }

        /// Write one element of `pe`'s copy.
        pub fn p(self: Self, index: u64, value: T, pe: i32) Error!void {
            return call(c.symm_p(self.handle, index, &value, pe));
        }

        /// Read one element of `pe`'s copy.
        pub fn g(self: Self, index: u64, pe: i32) Error!T {
            var v: T = undefined;
            try call(c.symm_g(self.handle, index, pe, &v));
            return v;
        }

        /// Stream-ordered `put`. Kept pointer: `src` (device or pinned
        /// memory) is read when the stream reaches the operation; keep it
        /// valid and unchanged until then.
        pub fn putOnStream(self: Self, index: u64, src: []const T, pe: i32, stream: Stream) Error!void {
            return call(c.symm_put_on_stream(self.handle, index, src.ptr, src.len, pe, stream));
        }

        /// Stream-ordered `get`. Kept pointer: `dst` is written when the
        /// stream reaches the operation.
        pub fn getOnStream(self: Self, index: u64, dst: []T, pe: i32, stream: Stream) Error!void {
            return call(c.symm_get_on_stream(dst.ptr, self.handle, index, dst.len, pe, stream));
        }

        /// Stream-ordered `putNbi`. Kept pointer: `src` until the stream
        /// reaches the operation.
        pub fn putNbiOnStream(self: Self, index: u64, src: []const T, pe: i32, stream: Stream) Error!void {
            return call(c.symm_put_nbi_on_stream(self.handle, index, src.ptr, src.len, pe, stream));
        }

        /// Stream-ordered `getNbi`. Kept pointer: `dst` until the stream
        /// reaches the operation.
        pub fn getNbiOnStream(self: Self, index: u64, dst: []T, pe: i32, stream: Stream) Error!void {
            return call(c.symm_get_nbi_on_stream(dst.ptr, self.handle, index, dst.len, pe, stream));
        }

        /// Stream-ordered `p`; `value` is read at call time (nothing kept).
        pub fn pOnStream(self: Self, index: u64, value: T, pe: i32, stream: Stream) Error!void {
            return call(c.symm_p_on_stream(self.handle, index, &value, pe, stream));
        }

        // -- signals --

        /// Put `src` at `index` of `pe`'s copy, then update `pe`'s signal
        /// `sig[sig_index]` (`op` with `signal`) once the data is visible.
        /// The signal element must be of another buffer range than the data.
        pub fn putSignal(self: Self, index: u64, src: []const T, sig: Buffer(u64), sig_index: u64, signal: u64, op: SignalOp, pe: i32) Error!void {
            return call(c.symm_put_signal(self.handle, index, src.ptr, src.len, sig.handle, sig_index, signal, @intFromEnum(op), pe));
        }

        /// Non-blocking `putSignal`, complete at the next quiet. Kept
        /// pointer: `src` is read until the next `Context.quiet`.
        pub fn putSignalNbi(self: Self, index: u64, src: []const T, sig: Buffer(u64), sig_index: u64, signal: u64, op: SignalOp, pe: i32) Error!void {
            return call(c.symm_put_signal_nbi(self.handle, index, src.ptr, src.len, sig.handle, sig_index, signal, @intFromEnum(op), pe));
        }

        /// Stream-ordered `putSignal`. Kept pointer: `src` until the stream
        /// reaches the operation.
        pub fn putSignalOnStream(self: Self, index: u64, src: []const T, sig: Buffer(u64), sig_index: u64, signal: u64, op: SignalOp, pe: i32, stream: Stream) Error!void {
            return call(c.symm_put_signal_on_stream(self.handle, index, src.ptr, src.len, sig.handle, sig_index, signal, @intFromEnum(op), pe, stream));
        }

        /// Update `pe`'s signal `self[index]` without data (u64 buffers).
        pub fn signalOp(self: Self, index: u64, signal: u64, op: SignalOp, pe: i32) Error!void {
            comptime requireSignal(T);
            return call(c.symm_signal_op(self.handle, index, signal, @intFromEnum(op), pe));
        }

        /// Stream-ordered `signalOp`.
        pub fn signalOpOnStream(self: Self, index: u64, signal: u64, op: SignalOp, pe: i32, stream: Stream) Error!void {
            comptime requireSignal(T);
            return call(c.symm_signal_op_on_stream(self.handle, index, signal, @intFromEnum(op), pe, stream));
        }

        /// Read this PE's signal `self[index]` atomically.
        pub fn signalFetch(self: Self, index: u64) Error!u64 {
            comptime requireSignal(T);
            var v: u64 = 0;
            try call(c.symm_signal_fetch(self.handle, index, &v));
            return v;
        }

        /// Wait until this PE's signal `self[index]` compares true against
        /// `value`; returns the value that satisfied it. `error.PeerFailed`
        /// if a peer dies.
        pub fn signalWaitUntil(self: Self, index: u64, cmp: Cmp, value: u64) Error!u64 {
            comptime requireSignal(T);
            var v: u64 = 0;
            try call(c.symm_signal_wait_until(self.handle, index, @intFromEnum(cmp), value, &v));
            return v;
        }

        /// The stream waits (on the GPU) until this PE's signal compares true.
        pub fn signalWaitUntilOnStream(self: Self, index: u64, cmp: Cmp, value: u64, stream: Stream) Error!void {
            comptime requireSignal(T);
            return call(c.symm_signal_wait_until_on_stream(self.handle, index, @intFromEnum(cmp), value, stream));
        }

        // -- waits and tests (integer buffers, this PE's elements) --
        //
        // A set is `nelems` elements from `index`; `mask` (optional, one
        // entry per element) excludes element i when mask[i] != 0. Waits
        // return `error.PeerFailed` if a peer dies; so does an unsatisfied
        // test once the job lost a PE.

        fn maskPtr(mask: ?[]const i32, nelems: u64) Error![*c]const i32 {
            const m = mask orelse return null;
            if (m.len != nelems) return fail("symm: the mask has another length than the element set");
            return m.ptr;
        }

        /// Wait until `self[index]` compares true against `value`.
        pub fn waitUntil(self: Self, index: u64, cmp: Cmp, value: T) Error!void {
            comptime requireInteger(T, "waitUntil");
            return call(c.symm_wait_until(self.handle, index, @intFromEnum(cmp), &value));
        }

        /// Wait until every included element compares true.
        pub fn waitUntilAll(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T) Error!void {
            comptime requireInteger(T, "waitUntilAll");
            return call(c.symm_wait_until_all(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value));
        }

        /// Wait until one included element compares true; its index
        /// (relative to `index`), null for an empty set.
        pub fn waitUntilAny(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T) Error!?u64 {
            comptime requireInteger(T, "waitUntilAny");
            var found: u64 = index_none;
            try call(c.symm_wait_until_any(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value, &found));
            return if (found == index_none) null else found;
        }

        /// Wait until at least one included element compares true; every
        /// satisfied index (relative, increasing) is written to `indices`
        /// (capacity >= nelems) and the filled part returned.
        pub fn waitUntilSome(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T, indices: []u64) Error![]u64 {
            comptime requireInteger(T, "waitUntilSome");
            if (indices.len < nelems) return fail("symm: indices holds fewer entries than the element set");
            var n: u64 = 0;
            try call(c.symm_wait_until_some(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value, indices.ptr, &n));
            return indices[0..@intCast(n)];
        }

        /// Vector form: element index + i is compared against values[i].
        pub fn waitUntilAllVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T) Error!void {
            comptime requireInteger(T, "waitUntilAllVector");
            return call(c.symm_wait_until_all_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr));
        }

        /// Vector form of `waitUntilAny`.
        pub fn waitUntilAnyVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T) Error!?u64 {
            comptime requireInteger(T, "waitUntilAnyVector");
            var found: u64 = index_none;
            try call(c.symm_wait_until_any_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr, &found));
            return if (found == index_none) null else found;
        }

        /// Vector form of `waitUntilSome`.
        pub fn waitUntilSomeVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T, indices: []u64) Error![]u64 {
            comptime requireInteger(T, "waitUntilSomeVector");
            if (indices.len < values.len) return fail("symm: indices holds fewer entries than the element set");
            var n: u64 = 0;
            try call(c.symm_wait_until_some_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr, indices.ptr, &n));
            return indices[0..@intCast(n)];
        }

        /// Does `self[index]` compare true against `value` now? Never blocks.
        pub fn testCmp(self: Self, index: u64, cmp: Cmp, value: T) Error!bool {
            comptime requireInteger(T, "testCmp");
            var sat: i32 = 0;
            try call(c.symm_test(self.handle, index, @intFromEnum(cmp), &value, &sat));
            return sat != 0;
        }

        /// Do all included elements compare true now?
        pub fn testAll(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T) Error!bool {
            comptime requireInteger(T, "testAll");
            var sat: i32 = 0;
            try call(c.symm_test_all(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value, &sat));
            return sat != 0;
        }

        /// The index (relative) of one included element that compares true
        /// now, or null.
        pub fn testAny(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T) Error!?u64 {
            comptime requireInteger(T, "testAny");
            var sat: i32 = 0;
            var found: u64 = index_none;
            try call(c.symm_test_any(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value, &sat, &found));
            return if (sat != 0) found else null;
        }

        /// Every included element that compares true now (relative
        /// indices, increasing) into `indices` (capacity >= nelems); may be
        /// empty.
        pub fn testSome(self: Self, index: u64, nelems: u64, mask: ?[]const i32, cmp: Cmp, value: T, indices: []u64) Error![]u64 {
            comptime requireInteger(T, "testSome");
            if (indices.len < nelems) return fail("symm: indices holds fewer entries than the element set");
            var n: u64 = 0;
            try call(c.symm_test_some(self.handle, index, nelems, try maskPtr(mask, nelems), @intFromEnum(cmp), &value, indices.ptr, &n));
            return indices[0..@intCast(n)];
        }

        /// Vector form of `testAll`.
        pub fn testAllVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T) Error!bool {
            comptime requireInteger(T, "testAllVector");
            var sat: i32 = 0;
            try call(c.symm_test_all_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr, &sat));
            return sat != 0;
        }

        /// Vector form of `testAny`.
        pub fn testAnyVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T) Error!?u64 {
            comptime requireInteger(T, "testAnyVector");
            var sat: i32 = 0;
            var found: u64 = index_none;
            try call(c.symm_test_any_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr, &sat, &found));
            return if (sat != 0) found else null;
        }

        /// Vector form of `testSome`.
        pub fn testSomeVector(self: Self, index: u64, mask: ?[]const i32, cmp: Cmp, values: []const T, indices: []u64) Error![]u64 {
            comptime requireInteger(T, "testSomeVector");
            if (indices.len < values.len) return fail("symm: indices holds fewer entries than the element set");
            var n: u64 = 0;
            try call(c.symm_test_some_vector(self.handle, index, values.len, try maskPtr(mask, values.len), @intFromEnum(cmp), values.ptr, indices.ptr, &n));
            return indices[0..@intCast(n)];
        }

        // -- atomics (32/64-bit integers; fetch/set/swap also f32/f64) --

        /// Any atomic operation on `pe`'s element `index` (C's order:
        /// index, op, value, compare, pe): `value` is the
        /// operand (ignored by fetch/inc/fetch_inc), `compare` the expected
        /// value of compare_swap. Returns the prior value for fetching
        /// operations (`AmoOp.fetches`), else undefined. Exact across PEs.
        pub fn atomic(self: Self, index: u64, op: AmoOp, value: T, compare: T, pe: i32) Error!T {
            var fetched: T = std.mem.zeroes(T);
            try call(c.symm_atomic(self.handle, index, @intFromEnum(op), &value, &compare, pe, &fetched));
            return fetched;
        }

        /// Non-blocking `atomic`. Kept pointer: `fetched` (required for
        /// fetching operations, else may be null) may be written until the
        /// next `Context.quiet`; keep it alive until then. `value` and
        /// `compare` are read at call time.
        pub fn atomicNbi(self: Self, index: u64, op: AmoOp, value: T, compare: T, pe: i32, fetched: ?*T) Error!void {
            return call(c.symm_atomic_nbi(self.handle, index, @intFromEnum(op), &value, &compare, pe, fetched));
        }

        /// Atomically read `pe`'s element.
        pub fn atomicFetch(self: Self, index: u64, pe: i32) Error!T {
            return self.atomic(index, .fetch, zero(), zero(), pe);
        }

        /// Atomically write `pe`'s element.
        pub fn atomicSet(self: Self, index: u64, value: T, pe: i32) Error!void {
            _ = try self.atomic(index, .set, value, zero(), pe);
        }

        /// Atomically write `pe`'s element; returns the prior value.
        pub fn atomicSwap(self: Self, index: u64, value: T, pe: i32) Error!T {
            return self.atomic(index, .swap, value, zero(), pe);
        }

        /// Write `value` if the element equals `expected`; returns the prior value.
        pub fn compareSwap(self: Self, index: u64, expected: T, value: T, pe: i32) Error!T {
            comptime requireInteger(T, "compareSwap");
            return self.atomic(index, .compare_swap, value, expected, pe);
        }

        /// Add 1; returns the prior value.
        pub fn fetchInc(self: Self, index: u64, pe: i32) Error!T {
            comptime requireInteger(T, "fetchInc");
            return self.atomic(index, .fetch_inc, zero(), zero(), pe);
        }

        /// Add 1.
        pub fn inc(self: Self, index: u64, pe: i32) Error!void {
            comptime requireInteger(T, "inc");
            _ = try self.atomic(index, .inc, zero(), zero(), pe);
        }

        /// Add `value` (wrapping); returns the prior value.
        pub fn fetchAdd(self: Self, index: u64, value: T, pe: i32) Error!T {
            comptime requireInteger(T, "fetchAdd");
            return self.atomic(index, .fetch_add, value, zero(), pe);
        }

        /// Add `value` (wrapping).
        pub fn add(self: Self, index: u64, value: T, pe: i32) Error!void {
            comptime requireInteger(T, "add");
            _ = try self.atomic(index, .add, value, zero(), pe);
        }

        /// Bitwise and; returns the prior value.
        pub fn fetchAnd(self: Self, index: u64, value: T, pe: i32) Error!T {
            comptime requireInteger(T, "fetchAnd");
            return self.atomic(index, .fetch_and, value, zero(), pe);
        }

        /// Bitwise or; returns the prior value.
        pub fn fetchOr(self: Self, index: u64, value: T, pe: i32) Error!T {
            comptime requireInteger(T, "fetchOr");
            return self.atomic(index, .fetch_or, value, zero(), pe);
        }

        /// Bitwise xor; returns the prior value.
        pub fn fetchXor(self: Self, index: u64, value: T, pe: i32) Error!T {
            comptime requireInteger(T, "fetchXor");
            return self.atomic(index, .fetch_xor, value, zero(), pe);
        }

        fn zero() T {
            return std.mem.zeroes(T);
        }
    };
}

/// The count buffers of `Team.alltoallv`: `Buffer(u64)` or `Buffer(i64)`.
fn requireCounts(comptime B: type, comptime what: []const u8) void {
    if (B != Buffer(u64) and B != Buffer(i64))
        @compileError("symm: alltoallv's " ++ what ++ " is a Buffer(u64) or a Buffer(i64), not " ++ @typeName(B));
}

fn requireSignal(comptime T: type) void {
    if (T != u64) @compileError("symm: signals live in Buffer(u64), not Buffer(" ++ @typeName(T) ++ ")");
}

/// C functions of the ABI this module does not wrap, each with the reason
/// (the ABI check, tests/abi_check.zig, requires every function of
/// abi/symm-abi.json to be called here or listed here).
pub const not_wrapped = [_]struct { name: []const u8, reason: []const u8 }{};

// ------------------------------------------------------------ unit tests --

test "every status maps to its own error and back" {
    for (status_errors) |e| {
        try std.testing.expectEqual(e.err, errorOf(e.code));
        try std.testing.expectEqual(e.code, statusOf(e.err));
        try std.testing.expectError(e.err, check(e.code));
    }
    try check(c.SYMM_SUCCESS);
    try std.testing.expectEqual(error.UnknownStatus, errorOf(c.SYMM_STATUS_COUNT));
    try std.testing.expectEqualStrings("SYMM_ERR_OUT_OF_BOUNDS", errorName(error.OutOfBounds));
    try std.testing.expectEqualStrings("SYMM_ERR_UNKNOWN", statusString(1000));
}

test "dtypes follow the element type" {
    try std.testing.expectEqual(Dtype.int64, Buffer(i64).dtype);
    try std.testing.expectEqual(Dtype.float16, dtypeOf(f16));
    try std.testing.expectEqual(Dtype.bfloat16, dtypeOf(BF16));
    inline for (.{ i8, i16, i32, i64, u8, u16, u32, u64, f16, BF16, f32, f64 }) |T| {
        try std.testing.expectEqual(@as(u32, @sizeOf(T)), dtypeSize(dtypeOf(T)));
    }
}

test "bfloat16 conversion" {
    try std.testing.expectEqual(@as(f32, 1.5), BF16.fromF32(1.5).toF32());
    try std.testing.expectEqual(@as(u16, 0x3f80), BF16.fromF32(1.0).bits);
    // 1 + 2^-8 lies halfway between two bfloat16s: ties to even (1.0).
    try std.testing.expectEqual(@as(f32, 1.0), BF16.fromF32(1.00390625).toF32());
    try std.testing.expect(std.math.isNan(BF16.fromF32(std.math.nan(f32)).toF32()));
}

test "the versions agree" {
    try std.testing.expectEqual(header_version, try loaderVersion());
    const v = Version.decode(header_version);
    try std.testing.expectEqual(@as(u32, c.SYMM_VERSION_MAJOR), v.major);
    try std.testing.expectEqual(@as(u32, c.SYMM_VERSION_MINOR), v.minor);
}

test "every declaration compiles" {
    std.testing.refAllDecls(@This());
    std.testing.refAllDecls(Context);
    std.testing.refAllDecls(Team);
    // u64 buffers have every method (signals are u64-only; float buffers
    // lack the integer-only ones at compile time).
    std.testing.refAllDecls(Buffer(u64));
}

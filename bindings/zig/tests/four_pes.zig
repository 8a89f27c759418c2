//! The multi-PE test: run under `symmrun -n 4` (any n >= 2 works). Every
//! PE checks ring put + barrier, sum reduce, put-with-signal + signal wait,
//! atomic fetch-add, broadcast, fcollect, alltoall, a split team,
//! alltoallv and its combine (with a dst too small on one PE) and an
//! error case against expected values, prints "PE i of n: all checks
//! passed" and exits 0; any mismatch prints what differed and exits 1.
const std = @import("std");
const symm = @import("symm");

fn expectEq(comptime T: type, what: []const u8, me: i32, want: T, got: T) !void {
    if (want != got) {
        std.debug.print("PE {d}: {s}: expected {any}, got {any}\n", .{ me, what, want, got });
        return error.WrongData;
    }
}

// ------------------------------------------------------------ alltoallv --

/// Elements world PE s sends to world PE r in the alltoallv checks: 0..4n,
/// zero for some pairs (for n = 4: 0 -> 3, 2 -> 0, 3 -> 1).
fn a2avCount(s: i32, r: i32) u64 {
    return @as(u64, @intCast(@mod(2 * s + 3 * r + 1, 5))) * @as(u64, @intCast(r + 1));
}

/// Element k of PE s's src.
fn a2avValue(s: i32, k: u64) i32 {
    return s * 10000 + @as(i32, @intCast(k));
}

const a2av_sentinel: i32 = -1;
const a2av_count_sentinel: i64 = -7;

/// The buffers of the alltoallv checks and the reference image of what a
/// forward exchange leaves on this PE, computed from `a2avCount` alone.
const A2av = struct {
    me: i32,
    n: i32,
    cap: u64,
    src: symm.Buffer(i32),
    dst: symm.Buffer(i32),
    back: symm.Buffer(i32),
    send: symm.Buffer(u64), // u64 send counts
    recv: symm.Buffer(i64), // i64 receive counts: the combine's send counts
    recv2: symm.Buffer(u64), // the combine's receive counts
    want_dst: []i32,
    want_recv: []u64, // counts, then offsets
    incoming: u64,
    outgoing: u64,

    // Indices: different from 0 and from each other, the same on every PE
    // (src_index and send_index must agree).
    const si: u64 = 2;
    const di: u64 = 1;
    const ci: u64 = 1;
    const ri: u64 = 2;

    fn init(ctx: symm.Context, alloc: std.mem.Allocator) !A2av {
        const me = ctx.myPe();
        const n = ctx.nPes();
        const un: u64 = @intCast(n);
        const cap = 4 * un * un + 8; // > di + what any PE receives, > si + what it sends
        var self = A2av{
            .me = me,
            .n = n,
            .cap = cap,
            .src = try ctx.alloc(i32, cap),
            .dst = try ctx.alloc(i32, cap),
            .back = try ctx.alloc(i32, cap),
            .send = try ctx.alloc(u64, un + 2),
            .recv = try ctx.alloc(i64, 2 * un + 4),
            .recv2 = try ctx.alloc(u64, 2 * un),
            .want_dst = try alloc.alloc(i32, @intCast(cap)),
            .want_recv = try alloc.alloc(u64, @intCast(2 * un)),
            .incoming = 0,
            .outgoing = 0,
        };
        // The reference: from each PE s in order, s's piece for me, which
        // starts in s's src after what s sends to the PEs before me.
        @memset(self.want_dst, a2av_sentinel);
        var s: i32 = 0;
        while (s < n) : (s += 1) {
            var off: u64 = 0;
            var q: i32 = 0;
            while (q < me) : (q += 1) off += a2avCount(s, q);
            const cnt = a2avCount(s, me);
            for (0..@intCast(cnt)) |k| self.want_dst[@intCast(di + self.incoming + k)] = a2avValue(s, si + off + k);
            self.want_recv[@intCast(s)] = cnt;
            self.want_recv[@intCast(n + s)] = self.incoming;
            self.incoming += cnt;
        }
        var r: i32 = 0;
        while (r < n) : (r += 1) self.outgoing += a2avCount(me, r);

        // src: this PE's pattern; send counts at ci with junk around them.
        for (try self.src.localSlice(), 0..) |*v, k| v.* = a2avValue(me, k);
        const send = try self.send.localSlice();
        @memset(send, 999_999);
        r = 0;
        while (r < n) : (r += 1) send[@intCast(ci + @as(u64, @intCast(r)))] = a2avCount(me, r);
        return self;
    }

    /// dst, back and the receive counts full of sentinels.
    fn reset(self: A2av) !void {
        @memset(try self.dst.localSlice(), a2av_sentinel);
        @memset(try self.back.localSlice(), a2av_sentinel);
        @memset(try self.recv.localSlice(), a2av_count_sentinel);
        @memset(try self.recv2.localSlice(), 0);
    }

    /// The forward exchange into dst[di..][0..dst_nelems].
    fn forward(self: A2av, world: symm.Team, dst_nelems: u64) symm.Error!void {
        return world.alltoallv(self.dst, di, dst_nelems, self.src, si, self.cap - si, self.send, ci, self.recv, ri);
    }

    /// dst is the reference image, or all sentinels when nothing may have
    /// been received.
    fn expectDst(self: A2av, what: []const u8, received: bool) !void {
        for (try self.dst.localSlice(), 0..) |g, k| {
            const want = if (received) self.want_dst[k] else a2av_sentinel;
            if (g != want) {
                std.debug.print("PE {d}: {s}[{d}]: expected {d}, got {d}\n", .{ self.me, what, k, want, g });
                return error.WrongData;
            }
        }
    }

    /// The forward's receive counts and offsets at ri, nothing written
    /// around them.
    fn expectRecv(self: A2av, what: []const u8) !void {
        const got = try self.recv.localSlice();
        for (got, 0..) |g, k| {
            const want: i64 = if (k >= ri and k < ri + self.want_recv.len) @intCast(self.want_recv[k - ri]) else a2av_count_sentinel;
            if (g != want) {
                std.debug.print("PE {d}: {s}: recv_counts[{d}]: expected {d}, got {d}\n", .{ self.me, what, k, want, g });
                return error.WrongData;
            }
        }
    }

    fn expectSrcKept(self: A2av) !void {
        for (try self.src.localSlice(), 0..) |v, k| try expectEq(i32, "alltoallv src kept", self.me, a2avValue(self.me, k), v);
    }

    fn free(self: *A2av, alloc: std.mem.Allocator) !void {
        try self.recv2.free();
        try self.recv.free();
        try self.send.free();
        try self.back.free();
        try self.dst.free();
        try self.src.free();
        alloc.free(self.want_recv);
        alloc.free(self.want_dst);
    }
};

/// alltoallv on the world: varied per-pair counts (some zero), counts in
/// symmetric memory at index offsets, checked element by element against
/// the reference; the combine (stream form, i64 counts as send counts)
/// brings every element back. Then dst too small on the last PE: it alone
/// gets error.OutOfBounds (dst untouched, receive counts written), the
/// others succeed, and the team works afterwards.
fn alltoallvChecks(ctx: symm.Context, world: symm.Team) !void {
    const alloc = std.heap.page_allocator;
    var a = try A2av.init(ctx, alloc);
    const me = a.me;
    const un: u64 = @intCast(a.n);
    try a.reset();

    try a.forward(world, a.cap - A2av.di);
    try a.expectDst("alltoallv dst", true);
    try a.expectRecv("alltoallv");
    try a.expectSrcKept();

    // Combine: the forward's receive counts (i64) as send counts, its dst
    // as src, into back at the forward's src index.
    try world.alltoallvOnStream(a.back, A2av.si, a.cap - A2av.si, a.dst, A2av.di, a.cap - A2av.di, a.recv, A2av.ri, a.recv2, 0, null);
    const back = try a.back.localSlice();
    for (back, 0..) |v, k| {
        const want = if (k >= A2av.si and k < A2av.si + a.outgoing) a2avValue(me, k) else a2av_sentinel;
        if (v != want) {
            std.debug.print("PE {d}: combine back[{d}]: expected {d}, got {d}\n", .{ me, k, want, v });
            return error.WrongData;
        }
    }
    const rc2 = try a.recv2.localSlice();
    var off: u64 = 0;
    for (0..@intCast(un)) |r| {
        const cnt = a2avCount(me, @intCast(r));
        try expectEq(u64, "combine recv count", me, cnt, rc2[r]);
        try expectEq(u64, "combine recv offset", me, off, rc2[@intCast(un + r)]);
        off += cnt;
    }

    // dst one element too small on the last PE.
    try a.reset();
    const small = me == a.n - 1;
    if (small and a.incoming == 0) return error.NothingToReceive; // a2avCount gives the last PE data
    if (a.forward(world, if (small) a.incoming - 1 else a.cap - A2av.di)) |_| {
        if (small) {
            std.debug.print("PE {d}: alltoallv into a dst too small succeeded\n", .{me});
            return error.NoError;
        }
    } else |err| {
        if (!small) {
            std.debug.print("PE {d}: alltoallv next to a PE with a small dst: {s}: {s}\n", .{ me, @errorName(err), symm.lastError() });
            return err;
        }
        try expectEq(symm.Error, "alltoallv small dst", me, error.OutOfBounds, err);
        if (std.mem.indexOf(u8, symm.lastError(), "dst_nelems") == null) {
            std.debug.print("PE {d}: the message does not name dst_nelems: {s}\n", .{ me, symm.lastError() });
            return error.WrongMessage;
        }
    }
    try a.expectDst(if (small) "dst of the PE without room" else "dst next to a PE without room", !small);
    try a.expectRecv(if (small) "small dst" else "next to a small dst");

    // The team still works: the same exchange in full everywhere.
    try a.reset();
    try a.forward(world, a.cap - A2av.di);
    try a.expectDst("alltoallv after a failure", true);
    try a.expectRecv("alltoallv after a failure");
    try a.free(alloc);
}

pub fn main() !void {
    var ctx = try symm.Context.init(.{ .backend = .host });
    const me = ctx.myPe();
    const n = ctx.nPes();
    const right = @mod(me + 1, n);
    const left = @mod(me + n - 1, n);
    if (n < 2) {
        std.debug.print("four_pes: needs at least 2 PEs (run it under symmrun -n 4), got {d}\n", .{n});
        return error.TooFewPes;
    }
    const world = try ctx.world();

    // Ring put + barrier.
    var ring = try ctx.alloc(i64, 2);
    try ring.put(0, &.{ 100 + @as(i64, me), -@as(i64, me) }, right);
    try ctx.barrierAll();
    var got: [2]i64 = undefined;
    try ring.get(0, &got, me);
    try expectEq(i64, "ring[0]", me, 100 + @as(i64, left), got[0]);
    try expectEq(i64, "ring[1]", me, -@as(i64, left), got[1]);

    // Sum reduce over the world.
    var sum = try ctx.alloc(i64, 2);
    try world.reduce(sum, 0, ring, 0, 2, .sum);
    const nn: i64 = n;
    try expectEq(i64, "reduce sum[0]", me, 100 * nn + @divExact(nn * (nn - 1), 2), try sum.g(0, me));
    try expectEq(i64, "reduce sum[1]", me, -@divExact(nn * (nn - 1), 2), try sum.g(1, me));

    // Put with signal to the right, wait for the left's.
    var data = try ctx.alloc(u32, 8);
    var sig = try ctx.alloc(u64, 1);
    var block: [8]u32 = undefined;
    for (&block, 0..) |*v, k| v.* = @as(u32, @intCast(me)) * 1000 + @as(u32, @intCast(k));
    try data.putSignal(0, &block, sig, 0, 1, .add, right);
    try expectEq(u64, "signal", me, 1, try sig.signalWaitUntil(0, .ge, 1));
    var recv: [8]u32 = undefined;
    try data.get(0, &recv, me);
    for (recv, 0..) |v, k| try expectEq(u32, "signalled data", me, @as(u32, @intCast(left)) * 1000 + @as(u32, @intCast(k)), v);

    // Atomic fetch-add on PE 0's counter: the fetched values are 0..n-1.
    var counter = try ctx.alloc(u64, 1);
    var fetched = try ctx.alloc(u64, 1);
    try ctx.barrierAll();
    const mine = try counter.fetchAdd(0, 1, 0);
    try fetched.p(0, mine, me);
    try ctx.barrierAll();
    try expectEq(u64, "counter", me, @intCast(n), try counter.g(0, 0));
    var all = try ctx.alloc(u64, @intCast(n));
    try world.fcollect(all, 0, fetched, 0, 1);
    const seen = try std.heap.page_allocator.alloc(bool, @intCast(n));
    @memset(seen, false);
    for (try all.localSlice()) |v| {
        if (v >= n or seen[@intCast(v)]) {
            std.debug.print("PE {d}: fetch-add values are not 0..{d}: {any}\n", .{ me, n - 1, try all.localSlice() });
            return error.WrongData;
        }
        seen[@intCast(v)] = true;
    }

    // Broadcast from the last PE, alltoall of PE numbers.
    var bsrc = try ctx.alloc(i32, 3);
    var bdst = try ctx.alloc(i32, 3);
    try bsrc.put(0, &.{ me, me * 2, me * 3 }, me);
    try world.broadcast(bdst, 0, bsrc, 0, 3, n - 1);
    var b3: [3]i32 = undefined;
    try bdst.get(0, &b3, me);
    for (b3, 1..) |v, k| try expectEq(i32, "broadcast", me, (n - 1) * @as(i32, @intCast(k)), v);
    var asrc = try ctx.alloc(i32, @intCast(n));
    var adst = try ctx.alloc(i32, @intCast(n));
    for (try asrc.localSlice(), 0..) |*v, j| v.* = me * 100 + @as(i32, @intCast(j));
    try world.alltoall(adst, 0, asrc, 0, 1);
    for (try adst.localSlice(), 0..) |v, j| try expectEq(i32, "alltoall", me, @as(i32, @intCast(j)) * 100 + me, v);

    // A split team of the even PEs sums their numbers.
    const evens = @divTrunc(n + 1, 2);
    if (try world.splitStrided(0, 2, evens, .{})) |team_val| {
        var team = team_val;
        try expectEq(i32, "team PE", me, @divExact(me, 2), team.myPe());
        try expectEq(?i32, "translate", me, me, team.translatePe(team.myPe(), world));
        var one = try ctx.alloc(i32, 1);
        var tsum = try ctx.alloc(i32, 1);
        try one.p(0, me, me);
        try team.reduce(tsum, 0, one, 0, 1, .sum);
        try expectEq(i32, "team sum", me, evens * (evens - 1), try tsum.g(0, me));
        try team.barrier();
        try team.destroy();
        // Buffers are collective over the context: the odd PEs allocate
        // and free the same two below.
        try tsum.free();
        try one.free();
    } else {
        if (@mod(me, 2) == 0) return error.WrongTeam;
        var one = try ctx.alloc(i32, 1);
        var tsum = try ctx.alloc(i32, 1);
        try tsum.free();
        try one.free();
    }

    try alltoallvChecks(ctx, world);

    // Errors: a PE outside the job, an index outside the buffer.
    if (ring.p(0, 1, n)) |_| return error.NoError else |err| try expectEq(symm.Error, "bad pe", me, error.InvalidArg, err);
    if (ring.put(1, &.{ 1, 2 }, right)) |_| return error.NoError else |err| try expectEq(symm.Error, "bad index", me, error.OutOfBounds, err);

    for ([_]*symm.Buffer(i32){ &adst, &asrc, &bdst, &bsrc }) |b| try b.free();
    for ([_]*symm.Buffer(u64){ &all, &fetched, &counter, &sig }) |b| try b.free();
    try data.free();
    try sum.free();
    try ring.free();
    std.debug.print("PE {d} of {d}: all checks passed\n", .{ me, n });
    try ctx.finalize();
}

//! The multi-PE test: run under `symmrun -n 4` (any n >= 2 works). Every
//! PE checks ring put + barrier, sum reduce, put-with-signal + signal wait,
//! atomic fetch-add, broadcast, fcollect, alltoall, a split team and an
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

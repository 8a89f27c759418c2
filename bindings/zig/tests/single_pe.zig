//! One PE on the host backend (SYMM_RUNTIME = the build's runtime,
//! SYMM_BACKEND=host; `zig build test -Dsymm-runtime=PATH` sets both):
//! every call family of the wrapper against expected data, and the error
//! mapping (bad index -> error.OutOfBounds with a readable message).
const std = @import("std");
const symm = @import("symm");
const testing = std.testing;

var ctx_storage: ?symm.Context = null;

/// One context for all tests of this file (symm_init once per process is
/// what programs do; finalize runs in the last test).
fn ctx() !symm.Context {
    if (ctx_storage == null) ctx_storage = try symm.Context.init(.{ .bootstrap = .single, .backend = .host });
    return ctx_storage.?;
}

test "context: query, teams, versions" {
    const cx = try ctx();
    try testing.expectEqual(@as(i32, 0), cx.myPe());
    try testing.expectEqual(@as(i32, 1), cx.nPes());
    const info = try cx.query();
    try testing.expectEqual(symm.Backend.host, info.backend);
    try testing.expectEqual(symm.ThreadLevel.multiple, info.thread_level);
    try testing.expectEqual(@as(i32, 1), info.n_pes);
    try testing.expectEqual(@as(i32, -1), info.device);
    try testing.expect(std.mem.endsWith(u8, symm.runtimePath(), "libsymm_runtime.so.1"));
    try testing.expectEqual(symm.Version.decode(symm.header_version).major, symm.Version.decode(try symm.runtimeVersion()).major);
    try symm.probe();
    try testing.expectError(error.InvalidState, symm.setRuntime(null));
    var msg: [128]u8 = undefined;
    try testing.expectEqual(@as(?symm.AsyncFailure, null), try cx.asyncError(true, &msg));
    try testing.expectError(error.NotSupported, cx.deviceCtx());

    const world = try cx.world();
    try testing.expectEqual(@as(i32, 1), world.nPes());
    const node = try cx.team(.node);
    try testing.expectEqual(@as(?i32, 0), world.translatePe(0, node));
    try testing.expectEqual(@as(?i32, null), world.translatePe(5, node));
    var w2 = world;
    try testing.expectError(error.InvalidArg, w2.destroy()); // predefined
    var split = (try world.splitStrided(0, 1, 1, .{ .num_contexts = 2 })).?;
    try testing.expectEqual(@as(i32, 1), split.nPes());
    try testing.expectEqual(@as(?i32, 2), (try split.config()).num_contexts);
    try split.barrier();
    try split.sync();
    try split.destroy();
    try testing.expectEqual(@as(i32, -1), split.myPe());
    const grid = try world.split2d(1, .{}, .{});
    var gx = grid.x.?;
    var gy = grid.y.?;
    try testing.expectEqual(@as(i32, 1), gx.nPes());
    try gy.destroy();
    try gx.destroy();
}

test "error mapping: bad index, bad PE, wrong lengths" {
    const cx = try ctx();
    var buf = try cx.alloc(i32, 4);
    defer buf.free() catch unreachable;
    try testing.expectError(error.OutOfBounds, buf.put(3, &.{ 1, 2 }, 0));
    const msg = symm.lastError();
    try testing.expect(msg.len > 0);
    try testing.expect(std.mem.indexOf(u8, msg, "symm_put") != null);
    try testing.expectError(error.OutOfBounds, buf.g(4, 0));
    try testing.expectError(error.InvalidArg, buf.p(0, 1, 1)); // PE 1 of 1
    try testing.expect(std.mem.indexOf(u8, symm.lastError(), "pe") != null);
    var idx: [1]u64 = undefined;
    try testing.expectError(error.InvalidArg, buf.testSome(0, 4, null, .eq, 0, &idx));
    try testing.expect(std.mem.indexOf(u8, symm.lastError(), "indices") != null);
    try testing.expectError(error.InvalidArg, buf.testAll(0, 4, &.{ 0, 0 }, .eq, 0));
    // A freed buffer is a stale handle.
    var gone = try cx.alloc(u8, 1);
    const stale = gone;
    try gone.free();
    try testing.expectError(error.InvalidHandle, stale.p(0, 1, 0));
    try testing.expectError(error.Mismatch, symm.check(symm.c.SYMM_ERR_MISMATCH));
}

test "rma: put/get/p/g, nbi, raw bytes, streams" {
    const cx = try ctx();
    var buf = try cx.alloc(f64, 8);
    defer buf.free() catch unreachable;
    try buf.put(2, &.{ 1.5, 2.5, 3.5 }, 0);
    var out: [3]f64 = undefined;
    try buf.get(2, &out, 0);
    try testing.expectEqualSlices(f64, &.{ 1.5, 2.5, 3.5 }, &out);
    try buf.p(7, -4.0, 0);
    try testing.expectEqual(@as(f64, -4.0), try buf.g(7, 0));
    try buf.putNbi(0, &.{ 9.0, 8.0 }, 0);
    var got: [2]f64 = undefined;
    try buf.getNbi(0, &got, 0);
    try cx.quiet();
    try testing.expectEqualSlices(f64, &.{ 9.0, 8.0 }, &got);
    try cx.fence();
    const local = try buf.localSlice();
    try testing.expectEqual(@as(f64, 2.5), local[3]);
    try testing.expectEqual(local.ptr, (try buf.peerPtr(0)).?);
    const q = try buf.query();
    try testing.expectEqual(symm.Dtype.float64, q.dtype);
    try testing.expectEqual(@as(u64, 8), q.count);

    // Raw bytes on symmetric addresses.
    const sym: *anyopaque = @ptrCast(local.ptr);
    const bytes = std.mem.toBytes(@as(f64, 42.0));
    try cx.putmem(sym, &bytes, 0);
    try testing.expectEqual(@as(f64, 42.0), try buf.g(0, 0));
    var back: [8]u8 = undefined;
    try cx.getmem(&back, sym, 0);
    try testing.expectEqualSlices(u8, &bytes, &back);
    try cx.putmemNbi(sym, &std.mem.toBytes(@as(f64, 43.0)), 0);
    try cx.getmemNbi(&back, sym, 0);
    try cx.quiet();
    try testing.expectEqual(@as(f64, 43.0), std.mem.bytesToValue(f64, &back));
    try testing.expectEqual(@as(?*anyopaque, sym), try cx.ptr(sym, 0));
    try cx.putmemOnStream(sym, &std.mem.toBytes(@as(f64, 44.0)), 0, null);
    try cx.getmemOnStream(&back, sym, 0, null);
    try testing.expectEqual(@as(f64, 44.0), std.mem.bytesToValue(f64, &back));

    // Stream forms complete before returning on the host backend.
    try buf.putOnStream(1, &.{5.0}, 0, null);
    try buf.putNbiOnStream(2, &.{6.0}, 0, null);
    try buf.pOnStream(3, 7.0, 0, null);
    var s3: [3]f64 = undefined;
    try buf.getOnStream(1, &s3, 0, null);
    try testing.expectEqualSlices(f64, &.{ 5.0, 6.0, 7.0 }, &s3);
    try buf.getNbiOnStream(1, s3[0..1], 0, null);
    try cx.quietOnStream(null);
    try cx.barrierAllOnStream(null);
    try testing.expectEqual(@as(f64, 5.0), s3[0]);
    try cx.barrierAll();
    try cx.syncAll();
}

test "signals, waits and tests" {
    const cx = try ctx();
    var data = try cx.alloc(i64, 4);
    defer data.free() catch unreachable;
    var sig = try cx.alloc(u64, 2);
    defer sig.free() catch unreachable;
    try data.putSignal(0, &.{ 10, 20 }, sig, 0, 1, .set, 0);
    try testing.expectEqual(@as(u64, 1), try sig.signalWaitUntil(0, .eq, 1));
    try data.putSignalNbi(2, &.{30}, sig, 0, 2, .add, 0);
    try cx.quiet();
    try testing.expectEqual(@as(u64, 3), try sig.signalFetch(0));
    try data.putSignalOnStream(3, &.{40}, sig, 1, 5, .set, 0, null);
    try sig.signalOp(1, 1, .add, 0);
    try sig.signalOpOnStream(1, 1, .add, 0, null);
    try sig.signalWaitUntilOnStream(1, .ge, 7, null);
    try testing.expectEqual(@as(u64, 7), try sig.signalFetch(1));
    var all: [4]i64 = undefined;
    try data.get(0, &all, 0);
    try testing.expectEqualSlices(i64, &.{ 10, 20, 30, 40 }, &all);

    // data = 10 20 30 40
    try data.waitUntil(1, .eq, 20);
    try data.waitUntilAll(0, 4, null, .ge, 10);
    try testing.expectEqual(@as(?u64, 2), try data.waitUntilAny(0, 4, &.{ 1, 1, 0, 0 }, .ge, 30));
    var idx: [4]u64 = undefined;
    try testing.expectEqualSlices(u64, &.{ 2, 3 }, try data.waitUntilSome(0, 4, null, .gt, 20, &idx));
    try data.waitUntilAllVector(0, null, .eq, &.{ 10, 20, 30, 40 });
    try testing.expectEqual(@as(?u64, 1), try data.waitUntilAnyVector(0, &.{ 1, 0, 0, 0 }, .eq, &.{ 0, 20, 0, 0 }));
    try testing.expectEqualSlices(u64, &.{ 0, 3 }, try data.waitUntilSomeVector(0, null, .eq, &.{ 10, 0, 0, 40 }, &idx));
    try testing.expect(try data.testCmp(0, .eq, 10));
    try testing.expect(!try data.testCmp(0, .ne, 10));
    try testing.expect(try data.testAll(0, 4, null, .lt, 41));
    try testing.expect(!try data.testAll(0, 4, null, .lt, 40));
    try testing.expectEqual(@as(?u64, null), try data.testAny(0, 4, null, .gt, 40));
    try testing.expectEqual(@as(?u64, 3), try data.testAny(0, 4, null, .ge, 40));
    try testing.expectEqualSlices(u64, &.{ 0, 1 }, try data.testSome(0, 4, null, .le, 20, &idx));
    try testing.expectEqual(@as(usize, 0), (try data.testSome(0, 4, null, .gt, 99, &idx)).len);
    try testing.expect(try data.testAllVector(0, null, .eq, &.{ 10, 20, 30, 40 }));
    try testing.expectEqual(@as(?u64, null), try data.testAnyVector(0, null, .eq, &.{ 0, 0, 0, 0 }));
    try testing.expectEqualSlices(u64, &.{2}, try data.testSomeVector(0, null, .eq, &.{ 0, 0, 30, 0 }, &idx));
}

test "atomics" {
    const cx = try ctx();
    var a = try cx.alloc(u32, 2);
    defer a.free() catch unreachable;
    try a.atomicSet(0, 5, 0);
    try testing.expectEqual(@as(u32, 5), try a.fetchAdd(0, 3, 0));
    try a.add(0, 2, 0);
    try testing.expectEqual(@as(u32, 10), try a.fetchInc(0, 0));
    try a.inc(0, 0);
    try testing.expectEqual(@as(u32, 12), try a.atomicFetch(0, 0));
    try testing.expectEqual(@as(u32, 12), try a.compareSwap(0, 12, 100, 0));
    try testing.expectEqual(@as(u32, 100), try a.compareSwap(0, 12, 7, 0)); // no match
    try testing.expectEqual(@as(u32, 100), try a.atomicSwap(0, 0xF0, 0));
    try testing.expectEqual(@as(u32, 0xF0), try a.fetchAnd(0, 0x3C, 0));
    try testing.expectEqual(@as(u32, 0x30), try a.fetchOr(0, 0x01, 0));
    try testing.expectEqual(@as(u32, 0x31), try a.fetchXor(0, 0x11, 0));
    try testing.expectEqual(@as(u32, 0x20), try a.atomic(0, .fetch, 0, 0, 0));
    var fetched: u32 = 0;
    try a.atomicNbi(1, .fetch_add, 9, 0, 0, &fetched);
    try cx.quiet();
    try testing.expectEqual(@as(u32, 0), fetched);
    try testing.expectEqual(@as(u32, 9), try a.g(1, 0));

    var f = try cx.alloc(f32, 1);
    defer f.free() catch unreachable;
    try f.atomicSet(0, 2.5, 0);
    try testing.expectEqual(@as(f32, 2.5), try f.atomicSwap(0, 1.0, 0));
    try testing.expectEqual(@as(f32, 1.0), try f.atomicFetch(0, 0));
    try testing.expectError(error.InvalidArg, f.atomic(0, .fetch_add, 1.0, 0, 0));
}

test "collectives on one PE" {
    const cx = try ctx();
    const world = try cx.world();
    var src = try cx.alloc(i32, 4);
    defer src.free() catch unreachable;
    var dst = try cx.alloc(i32, 4);
    defer dst.free() catch unreachable;
    try src.put(0, &.{ 1, 2, 3, 4 }, 0);
    var out: [4]i32 = undefined;

    try world.broadcast(dst, 0, src, 0, 4, 0);
    try dst.get(0, &out, 0);
    try testing.expectEqualSlices(i32, &.{ 1, 2, 3, 4 }, &out);
    try world.reduce(dst, 0, src, 1, 2, .max);
    try dst.get(0, out[0..2], 0);
    try testing.expectEqualSlices(i32, &.{ 2, 3 }, out[0..2]);
    try world.fcollect(dst, 1, src, 3, 1);
    try testing.expectEqual(@as(i32, 4), try dst.g(1, 0));
    try world.collect(dst, 2, src, 0, 1);
    try testing.expectEqual(@as(i32, 1), try dst.g(2, 0));
    try world.alltoall(dst, 0, src, 2, 1);
    try testing.expectEqual(@as(i32, 3), try dst.g(0, 0));
    try world.reducescatter(dst, 3, src, 1, 1, .sum);
    try testing.expectEqual(@as(i32, 2), try dst.g(3, 0));
    try world.broadcastOnStream(dst, 0, src, 3, 1, 0, null);
    try world.fcollectOnStream(dst, 1, src, 3, 1, null);
    try world.alltoallOnStream(dst, 2, src, 3, 1, null);
    try world.reduceOnStream(dst, 3, src, 3, 1, .prod, null);
    try dst.get(0, &out, 0);
    try testing.expectEqualSlices(i32, &.{ 4, 4, 4, 4 }, &out);
    try world.reducescatterOnStream(dst, 0, src, 0, 1, .min, null);
    try testing.expectEqual(@as(i32, 1), try dst.g(0, 0));
    try world.barrierOnStream(null);
    try world.syncOnStream(null);
    try testing.expectError(error.NotSupported, world.deviceTeam());
    try testing.expectError(error.OutOfBounds, world.broadcast(dst, 2, src, 0, 4, 0));
}

test "alltoallv on one PE: counts in symmetric memory, combine, errors" {
    const cx = try ctx();
    const world = try cx.world();
    var src = try cx.alloc(i16, 6);
    defer src.free() catch unreachable;
    var dst = try cx.alloc(i16, 6);
    defer dst.free() catch unreachable;
    var send = try cx.alloc(u64, 2);
    defer send.free() catch unreachable;
    var recv = try cx.alloc(i64, 3);
    defer recv.free() catch unreachable;
    try src.put(0, &.{ 10, 11, 12, 13, 14, 15 }, 0);
    try dst.put(0, &.{ -1, -1, -1, -1, -1, -1 }, 0);
    try send.put(0, &.{ 7, 3 }, 0); // 3 elements to PE 0, from send_index 1
    try recv.put(0, &.{ -7, -7, -7 }, 0);
    var out: [6]i16 = undefined;
    var rc: [3]i64 = undefined;

    // src[2..5] into dst[1..4]; recv_counts at 1: count 3, offset 0.
    try world.alltoallv(dst, 1, 5, src, 2, 4, send, 1, recv, 1);
    try dst.get(0, &out, 0);
    try testing.expectEqualSlices(i16, &.{ -1, 12, 13, 14, -1, -1 }, &out);
    try recv.get(0, &rc, 0);
    try testing.expectEqualSlices(i64, &.{ -7, 3, 0 }, &rc);

    // Combine on the stream form: back into src[0..3] from dst[1..4].
    try src.put(0, &.{ 0, 0, 0, 0, 0, 0 }, 0);
    var rc2 = try cx.alloc(u64, 2);
    defer rc2.free() catch unreachable;
    try world.alltoallvOnStream(src, 0, 6, dst, 1, 3, recv, 1, rc2, 0, null);
    try src.get(0, &out, 0);
    try testing.expectEqualSlices(i16, &.{ 12, 13, 14, 0, 0, 0 }, &out);
    try testing.expectEqual(@as(u64, 3), try rc2.g(0, 0));
    try testing.expectEqual(@as(u64, 0), try rc2.g(1, 0));

    // dst too small: nothing received, the counts still written.
    try dst.put(0, &.{ -1, -1, -1, -1, -1, -1 }, 0);
    try recv.put(0, &.{ -7, -7, -7 }, 0);
    try testing.expectError(error.OutOfBounds, world.alltoallv(dst, 0, 2, src, 0, 6, send, 1, recv, 1));
    try testing.expect(std.mem.indexOf(u8, symm.lastError(), "dst_nelems") != null);
    try dst.get(0, &out, 0);
    try testing.expectEqualSlices(i16, &.{ -1, -1, -1, -1, -1, -1 }, &out);
    try recv.get(0, &rc, 0);
    try testing.expectEqualSlices(i64, &.{ -7, 3, 0 }, &rc);
    // Send counts beyond src_nelems; receive counts that do not fit.
    try testing.expectError(error.OutOfBounds, world.alltoallv(dst, 0, 6, src, 0, 2, send, 1, recv, 1));
    try testing.expectError(error.OutOfBounds, world.alltoallvOnStream(dst, 0, 6, src, 0, 6, send, 1, recv, 2, null));
}

test "typed buffers: f16 and bfloat16; register is CUDA-only" {
    const cx = try ctx();
    var h = try cx.alloc(f16, 2);
    defer h.free() catch unreachable;
    try h.put(0, &.{ 0.5, -2.0 }, 0);
    try testing.expectEqual(@as(f16, -2.0), try h.g(1, 0));
    var bf = try cx.alloc(symm.BF16, 1);
    defer bf.free() catch unreachable;
    try bf.p(0, symm.BF16.fromF32(3.0), 0);
    try testing.expectEqual(@as(f32, 3.0), (try bf.g(0, 0)).toF32());
    var mem: [4]u64 = undefined;
    try testing.expectError(error.NotSupported, cx.register(u64, &mem));
}

test "thread level: funneled is enforced, several contexts" {
    var cx2 = try symm.Context.init(.{ .bootstrap = .single, .backend = .host, .thread_level = .funneled });
    try testing.expectEqual(symm.ThreadLevel.funneled, (try cx2.query()).thread_level);
    const Worker = struct {
        fn run(cx: symm.Context, result: *?symm.Error, has_msg: *bool) void {
            result.* = null;
            cx.quiet() catch |e| {
                result.* = e;
                has_msg.* = symm.lastError().len > 0;
            };
        }
    };
    var result: ?symm.Error = null;
    var has_msg = false;
    const t = try std.Thread.spawn(.{}, Worker.run, .{ cx2, &result, &has_msg });
    t.join();
    try testing.expectEqual(@as(?symm.Error, error.ThreadLevel), result);
    try testing.expect(has_msg);
    try cx2.quiet(); // the initialising thread may
    try cx2.finalize();
}

test "zz finalize" {
    var cx = try ctx();
    try cx.finalize();
    try testing.expectEqual(@as(?*symm.c.struct_symm_ctx_s, null), cx.handle);
    try testing.expectEqual(@as(i32, -1), cx.myPe());
}

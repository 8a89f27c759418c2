//! A PE that leaves the job: run under `symmrun -n 2`. PE 1 exits without
//! finalize right after a barrier; PE 0 waits for a signal that never comes
//! and must get error.PeerFailed with a message (never a hang), and
//! finalize must release everything and report error.PeerFailed too.
const std = @import("std");
const symm = @import("symm");

pub fn main() !void {
    var ctx = try symm.Context.init(.{ .backend = .host, .timeout_ms = 20_000 });
    if (ctx.nPes() != 2) {
        std.debug.print("peer_failure: run it under symmrun -n 2\n", .{});
        return error.WrongJob;
    }
    var sig = try ctx.alloc(u64, 1);
    _ = &sig;
    try ctx.barrierAll();
    if (ctx.myPe() == 1) std.process.exit(0); // leaves: no finalize, no signal

    const waited = sig.signalWaitUntil(0, .eq, 1);
    if (waited) |_| return error.NoError else |err| if (err != error.PeerFailed) {
        std.debug.print("PE 0: expected error.PeerFailed, got {s}: {s}\n", .{ @errorName(err), symm.lastError() });
        return err;
    }
    const msg = symm.lastError();
    if (msg.len == 0) return error.NoMessage;
    std.debug.print("PE 0: error.PeerFailed as expected ({s})\n", .{msg});
    if (ctx.finalize()) |_| return error.NoError else |err| if (err != error.PeerFailed) {
        std.debug.print("PE 0: finalize: expected error.PeerFailed, got {s}\n", .{@errorName(err)});
        return err;
    }
    std.debug.print("PE 0: finalize reports error.PeerFailed as expected\n", .{});
}

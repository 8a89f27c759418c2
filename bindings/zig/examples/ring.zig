//! Ring: every PE sends its number to its right neighbour, then all sum
//! them. Runs on any number of PEs (`symmrun -n 4 zig-out/bin/ring`); where
//! no symm runtime can be found it says so and runs single-process.
const std = @import("std");
const symm = @import("symm");

pub fn main() !void {
    var buf: [1024]u8 = undefined;
    var stdout = std.fs.File.stdout().writerStreaming(&buf);
    const out = &stdout.interface;
    defer out.flush() catch {};

    var ctx = symm.Context.init(.{}) catch |err| switch (err) {
        error.LibraryNotFound => {
            try out.print("symm is not available here ({s}): {s}\n", .{ symm.errorName(err), symm.lastError() });
            // The same computation on one process: the ring holds our own 0.
            const values = [_]i64{0};
            var sum: i64 = 0;
            for (values) |v| sum += v;
            try out.print("running single-process: sum = {d} (ok)\n", .{sum});
            return;
        },
        else => return err,
    };
    const me = ctx.myPe();
    const n = ctx.nPes();

    var ring = try ctx.alloc(i64, 1); // collective: same type and count everywhere
    try ring.put(0, &.{me}, @mod(me + 1, n)); // into the right neighbour's copy
    try ctx.barrierAll(); // puts complete and visible everywhere
    const left = try ring.g(0, me);
    if (left != @mod(me + n - 1, n)) {
        std.debug.print("PE {d}: got {d} from the left, expected {d}\n", .{ me, left, @mod(me + n - 1, n) });
        return error.WrongData;
    }

    var sum = try ctx.alloc(i64, 1);
    try (try ctx.world()).reduce(sum, 0, ring, 0, 1, .sum);
    const total = try sum.g(0, me);
    const want = @divExact(@as(i64, n) * (n - 1), 2);
    try out.print("PE {d} of {d} ({s}): ring ok, sum {d} ({s})\n", .{ me, n, symm.runtimePath(), total, if (total == want) "ok" else "WRONG" });

    try sum.free(); // collective
    try ring.free(); // collective
    try ctx.finalize(); // collective
    if (total != want) return error.WrongData;
}

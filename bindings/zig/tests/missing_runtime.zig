//! Without a runtime (run with SYMM_RUNTIME=/nonexistent/...): the program
//! starts, calls that need the runtime give error.LibraryNotFound with a
//! message naming what was tried, and what the loader answers itself
//! (default init attributes, dtype sizes, status names, versions) works.
const std = @import("std");
const symm = @import("symm");
const testing = std.testing;

test "init gives error.LibraryNotFound with the paths tried" {
    try testing.expectError(error.LibraryNotFound, symm.Context.init(.{}));
    const msg = symm.lastError();
    try testing.expect(std.mem.indexOf(u8, msg, "/nonexistent/libsymm_runtime.so.1") != null);
    try testing.expect(std.mem.indexOf(u8, msg, "SYMM_RUNTIME") != null);
    try testing.expectError(error.LibraryNotFound, symm.probe());
    try testing.expectError(error.LibraryNotFound, symm.runtimeVersion());
    try testing.expectError(error.LibraryNotFound, symm.uniqueId());
    try testing.expectEqualStrings("", symm.runtimePath());
    // The search already ran: the path can no longer be chosen.
    try testing.expectError(error.InvalidState, symm.setRuntime("/elsewhere/libsymm_runtime.so.1"));
    try testing.expect(std.mem.indexOf(u8, symm.lastError(), "already") != null);
}

test "a handle from nowhere gets the load's error, not a crash" {
    const ctx = symm.Context{ .handle = null };
    try testing.expectError(error.LibraryNotFound, ctx.barrierAll());
    try testing.expectEqual(@as(i32, -1), ctx.myPe());
}

test "the loader answers the pure-data entries" {
    const attr = try symm.initAttr(.{});
    try testing.expectEqual(@as(u32, @sizeOf(symm.c.symm_init_attr)), attr.struct_size);
    try testing.expectEqual(@as(u32, @intFromEnum(symm.ThreadLevel.multiple)), attr.thread_level);
    try testing.expectEqual(@as(u32, @intFromEnum(symm.Backend.auto)), attr.backend);
    try testing.expectEqual(@as(i32, -1), attr.device);
    const uid = try symm.initAttr(.{ .thread_level = .funneled, .heap_cap = 1 << 20, .uid = .{ .id = std.mem.zeroes(symm.UniqueId), .rank = 1, .n_pes = 2 } });
    try testing.expectEqual(@as(u32, @intFromEnum(symm.Bootstrap.uid)), uid.bootstrap);
    try testing.expectEqual(@as(u32, @intFromEnum(symm.ThreadLevel.funneled)), uid.thread_level);
    try testing.expectEqual(@as(u64, 1 << 20), uid.heap_cap);
    try testing.expectEqual(@as(i32, 2), uid.n_pes);
    try testing.expectEqual(@as(u32, 8), symm.dtypeSize(.float64));
    try testing.expectEqual(@as(u32, 2), symm.dtypeSize(.bfloat16));
    try testing.expectEqualStrings("SYMM_ERR_LIBRARY_NOT_FOUND", symm.errorName(error.LibraryNotFound));
    try testing.expectEqual(symm.header_version, try symm.loaderVersion());
}

//! The Zig binding against abi/symm-abi.json (the machine-readable ABI that
//! abi/gen_abi_json.py makes from include/symm/symm.h).
//!
//!   symm-abi_check ABI_JSON WRAPPER_SOURCE
//!
//! Fails (exit 1, one line per problem) when the JSON and the binding
//! disagree:
//! - the package version (build.zig.zon) has the JSON's major.minor;
//! - every function of the JSON is declared by translate-c with the same
//!   return and parameter types, and every symm_* function translate-c
//!   declares is in the JSON;
//! - every function is called by the wrapper (WRAPPER_SOURCE, src/symm.zig)
//!   or listed in `symm.not_wrapped` with a reason, not both;
//! - every constant has the same value in translate-c's view, and every
//!   SYMM_* constant there is in the JSON;
//! - every status (but success) is a member of `symm.Error` named after it
//!   (SYMM_ERR_OUT_OF_BOUNDS: OutOfBounds) mapping to its code, and no
//!   other status is mapped;
//! - every constant group is a Zig enum of the wrapper with one member per
//!   constant (SYMM_CMP_GE: `symm.Cmp.ge`), or a group of plain constants;
//! - typedefs, and every struct's size, alignment, field order, names,
//!   types, offsets and sizes as translate-c lays them out.
const std = @import("std");
const symm = @import("symm");
const c = symm.c;

// ----------------------------------------------- translate-c's view --

/// Macros translate-c cannot turn into values: never compared.
const untranslated = [_]struct { name: []const u8, reason: []const u8 }{
    .{ .name = "SYMM_API", .reason = "the visibility attribute of the prototypes, not a value" },
    .{ .name = "SYMM_INIT_ATTR_INIT", .reason = "C convenience over symm_init_attr_init (symm.initAttr uses the function)" },
    .{ .name = "SYMM_TEAM_CONFIG_INIT", .reason = "C convenience over symm_team_config_init (symm.TeamConfig uses the function)" },
};

/// Constant groups of the JSON that are plain constants, not a wrapper enum.
const plain_groups = [_][]const u8{ "version", "status", "unique_id", "async", "index", "device" };

/// Constant groups that are enums of the wrapper: group, C prefix, enum.
const enum_groups = .{
    .{ "backend", "SYMM_BACKEND_", symm.Backend },
    .{ "bootstrap", "SYMM_BOOTSTRAP_", symm.Bootstrap },
    .{ "thread", "SYMM_THREAD_", symm.ThreadLevel },
    .{ "dtype", "SYMM_DTYPE_", symm.Dtype },
    .{ "cmp", "SYMM_CMP_", symm.Cmp },
    .{ "signal", "SYMM_SIGNAL_", symm.SignalOp },
    .{ "amo", "SYMM_AMO_", symm.AmoOp },
    .{ "op", "SYMM_OP_", symm.ReduceOp },
    .{ "team", "SYMM_TEAM_", symm.PredefinedTeam },
};

fn baseName(comptime T: type) []const u8 {
    const full = @typeName(T);
    const dot = std.mem.lastIndexOfScalar(u8, full, '.') orelse return full;
    return full[dot + 1 ..];
}

fn stripPrefix(s: []const u8, prefix: []const u8) []const u8 {
    return if (std.mem.startsWith(u8, s, prefix)) s[prefix.len..] else s;
}

/// The handle typedef of an opaque struct: struct_symm_buf_s -> symm_buf.
fn handleName(comptime T: type) []const u8 {
    const s = stripPrefix(baseName(T), "struct_");
    return if (std.mem.endsWith(u8, s, "_s")) s[0 .. s.len - 2] else s;
}

/// The C spelling of a translated type, in the JSON's style ("const void *",
/// "symm_buf *", "void *const *"); char is uint8_t here (translate-c's u8).
fn cName(comptime T: type) []const u8 {
    return switch (@typeInfo(T)) {
        .int => |i| (if (i.signedness == .signed) "int" else "uint") ++ std.fmt.comptimePrint("{d}", .{i.bits}) ++ "_t",
        .void => "void",
        .@"opaque" => if (T == anyopaque) "void" else handleName(T),
        .@"struct" => stripPrefix(baseName(T), "struct_"),
        .optional => |o| cName(o.child),
        .pointer => |p| blk: {
            if (@typeInfo(p.child) == .@"opaque" and p.child != anyopaque) break :blk handleName(p.child);
            const inner = cName(p.child);
            if (std.mem.endsWith(u8, inner, "*")) break :blk inner ++ (if (p.is_const) "const *" else "*");
            break :blk (if (p.is_const) "const " else "") ++ inner ++ " *";
        },
        else => @compileError("abi_check: no C spelling for " ++ @typeName(T)),
    };
}

const FnDesc = struct { name: []const u8, ret: []const u8, params: []const []const u8 };
const ConstDesc = struct { name: []const u8, value: i128 };
const TypedefDesc = struct { name: []const u8, ctype: []const u8 };
const FieldDesc = struct { name: []const u8, ctype: []const u8, count: u64, offset: u64, size: u64 };
const StructDesc = struct { name: []const u8, size: u64, alignment: u64, fields: []const FieldDesc };

fn isUntranslated(comptime name: []const u8) bool {
    for (untranslated) |u| if (std.mem.eql(u8, u.name, name)) return true;
    return false;
}

const View = struct {
    fns: []const FnDesc,
    consts: []const ConstDesc,
    typedefs: []const TypedefDesc,
    structs: []const StructDesc,
};

const view: View = blk: {
    @setEvalBranchQuota(2_000_000);
    var fns: []const FnDesc = &.{};
    var consts: []const ConstDesc = &.{};
    var typedefs: []const TypedefDesc = &.{};
    var structs: []const StructDesc = &.{};
    for (@typeInfo(c).@"struct".decls) |d| {
        if (std.mem.startsWith(u8, d.name, "SYMM_")) {
            if (isUntranslated(d.name)) continue;
            const V = @TypeOf(@field(c, d.name));
            switch (@typeInfo(V)) {
                .int, .comptime_int => consts = consts ++ [_]ConstDesc{.{ .name = d.name, .value = @field(c, d.name) }},
                else => {}, // the include guard, function-like macros
            }
            continue;
        }
        if (!std.mem.startsWith(u8, d.name, "symm_")) continue;
        // Only the type of a function is taken (@TypeOf does not reference
        // the symbol): the check never needs the loader to link an entry.
        const VT = @TypeOf(@field(c, d.name));
        if (VT == type) {
            const V = @field(c, d.name);
            switch (@typeInfo(V)) {
                .@"struct" => |s| {
                    var fields: []const FieldDesc = &.{};
                    for (s.fields) |f| {
                        const is_array = @typeInfo(f.type) == .array;
                        const elem = if (is_array) @typeInfo(f.type).array.child else f.type;
                        fields = fields ++ [_]FieldDesc{.{
                            .name = f.name,
                            .ctype = cName(elem),
                            .count = if (is_array) @typeInfo(f.type).array.len else 0,
                            .offset = @offsetOf(V, f.name),
                            .size = @sizeOf(f.type),
                        }};
                    }
                    structs = structs ++ [_]StructDesc{.{ .name = d.name, .size = @sizeOf(V), .alignment = @alignOf(V), .fields = fields }};
                },
                .int, .optional, .pointer => typedefs = typedefs ++ [_]TypedefDesc{.{ .name = d.name, .ctype = cName(V) }},
                else => {}, // symm_ctx_s & co.: the opaque targets of the handles
            }
            continue;
        }
        switch (@typeInfo(VT)) {
            .@"fn" => |f| {
                var params: []const []const u8 = &.{};
                for (f.params) |p| params = params ++ [_][]const u8{cName(p.type.?)};
                fns = fns ++ [_]FnDesc{.{ .name = d.name, .ret = cName(f.return_type.?), .params = params }};
            },
            else => {},
        }
    }
    const f = fns[0..fns.len].*;
    const k = consts[0..consts.len].*;
    const t = typedefs[0..typedefs.len].*;
    const s = structs[0..structs.len].*;
    break :blk .{ .fns = &f, .consts = &k, .typedefs = &t, .structs = &s };
};

// ------------------------------------------------------------- JSON --

const Json = std.json.Value;

fn get(v: Json, key: []const u8) Json {
    return switch (v) {
        .object => |o| o.get(key) orelse .null,
        else => .null,
    };
}

fn str(v: Json, key: []const u8) []const u8 {
    return switch (get(v, key)) {
        .string => |s| s,
        else => "",
    };
}

fn int(v: Json, key: []const u8) ?i128 {
    return switch (get(v, key)) {
        .integer => |i| i,
        .number_string => |s| std.fmt.parseInt(i128, s, 10) catch null,
        else => null,
    };
}

fn arr(v: Json, key: []const u8) []const Json {
    return switch (get(v, key)) {
        .array => |a| a.items,
        else => &.{},
    };
}

// ---------------------------------------------------------- compare --

var problems: usize = 0;

fn bad(comptime fmt: []const u8, args: anytype) void {
    problems += 1;
    std.debug.print("abi: " ++ fmt ++ "\n", args);
}

/// A JSON C type as translate-c spells it: typedefs of plain types resolved
/// (symm_status: int32_t, symm_stream_t: void *), char as uint8_t.
fn normalize(alloc: std.mem.Allocator, abi: Json, ctype: []const u8) ![]const u8 {
    var out: std.ArrayList(u8) = .empty;
    var it = std.mem.tokenizeScalar(u8, ctype, ' ');
    var first = true;
    while (it.next()) |tok| {
        var word: []const u8 = tok;
        if (std.mem.eql(u8, tok, "char")) word = "uint8_t";
        for (arr(abi, "typedefs")) |t| {
            if (!std.mem.eql(u8, str(t, "kind"), "handle") and std.mem.eql(u8, str(t, "name"), tok))
                word = str(t, "c_type");
        }
        if (!first) try out.append(alloc, ' ');
        try out.appendSlice(alloc, word);
        first = false;
    }
    return out.items;
}

fn camel(alloc: std.mem.Allocator, upper_snake: []const u8) ![]const u8 {
    var out: std.ArrayList(u8) = .empty;
    var it = std.mem.tokenizeScalar(u8, upper_snake, '_');
    while (it.next()) |w| {
        try out.append(alloc, w[0]);
        for (w[1..]) |ch| try out.append(alloc, std.ascii.toLower(ch));
    }
    return out.items;
}

fn findFn(name: []const u8) ?FnDesc {
    for (view.fns) |f| if (std.mem.eql(u8, f.name, name)) return f;
    return null;
}

fn inJson(abi: Json, key: []const u8, name: []const u8) bool {
    for (arr(abi, key)) |e| if (std.mem.eql(u8, str(e, "name"), name)) return true;
    return false;
}

fn checkFunctions(alloc: std.mem.Allocator, abi: Json, wrapper: []const u8) !void {
    // The C functions the wrapper calls: "c.symm_xxx(".
    var called = std.StringHashMap(void).init(alloc);
    var i: usize = 0;
    while (std.mem.indexOfPos(u8, wrapper, i, "c.symm_")) |at| {
        var end = at + 2;
        while (end < wrapper.len and (std.ascii.isAlphanumeric(wrapper[end]) or wrapper[end] == '_')) end += 1;
        if (end < wrapper.len and wrapper[end] == '(' and (at == 0 or !std.ascii.isAlphanumeric(wrapper[at - 1])))
            try called.put(wrapper[at + 2 .. end], {});
        i = end;
    }

    for (arr(abi, "functions")) |f| {
        const name = str(f, "name");
        const listed = for (symm.not_wrapped) |n| {
            if (std.mem.eql(u8, n.name, name)) break true;
        } else false;
        if (called.contains(name) and listed)
            bad("function {s} is wrapped and also listed in symm.not_wrapped", .{name});
        if (!called.contains(name) and !listed)
            bad("function {s} is neither wrapped (src/symm.zig) nor listed in symm.not_wrapped", .{name});

        const have = findFn(name) orelse {
            bad("function {s} is not declared by translate-c", .{name});
            continue;
        };
        const ret = try normalize(alloc, abi, str(f, "returns"));
        if (!std.mem.eql(u8, ret, have.ret))
            bad("function {s}: returns {s} in translate-c, {s} in the ABI", .{ name, have.ret, ret });
        const params = arr(f, "params");
        if (params.len != have.params.len) {
            bad("function {s}: {d} parameters in translate-c, {d} in the ABI", .{ name, have.params.len, params.len });
            continue;
        }
        for (params, have.params, 0..) |p, hp, k| {
            const want = try normalize(alloc, abi, str(p, "c_type"));
            if (!std.mem.eql(u8, want, hp))
                bad("function {s}: parameter {d} ({s}) is {s} in translate-c, {s} in the ABI", .{ name, k, str(p, "name"), hp, want });
        }
    }
    for (view.fns) |f| {
        if (!inJson(abi, "functions", f.name)) bad("function {s} is declared by translate-c but not in the ABI", .{f.name});
    }
    var it = called.keyIterator();
    while (it.next()) |name| {
        if (!inJson(abi, "functions", name.*)) bad("the wrapper calls {s}, which is not in the ABI", .{name.*});
    }
    for (symm.not_wrapped) |n| {
        if (!inJson(abi, "functions", n.name)) bad("symm.not_wrapped lists {s}, which is not in the ABI", .{n.name});
        if (n.reason.len == 0) bad("symm.not_wrapped lists {s} without a reason", .{n.name});
    }
}

/// The package version (build.zig.zon, `symm.package_version`) names the
/// ABI it wraps: the same major.minor as the JSON (the patch is the
/// binding's own).
fn checkPackageVersion(abi: Json) void {
    const v = get(abi, "version");
    const pv = std.SemanticVersion.parse(symm.package_version) catch {
        bad("the package version \"{s}\" (build.zig.zon) is not a semantic version", .{symm.package_version});
        return;
    };
    if (int(v, "major") != pv.major or int(v, "minor") != pv.minor)
        bad("the package version is {s} (build.zig.zon), the ABI {?d}.{?d}", .{ symm.package_version, int(v, "major"), int(v, "minor") });
}

fn checkConstants(alloc: std.mem.Allocator, abi: Json) !void {
    for (arr(abi, "constants")) |k| {
        const name = str(k, "name");
        const want = int(k, "value") orelse {
            bad("constant {s}: the ABI gives no integer value", .{name});
            continue;
        };
        // Its group: a wrapper enum, or plain.
        const group = str(k, "group");
        var known = false;
        for (plain_groups) |pg| {
            if (std.mem.eql(u8, pg, group)) known = true;
        }
        inline for (enum_groups) |eg| {
            if (std.mem.eql(u8, eg[0], group)) {
                known = true;
                if (!std.mem.endsWith(u8, name, "_COUNT")) try checkEnumMember(alloc, eg[2], eg[1], name, want);
            }
        }
        if (!known) bad("constant {s}: its group \"{s}\" is neither a wrapper enum nor a plain group", .{ name, group });
        const have = for (view.consts) |h| {
            if (std.mem.eql(u8, h.name, name)) break h.value;
        } else null;
        if (have == null) {
            bad("constant {s} = {d} is not declared by translate-c", .{ name, want });
        } else if (have.? != want) {
            bad("constant {s} is {d} in translate-c, {d} in the ABI", .{ name, have.?, want });
        }
    }
    for (view.consts) |h| {
        if (!inJson(abi, "constants", h.name)) bad("constant {s} is declared by translate-c but not in the ABI", .{h.name});
    }
    // Every member of a wrapper enum stands for a constant of the ABI.
    inline for (enum_groups) |eg| {
        inline for (@typeInfo(eg[2]).@"enum".fields) |f| {
            var upper: [64]u8 = undefined;
            const cname = try std.fmt.bufPrint(&upper, "{s}{s}", .{ eg[1], f.name });
            for (cname[eg[1].len..]) |*ch| ch.* = std.ascii.toUpper(ch.*);
            if (!inJson(abi, "constants", cname))
                bad("{s}.{s} stands for {s}, which is not in the ABI", .{ @typeName(eg[2]), f.name, cname });
        }
    }
}

fn checkEnumMember(alloc: std.mem.Allocator, comptime E: type, comptime prefix: []const u8, name: []const u8, value: i128) !void {
    if (!std.mem.startsWith(u8, name, prefix)) {
        bad("constant {s} does not start with {s}", .{ name, prefix });
        return;
    }
    const member = try std.ascii.allocLowerString(alloc, name[prefix.len..]);
    inline for (@typeInfo(E).@"enum".fields) |f| {
        if (std.mem.eql(u8, f.name, member)) {
            if (f.value != value) bad("{s}.{s} is {d}, {s} is {d}", .{ @typeName(E), f.name, f.value, name, value });
            return;
        }
    }
    bad("constant {s} has no member {s} in {s}", .{ name, member, @typeName(E) });
}

fn checkStatuses(alloc: std.mem.Allocator, abi: Json) !void {
    var failures: usize = 0;
    for (arr(abi, "statuses")) |s| {
        const name = str(s, "name");
        const code = int(s, "value") orelse -1;
        if (std.mem.eql(u8, name, "SYMM_SUCCESS")) {
            if (code != 0) bad("SYMM_SUCCESS is {d} in the ABI", .{code});
            continue;
        }
        failures += 1;
        const want = try camel(alloc, stripPrefix(name, "SYMM_ERR_"));
        const entry = for (symm.status_errors) |e| {
            if (e.code == code) break e;
        } else {
            bad("status {s} ({d}) is not mapped by symm.status_errors (wanted error.{s})", .{ name, code, want });
            continue;
        };
        if (!std.mem.eql(u8, @errorName(entry.err), want))
            bad("status {s} ({d}) maps to error.{s}, expected error.{s}", .{ name, code, @errorName(entry.err), want });
        if (!std.mem.eql(u8, symm.statusString(@intCast(code)), name))
            bad("status {d}: the loader names it {s}, the ABI {s}", .{ code, symm.statusString(@intCast(code)), name });
    }
    if (failures != symm.status_errors.len)
        bad("the ABI has {d} failure statuses, symm.status_errors maps {d}", .{ failures, symm.status_errors.len });
}

fn checkTypes(alloc: std.mem.Allocator, abi: Json) !void {
    for (arr(abi, "typedefs")) |t| {
        const name = str(t, "name");
        const want = if (std.mem.eql(u8, str(t, "kind"), "handle")) name else try normalize(alloc, abi, str(t, "c_type"));
        const have = for (view.typedefs) |h| {
            if (std.mem.eql(u8, h.name, name)) break h.ctype;
        } else {
            bad("typedef {s} is not declared by translate-c", .{name});
            continue;
        };
        if (!std.mem.eql(u8, have, want)) bad("typedef {s} is {s} in translate-c, {s} in the ABI", .{ name, have, want });
    }
    for (view.typedefs) |h| {
        if (!inJson(abi, "typedefs", h.name)) bad("typedef {s} is declared by translate-c but not in the ABI", .{h.name});
    }

    for (arr(abi, "structs")) |s| {
        const name = str(s, "name");
        const have = for (view.structs) |h| {
            if (std.mem.eql(u8, h.name, name)) break h;
        } else {
            bad("struct {s} is not declared by translate-c", .{name});
            continue;
        };
        if (int(s, "size") != have.size) bad("struct {s}: size {d} in translate-c, {?d} in the ABI", .{ name, have.size, int(s, "size") });
        if (int(s, "align") != have.alignment) bad("struct {s}: alignment {d} in translate-c, {?d} in the ABI", .{ name, have.alignment, int(s, "align") });
        const fields = arr(s, "fields");
        if (fields.len != have.fields.len) bad("struct {s}: {d} fields in translate-c, {d} in the ABI", .{ name, have.fields.len, fields.len });
        for (fields, 0..) |f, k| {
            const fname = str(f, "name");
            if (k >= have.fields.len) break;
            const h = have.fields[k];
            if (!std.mem.eql(u8, h.name, fname)) {
                bad("struct {s}: field {d} is {s} in translate-c, {s} in the ABI", .{ name, k, h.name, fname });
                continue;
            }
            const want = try normalize(alloc, abi, str(f, "c_type"));
            if (!std.mem.eql(u8, h.ctype, want)) bad("struct {s}.{s}: type {s} in translate-c, {s} in the ABI", .{ name, fname, h.ctype, want });
            if (int(f, "offset") != h.offset) bad("struct {s}.{s}: offset {d} in translate-c, {?d} in the ABI", .{ name, fname, h.offset, int(f, "offset") });
            if (int(f, "size") != h.size) bad("struct {s}.{s}: size {d} in translate-c, {?d} in the ABI", .{ name, fname, h.size, int(f, "size") });
            if ((int(f, "count") orelse 0) != h.count) bad("struct {s}.{s}: {d} elements in translate-c, {?d} in the ABI", .{ name, fname, h.count, int(f, "count") });
        }
    }
    for (view.structs) |h| {
        if (!inJson(abi, "structs", h.name)) bad("struct {s} is declared by translate-c but not in the ABI", .{h.name});
    }
}

pub fn main() !void {
    var arena = std.heap.ArenaAllocator.init(std.heap.page_allocator);
    defer arena.deinit();
    const alloc = arena.allocator();
    const args = try std.process.argsAlloc(alloc);
    if (args.len != 3) {
        std.debug.print("usage: {s} ABI_JSON WRAPPER_SOURCE\n", .{args[0]});
        std.process.exit(2);
    }
    const text = try std.fs.cwd().readFileAlloc(alloc, args[1], 16 << 20);
    const wrapper = try std.fs.cwd().readFileAlloc(alloc, args[2], 16 << 20);
    const parsed = try std.json.parseFromSlice(Json, alloc, text, .{});
    const abi = parsed.value;

    if (int(get(abi, "version"), "encoded") != symm.header_version)
        bad("the ABI is version {?d}, the binding's header {d}", .{ int(get(abi, "version"), "encoded"), symm.header_version });
    checkPackageVersion(abi);
    try checkFunctions(alloc, abi, wrapper);
    try checkConstants(alloc, abi);
    try checkStatuses(alloc, abi);
    try checkTypes(alloc, abi);

    std.debug.print("abi check of {s} (package {s}): {d} functions, {d} constants, {d} statuses, {d} typedefs, {d} structs; {d} not wrapped; {d} problem(s)\n", .{
        args[1],
        symm.package_version,
        arr(abi, "functions").len,
        arr(abi, "constants").len,
        arr(abi, "statuses").len,
        arr(abi, "typedefs").len,
        arr(abi, "structs").len,
        symm.not_wrapped.len,
        problems,
    });
    if (problems != 0) std.process.exit(1);
}

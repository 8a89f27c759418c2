//! Build of the symm Zig package (bindings/zig). Zig 0.15.2.
//!
//! Module `symm` (src/symm.zig): the idiomatic API over the C ABI 1.2, with
//! the header translated by translate-c (module `symm_c`, re-exported as
//! `symm.c`) and the symm loader (loader/symm_loader.c) compiled in, so a
//! program builds without an installed symm and finds the runtime at run time.
//!
//! Steps: `zig build` (example + test programs), `zig build test` (unit tests,
//! ABI check, missing-runtime tests; single-PE tests with -Dsymm-runtime=PATH),
//! `zig build docs` (HTML into <prefix>/docs), `zig build abi-check`.
const std = @import("std");
const manifest = @import("build.zig.zon");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});

    // Files of the symm checkout this package lives in.
    const header = b.path("../../include/symm/symm.h");
    const include_dir = b.path("../../include");
    const abi_dir = b.path("../../abi"); // symm_dispatch.h, the loader/runtime contract
    const abi_json = b.option([]const u8, "abi-json", "abi/symm-abi.json to check the binding against") orelse
        b.pathFromRoot("../../abi/symm-abi.json");
    const runtime = b.option([]const u8, "symm-runtime", "libsymm_runtime.so.1 for the single-PE tests");

    const translated = b.addTranslateC(.{
        .root_source_file = header,
        .target = target,
        .optimize = optimize,
        .link_libc = true,
    });
    translated.addIncludePath(include_dir);
    const c_mod = translated.createModule();

    // The package's version (build.zig.zon) as `symm.package_version`.
    const package = b.addOptions();
    package.addOption([]const u8, "version", manifest.version);

    const symm = b.addModule("symm", .{
        .root_source_file = b.path("src/symm.zig"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
        .imports = &.{
            .{ .name = "symm_c", .module = c_mod },
            .{ .name = "symm_package", .module = package.createModule() },
        },
    });
    symm.addIncludePath(include_dir);
    symm.addIncludePath(abi_dir);
    symm.addCSourceFile(.{
        .file = b.path("../../loader/symm_loader.c"),
        .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror" },
    });

    // Programs: the example and the test programs run by test.sh.
    const programs = [_][]const u8{ "examples/ring.zig", "tests/four_pes.zig", "tests/abi_check.zig", "tests/peer_failure.zig" };
    var exes: [programs.len]*std.Build.Step.Compile = undefined;
    for (programs, 0..) |src, i| {
        const name = std.fs.path.stem(src);
        exes[i] = b.addExecutable(.{
            .name = if (std.mem.eql(u8, name, "ring")) "ring" else b.fmt("symm-{s}", .{name}),
            .root_module = b.createModule(.{
                .root_source_file = b.path(src),
                .target = target,
                .optimize = optimize,
                .imports = &.{.{ .name = "symm", .module = symm }},
            }),
        });
        b.installArtifact(exes[i]);
    }

    // The ABI check program alone (test.sh's header-drift self-test).
    b.step("abi-check", "Build only the ABI check program").dependOn(&b.addInstallArtifact(exes[2], .{}).step);

    const test_step = b.step("test", "Run the unit tests, the ABI check and the runtime-free tests");

    // Unit tests of the module itself (no runtime needed).
    const unit = b.addTest(.{ .root_module = symm, .name = "symm-unit" });
    test_step.dependOn(&b.addRunArtifact(unit).step);

    // The ABI check against abi/symm-abi.json.
    const abi_run = b.addRunArtifact(exes[2]);
    abi_run.addFileArg(.{ .cwd_relative = abi_json }); // a file input: a changed JSON reruns it
    abi_run.addFileArg(b.path("src/symm.zig"));
    abi_run.expectExitCode(0);
    test_step.dependOn(&abi_run.step);

    // Without a runtime: every call gives error.LibraryNotFound.
    const missing = b.addTest(.{ .name = "symm-missing-runtime", .root_module = b.createModule(.{
        .root_source_file = b.path("tests/missing_runtime.zig"),
        .target = target,
        .optimize = optimize,
        .imports = &.{.{ .name = "symm", .module = symm }},
    }) });
    const missing_run = b.addRunArtifact(missing);
    missing_run.setEnvironmentVariable("SYMM_RUNTIME", "/nonexistent/libsymm_runtime.so.1");
    test_step.dependOn(&missing_run.step);

    // One PE on the host backend, every call family and the error mapping.
    const single = b.addTest(.{ .name = "symm-single-pe", .root_module = b.createModule(.{
        .root_source_file = b.path("tests/single_pe.zig"),
        .target = target,
        .optimize = optimize,
        .imports = &.{.{ .name = "symm", .module = symm }},
    }) });
    b.installArtifact(single);
    if (runtime) |path| {
        const single_run = b.addRunArtifact(single);
        single_run.setEnvironmentVariable("SYMM_RUNTIME", path);
        single_run.setEnvironmentVariable("SYMM_BACKEND", "host");
        test_step.dependOn(&single_run.step);
    }

    // Documentation: Zig's HTML docs of the module into <prefix>/docs.
    const lib = b.addLibrary(.{ .name = "symm", .root_module = symm, .linkage = .static });
    const docs = b.addInstallDirectory(.{
        .source_dir = lib.getEmittedDocs(),
        .install_dir = .prefix,
        .install_subdir = "docs",
    });
    b.step("docs", "Generate the HTML documentation into <prefix>/docs").dependOn(&docs.step);
}

//! Compiles the symm loader (`loader/symm_loader.c`) into a static library with
//! the system C compiler (`$CC`, else `cc`) and `ar` (`$AR`, else `ar`), and
//! links it with `-ldl -lpthread`. std only: the `cc` crate is not needed.
//!
//! Sources, the first that has `loader/symm_loader.c`: `$SYMM_SOURCE_DIR` (a
//! symm checkout) when set; the checkout this crate lives in
//! (`bindings/rust/symm-sys/../../..`); the crate's own `csrc/` (the copy
//! `sync_csrc.sh` makes and `cargo package` ships, so a packaged crate builds
//! from itself alone).
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn run(cmd: &mut Command, what: &str) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("symm-sys: cannot run {what} ({cmd:?}): {e}"));
    if !status.success() {
        panic!("symm-sys: {what} failed ({cmd:?}): {status}");
    }
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = match env::var_os("SYMM_SOURCE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => [manifest.join("../../.."), manifest.join("csrc")]
            .into_iter()
            .find(|d| d.join("loader/symm_loader.c").is_file())
            .unwrap_or_else(|| {
                panic!(
                    "symm-sys: loader/symm_loader.c is neither in the symm checkout above {} nor \
                     in its csrc/ (run symm-sys/sync_csrc.sh); or set SYMM_SOURCE_DIR to a \
                     symm checkout",
                    manifest.display()
                )
            }),
    };
    let loader = src.join("loader/symm_loader.c");
    let include = src.join("include");
    if !loader.is_file() {
        panic!(
            "symm-sys: {} not found; set SYMM_SOURCE_DIR to a symm checkout",
            loader.display()
        );
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let obj = out.join("symm_loader.o");
    let lib = out.join("libsymm_loader.a");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let ar = env::var("AR").unwrap_or_else(|_| "ar".into());

    let mut c = Command::new(&cc);
    c.args(["-std=c11", "-O2", "-fPIC", "-Wall", "-Wextra", "-c"])
        .arg(&loader)
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(src.join("abi"))
        .arg("-o")
        .arg(&obj);
    run(&mut c, "the C compiler");
    let _ = std::fs::remove_file(&lib);
    run(Command::new(&ar).arg("crs").arg(&lib).arg(&obj), "ar");

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=symm_loader");
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-link-lib=dylib=pthread");
    for f in [
        "loader/symm_loader.c",
        "abi/symm_dispatch.h",
        "include/symm/symm.h",
    ] {
        println!("cargo:rerun-if-changed={}", src.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=SYMM_SOURCE_DIR");
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=AR");
}

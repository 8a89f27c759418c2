//! Shared by the integration tests: where the meson build of symm is.
//!
//! The tests need a built runtime and symmrun; they take them from the meson
//! build directory named by `SYMM_BUILD_DIR` (`bindings/rust/test.sh BUILD_DIR`
//! sets it). Without it they fail with a message saying so: they never pass
//! without having run.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Once;

pub fn build_dir() -> PathBuf {
    match std::env::var_os("SYMM_BUILD_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            assert!(
                d.join("runtime").is_dir(),
                "SYMM_BUILD_DIR={} is not a meson build directory of symm (no runtime/)",
                d.display()
            );
            d
        }
        _ => panic!(
            "SYMM_BUILD_DIR is not set: these tests need a meson build of symm \
             (meson setup build && ninja -C build; then SYMM_BUILD_DIR=$PWD/build cargo test, \
             or bindings/rust/test.sh build)"
        ),
    }
}

pub fn runtime() -> PathBuf {
    let r = build_dir().join("runtime/libsymm_runtime.so.1");
    assert!(
        r.exists(),
        "{} is missing: build symm first (ninja -C BUILD_DIR)",
        r.display()
    );
    r
}

pub fn symmrun() -> PathBuf {
    let r = build_dir().join("runtime/symmrun");
    assert!(
        r.exists(),
        "{} is missing: build symm first (ninja -C BUILD_DIR)",
        r.display()
    );
    r
}

/// Point the loader at the build's runtime (once per process, before the
/// first load; `$SYMM_RUNTIME`, when set, still wins).
pub fn use_build_runtime() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        symm::set_runtime(runtime()).expect("set_runtime before the first load");
    });
}

/// The safe crate's sources, as (file, text): what the source-reading tests
/// (abi_coverage, kept_pointers) inspect. A new source file goes here once.
pub fn safe_crate_sources() -> Vec<(&'static str, &'static str)> {
    vec![
        ("buffer.rs", include_str!("../../src/buffer.rs")),
        ("context.rs", include_str!("../../src/context.rs")),
        ("team.rs", include_str!("../../src/team.rs")),
        ("lib.rs", include_str!("../../src/lib.rs")),
        ("error.rs", include_str!("../../src/error.rs")),
        ("element.rs", include_str!("../../src/element.rs")),
    ]
}

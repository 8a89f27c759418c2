//! The safe crate reflects the whole ABI: every function of
//! abi/symm-abi.json is called by the safe crate's code, and every constant
//! a safe API needs (reduction ops, comparisons, atomics, signal ops, element
//! types, thread levels, backends, bootstraps, predefined teams, ...) is named
//! by it; status codes have their `Error` variants (tested in error.rs).
//! symm-sys follows the header by itself (gen_sys.py, symm-sys's ABI test):
//! this test fails when the header gains or changes an entry that `symm`
//! does not wrap, unless the entry is listed below with the reason.

mod common;
#[path = "../../symm-sys/tests/json/mod.rs"]
mod json;

/// Entries of the ABI the safe crate deliberately does not name, and why.
const NOT_WRAPPED: &[(&str, &str)] = &[
    (
        "SYMM_VERSION_MAJOR",
        "compile-time version: Version::compiled() reads SYMM_VERSION",
    ),
    (
        "SYMM_VERSION_MINOR",
        "compile-time version: Version::compiled() reads SYMM_VERSION",
    ),
    (
        "SYMM_VERSION_PATCH",
        "compile-time version: Version::compiled() reads SYMM_VERSION",
    ),
    (
        "SYMM_DTYPE_COUNT",
        "a bound, not a type: the Element trait lists the types",
    ),
    (
        "SYMM_DEVICE_FAST_PES",
        "device-side detail of symm_device_ctx (kernels read it through symm::sys)",
    ),
    (
        "SYMM_DEVICE_ABI_VERSION",
        "device-side detail: the value of symm_device_ctx.device_abi (GPU code compares it)",
    ),
];

/// The code of `text` without its comments (doc comments name C entries
/// that the code may not call).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `word` occurs in `code` as a whole identifier, followed by `after`.
fn names(code: &str, word: &str, after: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before_ok = code[..at]
            .chars()
            .next_back()
            .map_or(true, |c| !is_ident(c));
        let rest = &code[at + word.len()..];
        let after_ok = rest.chars().next().map_or(true, |c| !is_ident(c));
        before_ok && after_ok && rest.trim_start().starts_with(after)
    })
}

/// Problems found for `abi` in `sources`, and how many entries were checked.
fn check(abi: &json::Json, sources: &[(&str, String)]) -> (Vec<String>, usize) {
    let code: String = sources
        .iter()
        .map(|(_, t)| code_of(t))
        .collect::<Vec<_>>()
        .join("\n");
    let listed = |n: &str| NOT_WRAPPED.iter().any(|(name, _)| *name == n);
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in abi.a("functions") {
        let name = f.s("name");
        checked += 1;
        let called = names(&code, name, "(");
        if called && listed(name) {
            bad.push(format!(
                "function {name} is wrapped and listed in NOT_WRAPPED"
            ));
        } else if !called && !listed(name) {
            bad.push(format!(
                "function {name} is not called by the safe crate (wrap it, or list it in \
                 NOT_WRAPPED with the reason)"
            ));
        }
    }
    for c in abi.a("constants") {
        let name = c.s("name");
        // Statuses: error.rs's every_status_has_its_variant (SYMM_STATUS_COUNT).
        if c.s("group") == "status" {
            continue;
        }
        checked += 1;
        let named = names(&code, name, "");
        if named && listed(name) {
            bad.push(format!(
                "constant {name} is named and listed in NOT_WRAPPED"
            ));
        } else if !named && !listed(name) {
            bad.push(format!(
                "constant {name} (group {}) is not named by the safe crate (give it its safe \
                 form, e.g. an enum variant, or list it in NOT_WRAPPED with the reason)",
                c.s("group")
            ));
        }
    }
    for (name, why) in NOT_WRAPPED {
        let known = abi
            .a("functions")
            .iter()
            .chain(abi.a("constants"))
            .any(|e| e.s("name") == *name);
        if !known {
            bad.push(format!(
                "NOT_WRAPPED lists {name} ({why}), which the ABI does not have"
            ));
        }
    }
    (bad, checked)
}

fn owned(srcs: Vec<(&'static str, &'static str)>) -> Vec<(&'static str, String)> {
    srcs.into_iter().map(|(f, t)| (f, t.to_string())).collect()
}

#[test]
fn the_safe_crate_covers_the_abi() {
    let abi = json::load_abi();
    let (bad, checked) = check(&abi, &owned(common::safe_crate_sources()));
    assert!(checked >= 150, "entries checked: {checked}");
    assert!(
        bad.is_empty(),
        "the safe crate does not reflect abi/symm-abi.json:\n  {}",
        bad.join("\n  ")
    );
}

/// The safe crate has the ABI's version, requires symm-sys of that version,
/// and Cargo.lock records both (a new minor bumps all of them).
#[test]
fn the_crates_have_the_abi_version() {
    let abi = json::load_abi();
    let v = abi.get("version").expect("version");
    let want = format!("{}.{}.{}", v.n("major"), v.n("minor"), v.n("patch"));
    assert_eq!(env!("CARGO_PKG_VERSION"), want, "symm's version");
    let toml = include_str!("../Cargo.toml");
    let dep = format!("symm-sys = {{ path = \"../symm-sys\", version = \"{want}\" }}");
    assert!(
        toml.lines().any(|l| l.trim() == dep),
        "symm/Cargo.toml does not have `{dep}`"
    );
    let lock = include_str!("../../Cargo.lock");
    for name in ["symm", "symm-sys"] {
        let entry = format!("name = \"{name}\"\nversion = \"{want}\"\n");
        assert!(lock.contains(&entry), "Cargo.lock: {name} is not {want}");
    }
}

/// A header that gains a function or a constant the safe crate does not
/// name makes the check fail; so does a call that exists only in a comment.
#[test]
fn a_new_entry_is_reported() {
    let text = std::fs::read_to_string(json::abi_path()).expect("abi/symm-abi.json");
    let grown = text
        .replacen(
            "\"functions\": [",
            "\"functions\": [{\"name\": \"symm_quiet_all\", \"params\": []},",
            1,
        )
        .replacen(
            "\"constants\": [",
            "\"constants\": [{\"name\": \"SYMM_OP_MINLOC\", \"value\": 7, \"group\": \"op\"},",
            1,
        );
    assert_ne!(grown, text, "the JSON keeps its layout");
    let abi = json::parse_json(&grown);
    let (bad, _) = check(&abi, &owned(common::safe_crate_sources()));
    assert!(
        bad.iter()
            .any(|b| b.starts_with("function symm_quiet_all is not called")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.starts_with("constant SYMM_OP_MINLOC (group op) is not named")),
        "{bad:?}"
    );
    assert_eq!(bad.len(), 2, "{bad:?}");

    // An existing entry that the code stops calling (only a comment names it).
    let abi = json::load_abi();
    let mut srcs = owned(common::safe_crate_sources());
    let fence = srcs[1].1.replace("ffi::symm_fence(", "// ffi::symm_fence(");
    assert_ne!(fence, srcs[1].1, "context.rs calls symm_fence");
    srcs[1].1 = fence;
    let (bad, _) = check(&abi, &srcs);
    assert!(
        bad.iter()
            .any(|b| b.starts_with("function symm_fence is not called")),
        "{bad:?}"
    );
}

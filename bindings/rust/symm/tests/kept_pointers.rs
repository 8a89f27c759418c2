//! Every C function that keeps a pointer argument after it returns (per
//! abi/symm-abi.json: until the next quiet, until the stream reaches it, until
//! the buffer is freed) is reached from the safe crate only through an
//! `unsafe fn` (whose `# Safety` section states the rule) or through
//! `Context::nbi_scope`, whose borrows make the rule hold. A new kept-pointer
//! entry wrapped by a safe function fails here.

mod common;
#[path = "../../symm-sys/tests/json/mod.rs"]
mod json;

/// The signature line of the Rust function around byte `at` of `text`, and
/// whether its doc comment has a `# Safety` section.
fn enclosing_fn(text: &str, at: usize) -> (String, bool) {
    let before = &text[..at];
    let start = before
        .rfind("    pub fn ")
        .into_iter()
        .chain(before.rfind("    pub unsafe fn "))
        .chain(before.rfind("    fn "))
        .max()
        .expect("inside a function");
    let sig = text[start..].lines().next().unwrap().trim().to_string();
    let docs: Vec<&str> = before[..start]
        .lines()
        .rev()
        .take_while(|l| l.trim_start().starts_with("///") || l.trim_start().starts_with("#["))
        .collect();
    (sig, docs.iter().any(|l| l.contains("# Safety")))
}

/// Problems found in `sources` for `abi`, and how many call sites were checked.
fn check(abi: &json::Json, sources: &[(&str, &str)]) -> (Vec<String>, usize) {
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in abi.a("functions") {
        let kept: Vec<&str> = f
            .a("keeps")
            .iter()
            .filter(|k| k.s("param") != "return" && k.s("until") != "return")
            .map(|k| k.s("until"))
            .collect();
        if kept.is_empty() {
            continue;
        }
        let name = f.s("name");
        let call = format!("ffi::{name}(");
        let mut found = false;
        for &(file, text) in sources {
            for (at, _) in text.match_indices(&call) {
                found = true;
                checked += 1;
                let (sig, safety_doc) = enclosing_fn(text, at);
                if !sig.contains("unsafe fn") || !safety_doc {
                    bad.push(format!(
                        "{name} keeps a pointer (until {kept:?}) but {file}: `{sig}` is not an \
                         unsafe fn with a # Safety section"
                    ));
                }
            }
        }
        if !found {
            bad.push(format!(
                "{name} keeps a pointer but the safe crate does not wrap it"
            ));
        }
    }
    (bad, checked)
}

#[test]
fn kept_pointer_entries_are_unsafe_or_scoped() {
    let abi = json::load_abi();
    let (bad, checked) = check(&abi, &common::safe_crate_sources());
    assert!(checked >= 14, "kept-pointer entries found: {checked}");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The check fails for a safe wrapper, or an unsafe one without `# Safety`.
#[test]
fn a_safe_wrapper_of_a_kept_pointer_is_reported() {
    let abi = json::load_abi();
    let mut srcs = common::safe_crate_sources();
    let buffer = srcs[0].1.replacen(
        "    pub unsafe fn put_nbi(",
        "    pub fn put_nbi_unchecked(&self) {}\n    pub unsafe fn put_nbi(",
        1,
    );
    // The generated sibling sits between put_nbi's docs and put_nbi itself:
    // put_nbi loses its # Safety section.
    srcs[0].1 = Box::leak(buffer.into_boxed_str());
    let (bad, _) = check(&abi, &srcs);
    assert!(bad.iter().any(|b| b.contains("symm_put_nbi ")), "{bad:?}");
    let safe = srcs[1]
        .1
        .replacen("pub unsafe fn putmem_nbi(", "pub fn putmem_nbi(", 1);
    srcs[1].1 = Box::leak(safe.into_boxed_str());
    let (bad, _) = check(&abi, &srcs);
    assert!(
        bad.iter().any(|b| b.contains("symm_putmem_nbi ")),
        "{bad:?}"
    );
}

/// And the scope's safe forms reach those entries only through the unsafe
/// wrappers, after the quiet-at-end guard is in place.
#[test]
fn the_nbi_scope_quiets_before_returning() {
    let text = include_str!("../src/buffer.rs");
    let body = &text[text.find("pub fn nbi_scope").unwrap()..];
    let body = &body[..body.find("\n    }\n").unwrap()];
    let guard = body.find("QuietOnDrop(self").expect("guard created");
    let call = body.find("f(&scope)").expect("closure called");
    let finish = body.find("guard.finish()").expect("quiet at the end");
    assert!(guard < call && call < finish, "{body}");
}

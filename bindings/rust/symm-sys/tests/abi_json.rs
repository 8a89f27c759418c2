//! symm-sys against abi/symm-abi.json: fails when the header (as the JSON
//! describes it) has a function, constant, typedef, struct or field that
//! symm-sys does not declare identically (names, parameter count and types,
//! return types, values, field order, offsets, sizes), or when symm-sys
//! declares a function or struct the ABI does not have.
//!
//! Declarations are read from the committed `src/bindings.rs`; struct layouts
//! are the compiled ones (`symm_sys::struct_layouts()`, built on `offset_of!`).
//! The JSON is `$SYMM_SOURCE_DIR/abi/symm-abi.json`, else the checkout's.

use std::collections::BTreeMap;

mod json;
use json::Json;

// ------------------------------------------------- symm-sys declarations --

#[derive(Clone, Debug, Default)]
struct Decls {
    /// name -> (rust type, value)
    consts: BTreeMap<String, (String, i128)>,
    /// name -> rust type
    types: BTreeMap<String, String>,
    /// name -> (params as (name, rust type), rust return type or "")
    fns: BTreeMap<String, (Vec<(String, String)>, String)>,
    /// struct -> fields as (name, rust type)
    structs: BTreeMap<String, Vec<(String, String)>>,
}

fn parse_bindings(src: &str) -> Decls {
    let mut d = Decls::default();
    let mut cur_struct: Option<String> = None;
    for line in src.lines() {
        let l = line.trim();
        if l.starts_with("///") || l.starts_with("//") || l.is_empty() {
            continue;
        }
        if let Some(name) = &cur_struct {
            if l == "}" {
                cur_struct = None;
            } else if let Some(f) = l.strip_prefix("pub ") {
                let (n, t) = f.trim_end_matches(',').split_once(": ").expect("field");
                d.structs
                    .get_mut(name)
                    .unwrap()
                    .push((n.to_string(), t.to_string()));
            }
            continue;
        }
        if let Some(r) = l.strip_prefix("pub const ") {
            let (name, rest) = r.split_once(": ").unwrap();
            let (ty, val) = rest.trim_end_matches(';').split_once(" = ").unwrap();
            let v = if let Some(h) = val.strip_prefix("0x") {
                i128::from_str_radix(h, 16).unwrap()
            } else {
                val.parse().unwrap()
            };
            d.consts.insert(name.into(), (ty.into(), v));
        } else if let Some(r) = l.strip_prefix("pub type ") {
            let (name, ty) = r.trim_end_matches(';').split_once(" = ").unwrap();
            d.types.insert(name.into(), ty.into());
        } else if let Some(r) = l.strip_prefix("pub struct ") {
            let name = r.trim_end_matches(" {").to_string();
            d.structs.insert(name.clone(), Vec::new());
            cur_struct = Some(name);
        } else if let Some(r) = l.strip_prefix("pub fn ") {
            if !r.ends_with(';') {
                continue; // a Rust function with a body (struct_layouts)
            }
            let open = r.find('(').unwrap();
            let close = r.rfind(')').unwrap();
            let name = &r[..open];
            let params: Vec<(String, String)> = r[open + 1..close]
                .split(", ")
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (n, t) = p.split_once(": ").unwrap();
                    (n.to_string(), t.to_string())
                })
                .collect();
            let ret = r[close + 1..]
                .trim_end_matches(';')
                .trim()
                .trim_start_matches("-> ")
                .to_string();
            d.fns.insert(name.into(), (params, ret));
        }
    }
    // Opaque handle targets are implementation detail of the handle typedefs.
    d.structs.retain(|n, _| !n.ends_with("_s"));
    d
}

// ------------------------------------------------------ C -> Rust types --

/// The Rust spelling a C type (as the JSON spells it) must have in symm-sys.
fn rust_of(c: &str) -> String {
    let spaced = c.replace('*', " * ");
    let toks: Vec<&str> = spaced.split_whitespace().collect();
    let mut i = 0;
    let mut pointee_const = false;
    if toks[i] == "const" {
        pointee_const = true;
        i += 1;
    }
    let base = match toks[i] {
        "uint8_t" => "u8",
        "int8_t" => "i8",
        "uint16_t" => "u16",
        "int16_t" => "i16",
        "uint32_t" => "u32",
        "int32_t" => "i32",
        "uint64_t" => "u64",
        "int64_t" => "i64",
        "size_t" => "usize",
        "char" => "c_char",
        "void" => "c_void",
        other if other.starts_with("symm_") => other,
        other => panic!("no Rust spelling for C type {other:?} in {c:?}"),
    };
    i += 1;
    let mut t = base.to_string();
    while i < toks.len() {
        assert_eq!(toks[i], "*", "C type {c:?}");
        i += 1;
        let ptr_const = toks.get(i) == Some(&"const");
        if ptr_const {
            i += 1;
        }
        t = format!("{}{t}", if pointee_const { "*const " } else { "*mut " });
        pointee_const = ptr_const;
    }
    t
}

// ------------------------------------------------------------ compare ----

type Layouts = Vec<symm_sys::StructLayout>;

fn compare(abi: &Json, d: &Decls, layouts: &Layouts) -> Vec<String> {
    let mut bad = Vec::new();

    // Constants: every one, same value, a type that holds it.
    for c in abi.a("constants") {
        let (name, v) = (c.s("name"), c.n("value"));
        match d.consts.get(name) {
            None => bad.push(format!("constant {name} = {v} is not declared")),
            Some((ty, have)) => {
                if *have != v {
                    bad.push(format!("constant {name}: symm-sys has {have}, the ABI {v}"));
                }
                let fits = match ty.as_str() {
                    "u32" => (0..=u32::MAX as i128).contains(&v),
                    "u64" | "usize" => (0..=u64::MAX as i128).contains(&v),
                    "i32" | "symm_status" => (i32::MIN as i128..=i32::MAX as i128).contains(&v),
                    _ => false,
                };
                if !fits {
                    bad.push(format!("constant {name}: type {ty} does not hold {v}"));
                }
            }
        }
    }
    for s in abi.a("statuses") {
        let (name, v) = (s.s("name"), s.n("value"));
        if d.consts.get(name).map(|c| c.1) != Some(v) {
            bad.push(format!(
                "status {name} = {v} is not declared with that value"
            ));
        }
    }

    // Typedefs.
    for t in abi.a("typedefs") {
        let name = t.s("name");
        let want = match t.s("kind") {
            "handle" => format!("*mut {name}_s"),
            _ => rust_of(t.s("c_type")),
        };
        match d.types.get(name) {
            None => bad.push(format!("typedef {name} is not declared")),
            Some(have) if *have != want => bad.push(format!(
                "typedef {name}: symm-sys has {have}, expected {want}"
            )),
            _ => {}
        }
    }

    // Structs: same fields in the same order with the same types; compiled
    // size, alignment, offsets and field sizes equal to the C compiler's.
    let abi_structs: Vec<&str> = abi.a("structs").iter().map(|s| s.s("name")).collect();
    for name in d.structs.keys() {
        if !abi_structs.contains(&name.as_str()) {
            bad.push(format!("struct {name} is declared but not in the ABI"));
        }
    }
    for s in abi.a("structs") {
        let name = s.s("name");
        let Some(fields) = d.structs.get(name) else {
            bad.push(format!("struct {name} is not declared"));
            continue;
        };
        let Some(lay) = layouts.iter().find(|l| l.0 == name) else {
            bad.push(format!("struct {name} has no entry in struct_layouts()"));
            continue;
        };
        if lay.1 as i128 != s.n("size") || lay.2 as i128 != s.n("align") {
            bad.push(format!(
                "struct {name}: size/align {}/{} in Rust, {}/{} in C",
                lay.1,
                lay.2,
                s.n("size"),
                s.n("align")
            ));
        }
        let jf = s.a("fields");
        if jf.len() != fields.len() {
            bad.push(format!(
                "struct {name}: {} fields in Rust, {} in the ABI",
                fields.len(),
                jf.len()
            ));
        }
        for (k, f) in jf.iter().enumerate() {
            let fname = f.s("name");
            let mut want = rust_of(f.s("c_type"));
            if let Some(Json::Num(count)) = f.get("count") {
                want = format!("[{want}; {count}]");
            }
            match fields.get(k) {
                Some((n, t)) if n == fname => {
                    // Array lengths may be spelled with a constant's name.
                    let t_resolved = d.consts.iter().fold(t.clone(), |acc, (cn, (_, cv))| {
                        acc.replace(&format!("; {cn}]"), &format!("; {cv}]"))
                    });
                    if t_resolved != want {
                        bad.push(format!(
                            "struct {name}.{fname}: Rust type {t}, expected {want}"
                        ));
                    }
                }
                other => bad.push(format!(
                    "struct {name}: field {k} is {other:?} in Rust, {fname} in the ABI"
                )),
            }
            match lay.3.iter().find(|x| x.0 == fname) {
                Some(&(_, off, size)) => {
                    if off as i128 != f.n("offset") || size as i128 != f.n("size") {
                        bad.push(format!(
                            "struct {name}.{fname}: offset/size {off}/{size} in Rust, {}/{} in C",
                            f.n("offset"),
                            f.n("size")
                        ));
                    }
                }
                None => bad.push(format!("struct {name}.{fname} has no layout entry")),
            }
        }
    }

    // Functions: every one, same parameter names, count and types, same
    // return type; nothing extra.
    let abi_fns: Vec<&str> = abi.a("functions").iter().map(|f| f.s("name")).collect();
    for name in d.fns.keys() {
        if !abi_fns.contains(&name.as_str()) {
            bad.push(format!("function {name} is declared but not in the ABI"));
        }
    }
    for f in abi.a("functions") {
        let name = f.s("name");
        let Some((params, ret)) = d.fns.get(name) else {
            bad.push(format!("function {name} is not declared"));
            continue;
        };
        let want_ret = match f.s("returns") {
            "void" => String::new(),
            r => rust_of(r),
        };
        if *ret != want_ret {
            bad.push(format!(
                "function {name}: returns {ret:?} in Rust, {want_ret:?} expected"
            ));
        }
        let jp = f.a("params");
        if jp.len() != params.len() {
            bad.push(format!(
                "function {name}: {} parameters in Rust, {} in the ABI",
                params.len(),
                jp.len()
            ));
            continue;
        }
        for (p, (pn, pt)) in jp.iter().zip(params) {
            let want = rust_of(p.s("c_type"));
            if p.s("name") != pn || want != *pt {
                bad.push(format!(
                    "function {name}: parameter {pn}: {pt} in Rust, {}: {want} expected",
                    p.s("name")
                ));
            }
        }
    }
    bad
}

fn load() -> (Json, Decls) {
    let src = include_str!("../src/bindings.rs");
    (json::load_abi(), parse_bindings(src))
}

#[test]
fn symm_sys_matches_the_abi_description() {
    let (abi, decls) = load();
    let layouts = symm_sys::struct_layouts();
    // The check looked at everything (a parser that finds nothing must fail).
    assert!(
        abi.a("functions").len() >= 90 && decls.fns.len() >= 90,
        "functions parsed"
    );
    assert!(
        abi.a("constants").len() >= 80 && decls.consts.len() >= 80,
        "constants parsed"
    );
    assert_eq!(
        abi.a("structs").len(),
        layouts.len(),
        "every struct has a layout"
    );
    let bad = compare(&abi, &decls, &layouts);
    assert!(
        bad.is_empty(),
        "symm-sys differs from abi/symm-abi.json (regenerate: python3 \
         bindings/rust/symm-sys/gen_sys.py):\n  {}",
        bad.join("\n  ")
    );
    let version = abi.get("version").unwrap();
    assert_eq!(version.n("encoded"), symm_sys::SYMM_VERSION as i128);
    // The crates carry the library's version: a new minor bumps them too.
    let v = format!(
        "{}.{}.{}",
        version.n("major"),
        version.n("minor"),
        version.n("patch")
    );
    assert_eq!(
        env!("CARGO_PKG_VERSION"),
        v,
        "symm-sys's version is not the ABI's: bump [workspace.package] version in \
         bindings/rust/Cargo.toml (and symm's symm-sys requirement, Cargo.lock)"
    );
}

/// The comparison catches each kind of drift (so the test above can fail).
#[test]
fn each_kind_of_drift_is_reported() {
    let (abi, decls) = load();
    let layouts = symm_sys::struct_layouts();
    let expect = |d: &Decls, l: &Layouts, what: &str| {
        let bad = compare(&abi, d, l);
        assert!(
            bad.iter().any(|b| b.contains(what)),
            "drift {what:?} not reported: {bad:?}"
        );
    };
    let mut d = decls.clone();
    d.fns.remove("symm_put");
    expect(&d, &layouts, "function symm_put is not declared");
    let mut d = decls.clone();
    d.fns.get_mut("symm_get").unwrap().0.pop();
    expect(&d, &layouts, "function symm_get: 4 parameters");
    let mut d = decls.clone();
    d.fns.get_mut("symm_p").unwrap().0[1].1 = "u32".into();
    expect(&d, &layouts, "function symm_p: parameter index");
    let mut d = decls.clone();
    d.fns.get_mut("symm_my_pe").unwrap().1 = "u32".into();
    expect(&d, &layouts, "function symm_my_pe: returns");
    let mut d = decls.clone();
    d.fns.insert("symm_gone".into(), (vec![], String::new()));
    expect(
        &d,
        &layouts,
        "function symm_gone is declared but not in the ABI",
    );
    let mut d = decls.clone();
    d.consts.get_mut("SYMM_CMP_LE").unwrap().1 = 9;
    expect(&d, &layouts, "constant SYMM_CMP_LE: symm-sys has 9");
    let mut d = decls.clone();
    d.consts.remove("SYMM_INDEX_NONE");
    expect(&d, &layouts, "constant SYMM_INDEX_NONE");
    let mut d = decls.clone();
    d.structs.get_mut("symm_ctx_info").unwrap().swap(3, 4);
    expect(&d, &layouts, "struct symm_ctx_info: field 3");
    let mut d = decls.clone();
    d.structs.get_mut("symm_init_attr").unwrap()[0].1 = "i32".into();
    expect(
        &d,
        &layouts,
        "struct symm_init_attr.struct_size: Rust type i32",
    );
    let mut d = decls.clone();
    d.types.insert("symm_status".into(), "u32".into());
    expect(&d, &layouts, "typedef symm_status");
    let mut l = layouts.clone();
    l[1].3[2].1 += 4;
    expect(&decls, &l, "offset/size");
    let mut l = layouts.clone();
    l[2].1 += 8;
    expect(&decls, &l, "size/align");
}

#[test]
fn c_types_spell_as_expected() {
    assert_eq!(rust_of("const void *"), "*const c_void");
    assert_eq!(rust_of("void **"), "*mut *mut c_void");
    assert_eq!(rust_of("void *const *"), "*const *mut c_void");
    assert_eq!(rust_of("const symm_init_attr *"), "*const symm_init_attr");
    assert_eq!(rust_of("symm_ctx *"), "*mut symm_ctx");
    assert_eq!(rust_of("int32_t"), "i32");
}

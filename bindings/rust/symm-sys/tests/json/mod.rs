//! A small JSON reader for the ABI description (abi/symm-abi.json), shared by
//! the tests of symm-sys and symm (std only: no serde offline). Integers only.
#![allow(dead_code)]

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(i128),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(v) => v.iter().find(|(n, _)| n == k).map(|(_, j)| j),
            _ => None,
        }
    }
    pub fn s(&self, k: &str) -> &str {
        match self.get(k) {
            Some(Json::Str(s)) => s,
            other => panic!("JSON: {k} is not a string: {other:?}"),
        }
    }
    pub fn n(&self, k: &str) -> i128 {
        match self.get(k) {
            Some(Json::Num(n)) => *n,
            other => panic!("JSON: {k} is not an integer: {other:?}"),
        }
    }
    pub fn a(&self, k: &str) -> &[Json] {
        match self.get(k) {
            Some(Json::Arr(a)) => a,
            other => panic!("JSON: {k} is not an array: {other:?}"),
        }
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(
            self.b.get(self.i),
            Some(&c),
            "JSON: expected {:?} at byte {}",
            c as char,
            self.i
        );
        self.i += 1;
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.b[self.i] {
            b'{' => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.i] == b'}' {
                    self.i += 1;
                    return Json::Obj(v);
                }
                loop {
                    self.ws();
                    let Json::Str(k) = self.value() else {
                        panic!("JSON: key at {}", self.i)
                    };
                    self.eat(b':');
                    v.push((k, self.value()));
                    self.ws();
                    self.i += 1;
                    match self.b[self.i - 1] {
                        b',' => continue,
                        b'}' => return Json::Obj(v),
                        c => panic!("JSON: unexpected {:?} at {}", c as char, self.i),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.i] == b']' {
                    self.i += 1;
                    return Json::Arr(v);
                }
                loop {
                    v.push(self.value());
                    self.ws();
                    self.i += 1;
                    match self.b[self.i - 1] {
                        b',' => continue,
                        b']' => return Json::Arr(v),
                        c => panic!("JSON: unexpected {:?} at {}", c as char, self.i),
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let mut s = String::new();
                loop {
                    let c = self.b[self.i];
                    self.i += 1;
                    match c {
                        b'"' => return Json::Str(s),
                        b'\\' => {
                            let e = self.b[self.i];
                            self.i += 1;
                            match e {
                                b'n' => s.push('\n'),
                                b't' => s.push('\t'),
                                b'u' => {
                                    let h =
                                        std::str::from_utf8(&self.b[self.i..self.i + 4]).unwrap();
                                    self.i += 4;
                                    s.push(
                                        char::from_u32(u32::from_str_radix(h, 16).unwrap())
                                            .unwrap_or('?'),
                                    );
                                }
                                other => s.push(other as char),
                            }
                        }
                        _ => {
                            // copy one UTF-8 sequence
                            let start = self.i - 1;
                            let mut end = self.i;
                            while end < self.b.len() && (self.b[end] & 0xC0) == 0x80 {
                                end += 1;
                            }
                            s.push_str(std::str::from_utf8(&self.b[start..end]).unwrap());
                            self.i = end;
                        }
                    }
                }
            }
            b't' => {
                self.i += 4;
                Json::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Json::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            _ => {
                let start = self.i;
                while self.i < self.b.len()
                    && (self.b[self.i] == b'-' || self.b[self.i].is_ascii_digit())
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.b[start..self.i]).unwrap();
                assert!(
                    !matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')),
                    "JSON: only integers are expected (at {start})"
                );
                Json::Num(
                    t.parse()
                        .unwrap_or_else(|_| panic!("JSON: bad number {t:?}")),
                )
            }
        }
    }
}

pub fn parse_json(text: &str) -> Json {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, p.b.len(), "JSON: trailing bytes");
    v
}

/// Where the ABI description is: `$SYMM_SOURCE_DIR/abi/symm-abi.json`, else
/// the one of the checkout these crates live in.
pub fn abi_path() -> std::path::PathBuf {
    let dir = match std::env::var_os("SYMM_SOURCE_DIR") {
        Some(d) if !d.is_empty() => std::path::PathBuf::from(d),
        _ => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.."),
    };
    dir.join("abi/symm-abi.json")
}

/// The ABI description of the symm checkout: `$SYMM_SOURCE_DIR/abi/symm-abi.json`,
/// else the one of the checkout these crates live in.
pub fn load_abi() -> Json {
    let path = abi_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the ABI description is needed for this check)",
            path.display()
        )
    });
    let abi = parse_json(&text);
    assert_eq!(abi.n("schema"), 1, "symm-abi.json schema");
    abi
}

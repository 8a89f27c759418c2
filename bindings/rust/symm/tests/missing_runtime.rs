//! A missing runtime is `Error::LibraryNotFound`, never a failed start.
//!
//! One test in this binary: the loader looks for the runtime once per
//! process, and this test decides where (a path that does not exist).

#[test]
fn missing_runtime_is_library_not_found() {
    // Before any call that loads the runtime: the loader reads the path then.
    symm::set_runtime("/nonexistent/libsymm_runtime.so.1").unwrap();

    // Loader-local answers need no runtime.
    assert_eq!(symm::loader_version().encoded(), symm::HEADER_VERSION);
    assert_eq!(
        symm::status_name(symm::sys::SYMM_ERR_PEER_FAILED),
        "SYMM_ERR_PEER_FAILED"
    );
    assert_eq!(symm::status_name(999), "SYMM_ERR_UNKNOWN");
    assert_eq!(symm::dtype_size(symm::sys::SYMM_DTYPE_FLOAT64), 8);
    assert_eq!(symm::runtime_path(), None);

    // SYMM_RUNTIME, when set by the environment, wins over set_runtime; the
    // test driver may set it to another missing path, never a real one.
    if let Some(env) = std::env::var_os("SYMM_RUNTIME") {
        assert!(
            !std::path::Path::new(&env).exists(),
            "SYMM_RUNTIME={env:?} exists: this test needs a missing runtime"
        );
    }

    let e = symm::probe().unwrap_err();
    assert!(matches!(e, symm::Error::LibraryNotFound(_)), "{e:?}");
    assert_eq!(e.code(), symm::sys::SYMM_ERR_LIBRARY_NOT_FOUND);
    assert_eq!(e.name(), "SYMM_ERR_LIBRARY_NOT_FOUND");
    assert!(
        e.message().contains("/nonexistent"),
        "message names the path: {e}"
    );
    assert!(
        e.to_string()
            .starts_with("SYMM_ERR_LIBRARY_NOT_FOUND (5): "),
        "{e}"
    );

    // Every entry that needs the runtime says the same; builder defaults are
    // filled by the loader, so the error surfaces in symm_init itself.
    let e = symm::Context::init().unwrap_err();
    assert!(
        matches!(e, symm::Error::LibraryNotFound(ref m) if m.contains("/nonexistent")),
        "{e:?}"
    );
    let e = symm::Context::builder()
        .backend(symm::Backend::Host)
        .bootstrap(symm::Bootstrap::Single)
        .build()
        .unwrap_err();
    assert!(matches!(e, symm::Error::LibraryNotFound(_)), "{e:?}");
    assert!(matches!(
        symm::runtime_version(),
        Err(symm::Error::LibraryNotFound(_))
    ));
    assert!(matches!(
        symm::UniqueId::new(),
        Err(symm::Error::LibraryNotFound(_))
    ));
    assert_eq!(symm::runtime_path(), None);

    // The search happened: the path can no longer be changed.
    let e = symm::set_runtime("/elsewhere/libsymm_runtime.so.1").unwrap_err();
    assert!(matches!(e, symm::Error::InvalidState(_)), "{e:?}");

    // std::error::Error + Display.
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("SYMM_ERR_INVALID_STATE"));
}

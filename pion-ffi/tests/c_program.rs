//! The C ABI from real C and C++: `tests/c/abi_test.c` (every function of
//! `include/pion.h`, bad input, several threads, a durable engine) and
//! `examples/ffi/example.cpp` are compiled with the system's compilers against the
//! shared library, run, and the C program is run again under valgrind, which must
//! report no error and no definite leak (`tests/valgrind.supp` holds the one known
//! report from a dependency, with its reason). The C program is also linked against
//! the static library with the system libraries `pion.pc` lists for it, and run with
//! no shared `libpion` to find.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The build profile's folder (where cargo puts `libpion.so`) and the target folder.
fn profile_dir() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("current_exe");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary in <target>/<profile>/deps")
        .to_path_buf();
    let target = profile.parent().expect("target folder").to_path_buf();
    (profile, target)
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the shared library (cargo test builds only the Rust library) and
/// returns its folder.
fn build_library() -> PathBuf {
    let (profile, target) = profile_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "-p", "pion-ffi", "--lib"])
        .arg("--manifest-path")
        .arg(crate_dir().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target);
    if profile.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo");
    assert!(status.success(), "building pion-ffi failed: {status}");
    let lib = profile.join(format!(
        "{}pion{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(lib.exists(), "no {}", lib.display());
    profile
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pion-ffi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Compiles `source` with `compiler` against the library; returns the program.
fn compile(compiler: &str, std: &str, source: &Path, lib_dir: &Path, out: &Path) -> PathBuf {
    let program = out.join(source.file_stem().expect("file name"));
    let output = Command::new(compiler)
        .arg(format!("-std={std}"))
        .args(["-Wall", "-Wextra", "-Werror", "-g"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(source)
        .arg("-L")
        .arg(lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .args(["-lpion", "-lpthread", "-o"])
        .arg(&program)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        output.status.success(),
        "{compiler} failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    program
}

fn run(mut cmd: Command, what: &str) -> String {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_c_program_passes_natively_and_under_valgrind() {
    let lib_dir = build_library();
    let work = scratch("c");
    let program = compile(
        "cc",
        "c11",
        &crate_dir().join("tests/c/abi_test.c"),
        &lib_dir,
        &work,
    );

    let mut native = Command::new(&program);
    native.arg(work.join("data-native"));
    let out = run(native, "abi_test");
    assert!(out.contains("all checks passed"), "{out}");

    let mut grind = Command::new("valgrind");
    grind
        .args([
            "--quiet",
            "--error-exitcode=3",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(format!(
            "--suppressions={}",
            crate_dir().join("tests/valgrind.supp").display()
        ))
        .arg(&program)
        .arg(work.join("data-valgrind"));
    let out = run(
        grind,
        "abi_test under valgrind (install valgrind to run it)",
    );
    assert!(out.contains("all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&work);
}

/// The flags `pion.pc` gives for a build in `lib_dir` and the crate's headers.
fn pkg_config_flags(lib_dir: &Path) -> Vec<String> {
    pkg_config(lib_dir, &["--cflags", "--libs"])
}

fn pkg_config(lib_dir: &Path, what: &[&str]) -> Vec<String> {
    let mut cmd = Command::new("pkg-config");
    cmd.arg(format!("--define-variable=libdir={}", lib_dir.display()))
        .arg(format!(
            "--define-variable=includedir={}",
            crate_dir().join("include").display()
        ))
        .args(what)
        .arg(crate_dir().join("pion.pc"));
    run(cmd, "pkg-config (install pkg-config to run it)")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_cpp_example_builds_with_pkg_config_and_runs() {
    let lib_dir = build_library();
    let work = scratch("cpp");
    let source = crate_dir().join("../examples/ffi/example.cpp");
    let flags = pkg_config_flags(&lib_dir);
    assert!(flags.contains(&"-lpion".to_string()), "{flags:?}");
    let program = work.join("example");
    let mut cxx = Command::new("c++");
    cxx.args(["-std=c++17", "-Wall", "-Wextra", "-Werror"])
        .arg(&source)
        .args(&flags)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&program);
    run(cxx, "c++ example.cpp");
    let out = run(Command::new(&program), "example.cpp");
    assert!(out.contains("hello from Pion"), "{out}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn the_c_program_links_statically_with_the_libraries_pion_pc_lists() {
    let lib_dir = build_library();
    let archive = lib_dir.join("libpion.a");
    assert!(archive.exists(), "no {}", archive.display());
    // The system libraries a static link needs (Libs.private), without -lpion itself.
    let system: Vec<String> = pkg_config(&lib_dir, &["--static", "--libs-only-l"])
        .into_iter()
        .filter(|f| f != "-lpion")
        .collect();
    let work = scratch("static");
    let program = work.join("abi_test_static");
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/abi_test.c"))
        .arg(&archive)
        .args(&system)
        .arg("-o")
        .arg(&program);
    run(
        cc,
        "cc abi_test.c with libpion.a and pion.pc's Libs.private",
    );
    // No rpath and no shared libpion to load: it runs on the archive alone.
    let mut native = Command::new(&program);
    native.arg(work.join("data")).env_remove("LD_LIBRARY_PATH");
    let out = run(native, "abi_test linked statically");
    assert!(out.contains("all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&work);
}

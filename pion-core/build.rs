//! Builds the small C shim for `long double` arithmetic (see csrc/long_double.c).
fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    cc::Build::new()
        .file("csrc/long_double.c")
        .warnings(true)
        .compile("pion_long_double");
}

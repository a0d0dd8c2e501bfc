//! Project automation: `cargo xtask bench`, fixture generation.
fn main() {}

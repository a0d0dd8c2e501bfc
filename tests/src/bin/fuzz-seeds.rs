//! Writes each fuzz target's seed corpus (`tally_tests::fuzz_checks::seeds`)
//! to `OUT/TARGET/`: `cargo xtask fuzz` runs it before fuzzing.
//!
//! Usage: `fuzz-seeds ROOT OUT [TARGET...]`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(root), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: fuzz-seeds ROOT OUT [TARGET...]");
        std::process::exit(2);
    };
    let wanted: Vec<String> = args.collect();
    for (target, _) in tally_tests::fuzz_checks::TARGETS {
        if !wanted.is_empty() && !wanted.iter().any(|name| name == target) {
            continue;
        }
        let dir = PathBuf::from(&out).join(target);
        std::fs::create_dir_all(&dir)?;
        let seeds = tally_tests::fuzz_checks::seeds(target, std::path::Path::new(&root));
        for (index, (name, bytes)) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{index:03}-{name}")), bytes)?;
        }
        println!("{target}: {} seeds", seeds.len());
    }
    Ok(())
}

//! Embed every built-in rule (rules/**/*.toml) into the binary.
use std::path::Path;

fn collect(dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let rules = Path::new(&root).join("rules");
    println!("cargo:rerun-if-changed=rules");
    let mut files = Vec::new();
    collect(&rules, &mut files);
    files.sort();
    let mut src = String::from("/// (path relative to the project, contents) of every built-in rule.\npub static BUILTIN: &[(&str, &str)] = &[\n");
    for f in &files {
        let rel = f
            .strip_prefix(&format!("{}/", root.replace('\\', "/")))
            .unwrap_or(f);
        src.push_str(&format!("    ({rel:?}, include_str!({f:?})),\n"));
    }
    src.push_str("];\n");
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_rules.rs");
    std::fs::write(out, src).expect("OUT_DIR is writable");
}

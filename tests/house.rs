//! The house rules of the code base (ARCHITECTURE.md), checked on the sources themselves:
//! no function in `src/` longer than 150 lines (generated tables aside), and every arrow of
//! the data flow one way (the replay never names the analysis, readers neither).

use std::path::{Path, PathBuf};

/// The longest a function in `src/` may be, from its `fn` line to its closing brace.
const MAX_LINES: usize = 150;

/// Generated from `../shared/spec/otf2_records.json` by `tools/gen_otf2_schema.py`.
const GENERATED: &[&str] = &["src/formats/otf2/schema.rs", "src/model/event_kind.rs"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// The source with comments, string and character literals blanked out (newlines kept),
/// so that braces and keywords are the code's own.
fn code_only(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |e| i + e);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let start = i + 2 + hashes;
                let end = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |e| start + e + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, (j + 1).min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // a character literal ('x', '\n', '\u{..}', '{') or a lifetime ('a)
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|e| i + 2 + e + 1)
                } else {
                    let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
                };
                match end {
                    Some(e) => {
                        blank(&mut out, i, e);
                        i = e;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// (name, first line, length in lines) of every function with a body.
fn functions(src: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(src);
    let line_of = |pos: usize| code[..pos].iter().filter(|&&c| c == b'\n').count() + 1;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].windows(3).position(|w| w == b"fn ") {
        let at = i + p;
        i = at + 3;
        if at > 0 && word(code[at - 1]) {
            continue;
        }
        let name: String = code[i..]
            .iter()
            .skip_while(|c| c.is_ascii_whitespace())
            .take_while(|&&c| word(c))
            .map(|&c| c as char)
            .collect();
        if name.is_empty() {
            continue; // `fn(` types
        }
        // the body opens at the first `{` outside brackets; a `;` first means no body
        let (mut depth, mut j) = (0i32, i);
        let open = loop {
            match code.get(j) {
                None => break None,
                Some(b'(' | b'[' | b'<') => depth += 1,
                Some(b')' | b']') => depth -= 1,
                Some(b'>') if code[j - 1] != b'-' && code[j - 1] != b'=' => depth -= 1,
                Some(b';') if depth <= 0 => break None,
                Some(b'{') if depth <= 0 => break Some(j),
                _ => {}
            }
            j += 1;
        };
        let Some(open) = open else { continue };
        let (mut depth, mut j) = (0i32, open);
        while j < code.len() {
            match code[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let first = line_of(at);
        found.push((name, first, line_of(j) - first + 1));
    }
    found
}

#[test]
fn no_function_in_src_is_longer_than_150_lines() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    let mut long = Vec::new();
    for f in &files {
        let name = rel(f);
        if GENERATED.contains(&name.as_str()) {
            continue;
        }
        let src = std::fs::read_to_string(f).unwrap();
        for (func, line, len) in functions(&src) {
            if len > MAX_LINES {
                long.push(format!("{name}:{line} {func}: {len} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines (split them along their steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_sees_functions_as_they_are() {
    let src =
        "fn a() {\n    let s = \"}\";\n    let c = '}';\n    // }\n    x::<'a>(|| { 1 });\n}\n\
               fn b<T: Fn() -> u8>(t: T) -> u8 where T: Copy {\n t()\n}\n\
               trait X { fn c(&self); }\n";
    let f = functions(src);
    assert_eq!(
        f,
        vec![("a".to_string(), 1, 6), ("b".to_string(), 7, 3)],
        "{f:?}"
    );
}

/// Which modules a layer must not name: the data flow of ARCHITECTURE.md runs
/// formats → model → replay → analysis → report → compare → cli, never back (`convert`:
/// formats, model → convert → cli).
const NEVER: &[(&str, &[&str])] = &[
    (
        "src/model",
        &[
            "crate::formats",
            "crate::replay",
            "crate::analysis",
            "crate::report",
            "crate::cli",
            "crate::compare",
        ],
    ),
    (
        "src/formats",
        &[
            "crate::replay",
            "crate::analysis",
            "crate::report",
            "crate::cli",
            "crate::compare",
        ],
    ),
    (
        "src/replay",
        &[
            "crate::analysis",
            "crate::report",
            "crate::cli",
            "crate::compare",
        ],
    ),
    (
        "src/rules",
        &[
            "crate::analysis",
            "crate::report",
            "crate::cli",
            "crate::compare",
        ],
    ),
    (
        "src/analysis",
        &[
            "crate::report",
            "crate::cli",
            "crate::compare",
            "crate::convert",
        ],
    ),
    // the writers of `convert` read what the readers decode; only the cli calls them
    (
        "src/convert",
        &[
            "crate::replay",
            "crate::analysis",
            "crate::report",
            "crate::cli",
            "crate::compare",
        ],
    ),
    (
        "src/report",
        &["crate::cli", "crate::compare", "crate::convert"],
    ),
    // compare (two runs aligned) reads the analysis and formats its result beside report
    ("src/compare", &["crate::cli", "crate::convert"]),
    // run --mpi (issue 24): reads, replays and analyses shares; only the cli writes reports
    (
        "src/distributed",
        &[
            "crate::report",
            "crate::cli",
            "crate::compare",
            "crate::convert",
        ],
    ),
];

#[test]
fn every_arrow_of_the_data_flow_points_one_way() {
    let mut wrong = Vec::new();
    for (dir, names) in NEVER {
        let mut files = Vec::new();
        sources(&root().join(dir), &mut files);
        assert!(!files.is_empty(), "{dir} has no sources");
        for f in files {
            let code = String::from_utf8(code_only(&std::fs::read_to_string(&f).unwrap())).unwrap();
            for n in *names {
                // `use crate::{analysis, ...}` names it too
                let module = n.trim_start_matches("crate::");
                let grouped = code.contains("use crate::{")
                    && code.split("use crate::{").skip(1).any(|g| {
                        g.split('}')
                            .next()
                            .unwrap_or("")
                            .split([',', ' ', '\n'])
                            .any(|w| w == module || w.starts_with(&format!("{module}::")))
                    });
                if code.contains(n) || grouped {
                    wrong.push(format!("{} names {n}", rel(&f)));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows pointing back:\n{}",
        wrong.join("\n")
    );
}

//! The record syntax shared by every OTF 1 file except the master (formats.md B.3): one
//! record per line, upper-case keywords each followed by a value (lower-case hexadecimal
//! number, comma list, dotted version or quoted string), in a short form without spaces
//! (`DP1NM"Process 1"`) or a long form with them (`DEFPROCESS 1 NAME "Process 1"`).
//!
//! A keyword is a maximal run of `A-Z`: this is the format's rule that a keyword matches only
//! if the next character is not an upper-case letter (`DTR` vs `DTRG`, `C` vs `CNT`).

/// One value after a keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Nothing follows the keyword (`L` alone, `PB`); a missing number reads as 0.
    None,
    Num(u64),
    /// Comma- or dot-separated numbers (`M1,2,3,`, `1.a.1`): the raw text, parsed on demand.
    List(&'a [u8]),
    Str(&'a [u8]),
    /// A run of more than 16 hexadecimal digits (only a key-value byte array may be one).
    Long(&'a [u8]),
}

impl<'a> Value<'a> {
    /// The value as a number (`None` is 0, as the format treats a missing optional part).
    pub fn num(self) -> Option<u64> {
        match self {
            Value::None => Some(0),
            Value::Num(n) => Some(n),
            Value::List(l) => {
                // a one-element list `1,` is that number
                let mut it = split_list(l);
                let first = it.next()?;
                it.next().is_none().then_some(first).flatten()
            }
            Value::Str(_) | Value::Long(_) => None,
        }
    }

    pub fn str(self) -> Option<&'a [u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The numbers of a list (a single number is a one-element list; `None` is empty).
    pub fn list(self) -> Option<Vec<u64>> {
        match self {
            Value::None => Some(Vec::new()),
            Value::Num(n) => Some(vec![n]),
            Value::List(l) => split_list(l).collect(),
            Value::Str(_) | Value::Long(_) => None,
        }
    }
}

fn split_list(l: &[u8]) -> impl Iterator<Item = Option<u64>> + '_ {
    l.split(|&c| c == b',' || c == b'.')
        .filter(|p| !p.is_empty())
        .map(parse_hex)
}

/// A lower-case hexadecimal number of 1 to 16 digits.
pub fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        v = (v << 4) | hex_digit(c)? as u64;
    }
    Some(v)
}

#[inline]
pub fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[inline]
pub fn is_hex(c: u8) -> bool {
    c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
}

/// At most this many keyword/value pairs in one record (the longest records have 8).
pub const MAX_FIELDS: usize = 12;

/// The keyword/value pairs of one record line.
#[derive(Debug)]
pub struct Fields<'a> {
    pairs: [(&'a [u8], Value<'a>); MAX_FIELDS],
    len: usize,
}

impl<'a> Fields<'a> {
    /// The record's first keyword (its type).
    pub fn head(&self) -> &'a [u8] {
        self.pairs[0].0
    }

    /// The record's first value.
    pub fn first(&self) -> Value<'a> {
        self.pairs[0].1
    }

    /// The value of the first keyword (after the head) named `short` or one of `long`.
    pub fn get(&self, names: &[&str]) -> Option<Value<'a>> {
        self.pairs[1..self.len]
            .iter()
            .find(|(k, _)| names.iter().any(|n| n.as_bytes() == *k))
            .map(|p| p.1)
    }

    /// The value after the head that has no keyword (the name string of `DV1.a.1"name"`).
    pub fn unnamed(&self) -> Option<Value<'a>> {
        self.get(&[""])
    }
}

/// Why a line is not a record.
#[derive(Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset in the line.
    pub col: usize,
    pub what: String,
}

fn err(col: usize, what: impl Into<String>) -> SyntaxError {
    SyntaxError {
        col,
        what: what.into(),
    }
}

/// Split a record line (leading blanks already skipped, no line end) into keyword/value pairs.
pub fn fields(line: &[u8]) -> Result<Fields<'_>, SyntaxError> {
    let mut out = Fields {
        pairs: [(&[][..], Value::None); MAX_FIELDS],
        len: 0,
    };
    let mut i = 0;
    let n = line.len();
    let blank = |c: u8| c == b' ' || c == b'\t' || c == b'\r';
    while i < n {
        while i < n && blank(line[i]) {
            i += 1;
        }
        if i == n {
            break;
        }
        let k0 = i;
        while i < n && line[i].is_ascii_uppercase() {
            i += 1;
        }
        let kw = &line[k0..i];
        while i < n && blank(line[i]) {
            i += 1;
        }
        let v0 = i;
        let value = match line.get(i) {
            Some(b'"') => {
                let Some(len) = line[i + 1..].iter().position(|&c| c == b'"') else {
                    return Err(err(i, "a closing '\"' after the string that starts here"));
                };
                i += len + 2;
                Value::Str(&line[v0 + 1..v0 + 1 + len])
            }
            Some(&c) if is_hex(c) => {
                let mut list = false;
                while i < n && (is_hex(line[i]) || line[i] == b',' || line[i] == b'.') {
                    list |= !is_hex(line[i]);
                    i += 1;
                }
                let raw = &line[v0..i];
                if list {
                    if split_list(raw).any(|x| x.is_none()) {
                        return Err(err(
                            v0,
                            "a list of hexadecimal numbers of at most 16 digits",
                        ));
                    }
                    Value::List(raw)
                } else {
                    match parse_hex(raw) {
                        Some(v) => Value::Num(v),
                        None => Value::Long(raw),
                    }
                }
            }
            _ => Value::None,
        };
        if kw.is_empty() && value == Value::None {
            return Err(err(
                k0,
                format!(
                    "an upper-case keyword, a hexadecimal number or a string, not {:?}",
                    char::from(line[k0])
                ),
            ));
        }
        if out.len == MAX_FIELDS {
            return Err(err(k0, format!("at most {MAX_FIELDS} fields in a record")));
        }
        out.pairs[out.len] = (kw, value);
        out.len += 1;
    }
    if out.len == 0 {
        return Err(err(0, "a record"));
    }
    Ok(out)
}

/// Iterate over the lines of a text: (1-based line number, byte offset of the line, line
/// without its end and leading blanks). A last line without `\n` is reported by `last_open`.
pub struct Lines<'a> {
    text: &'a [u8],
    pos: usize,
    line: u64,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a [u8]) -> Lines<'a> {
        Lines {
            text,
            pos: 0,
            line: 0,
        }
    }

    /// Is the text's last line cut off (no line end)? A writer always ends a record with `\n`.
    pub fn last_open(text: &[u8]) -> bool {
        text.last().is_some_and(|&c| c != b'\n')
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (u64, usize, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.pos..];
        let len = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        let start = self.pos;
        self.pos += len + 1;
        self.line += 1;
        let mut l = &rest[..len];
        while let [b' ' | b'\t', r @ ..] = l {
            l = r;
        }
        while let [r @ .., b'\r' | b' ' | b'\t'] = l {
            l = r;
        }
        Some((self.line, start, l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(line: &str) -> Vec<(String, Value<'_>)> {
        let f = fields(line.as_bytes()).unwrap();
        f.pairs[..f.len]
            .iter()
            .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), *v))
            .collect()
    }

    #[test]
    fn short_and_long_forms_give_the_same_fields() {
        let s = kv("DP1NM\"Process 1\"PT2");
        let l = kv("DEFPROCESS 1 NAME \"Process 1\" PARENT 2");
        assert_eq!(s[0].1, Value::Num(1));
        assert_eq!(s[1], ("NM".into(), Value::Str(b"Process 1")));
        assert_eq!(l[1], ("NAME".into(), Value::Str(b"Process 1")));
        assert_eq!(s[2].1, l[2].1);
    }

    #[test]
    fn keywords_are_maximal_upper_case_runs() {
        assert_eq!(kv("DTRG1T2")[0].0, "DTRG");
        assert_eq!(kv("DTRf4240")[0], ("DTR".into(), Value::Num(0xf4240)));
        let c = kv("COPaC3b9aca00RT1S0R4Dd6");
        assert_eq!(
            c.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["COP", "C", "RT", "S", "R", "D"]
        );
        assert_eq!(c[5].1, Value::Num(0xd6));
        assert_eq!(kv("L")[0], ("L".into(), Value::None));
    }

    #[test]
    fn lists_versions_and_unnamed_strings() {
        let f = fields(b"DPG3M1,2,a,NM\"comm\"").unwrap();
        assert_eq!(f.get(&["M"]).unwrap().list(), Some(vec![1, 2, 10]));
        let v = fields(b"DV1.a.1\"coelacanth\"").unwrap();
        assert_eq!(v.first().list(), Some(vec![1, 10, 1]));
        assert_eq!(v.unnamed().and_then(Value::str), Some(&b"coelacanth"[..]));
    }

    #[test]
    fn bad_lines_say_where() {
        assert_eq!(fields(b"DP1NM\"open").unwrap_err().col, 5);
        let long = fields(b"E12345678901234567").unwrap();
        assert_eq!(long.first().num(), None);
        assert!(fields(b"E1 ?").is_err());
    }

    #[test]
    fn lines_strip_blanks_and_count() {
        let t = b"  E1\r\n\nL\n*2";
        let v: Vec<_> = Lines::new(t).collect();
        assert_eq!(v[0], (1, 0, &b"E1"[..]));
        assert_eq!(v[1].2, b"");
        assert_eq!(v[3], (4, 9, &b"*2"[..]));
        assert!(Lines::last_open(t));
    }
}

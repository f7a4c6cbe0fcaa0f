//! Byte-level scanning of Paje text (formats.md §C.1): fields separated by spaces, tabs or
//! `\r`; double-quoted fields without escapes; `#` at the start of a token opens a comment
//! running to the end of the line. Nothing here allocates per line.

/// Split one line (without its `\n`) into fields, appending them to `out`. Quotes are
/// removed. Returns `Err(column)` (0-based byte column) for an unterminated quote.
#[inline]
pub fn split<'a>(line: &'a [u8], out: &mut Vec<&'a [u8]>) -> Result<(), usize> {
    let n = line.len();
    let mut i = 0;
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Ok(());
        }
        match line[i] {
            b'#' => return Ok(()),
            b'"' => {
                let start = i + 1;
                match memchr::memchr(b'"', &line[start..]) {
                    Some(k) => {
                        out.push(&line[start..start + k]);
                        i = start + k + 1;
                    }
                    None => return Err(i),
                }
            }
            _ => {
                let start = i;
                while i < n && !is_space(line[i]) {
                    i += 1;
                }
                out.push(&line[start..i]);
            }
        }
    }
}

#[inline]
pub fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

/// A non-negative decimal integer (an event id).
#[inline]
pub fn uint(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 18 {
        return None;
    }
    let mut v = 0u64;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// Why a date did not convert.
#[derive(Debug, PartialEq, Eq)]
pub enum DateError {
    /// Not a number.
    Syntax,
    /// Below zero: the model counts ticks from zero.
    Negative,
    /// Too large for 64-bit ticks at this resolution.
    Overflow,
}

/// A date in seconds (`29.537220`, `1e-05`, `3`) as ticks of `10^digits` per second, exactly
/// when the decimal value has at most `digits` fraction digits; otherwise rounded to the
/// nearest tick and `*inexact` is set.
#[inline]
pub fn date(s: &[u8], digits: u32, inexact: &mut bool) -> Result<u64, DateError> {
    // fast path: plain `int.frac` with few digits, the shape every writer uses
    let mut i = 0;
    let n = s.len();
    if n == 0 {
        return Err(DateError::Syntax);
    }
    let mut int: u64 = 0;
    let mut nd = 0;
    while i < n {
        let d = s[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if nd >= 18 {
            return date_slow(s, digits, inexact);
        }
        int = int * 10 + d as u64;
        nd += 1;
        i += 1;
    }
    let mut frac: u64 = 0;
    let mut nf: u32 = 0;
    if i < n && s[i] == b'.' {
        i += 1;
        while i < n {
            let d = s[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if nf >= digits {
                return date_slow(s, digits, inexact);
            }
            frac = frac * 10 + d as u64;
            nf += 1;
            i += 1;
        }
    }
    if i != n || (nd == 0 && nf == 0) {
        return date_slow(s, digits, inexact);
    }
    let scale = POW10[digits as usize];
    int.checked_mul(scale)
        .and_then(|t| t.checked_add(frac * POW10[(digits - nf) as usize]))
        .ok_or(DateError::Overflow)
}

const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// The general case: sign, exponent, many digits.
#[cold]
fn date_slow(s: &[u8], digits: u32, inexact: &mut bool) -> Result<u64, DateError> {
    let mut i = 0;
    let n = s.len();
    let mut negative = false;
    if i < n && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    // significant digits as a u128 mantissa and a decimal exponent
    let mut mant: u128 = 0;
    let mut exp10: i64 = 0;
    let mut any = false;
    let mut dropped_nonzero = false;
    let mut seen_point = false;
    while i < n {
        let c = s[i];
        if c == b'.' && !seen_point {
            seen_point = true;
        } else if c.is_ascii_digit() {
            any = true;
            if mant < 10u128.pow(36) {
                mant = mant * 10 + (c - b'0') as u128;
                if seen_point {
                    exp10 -= 1;
                }
            } else {
                dropped_nonzero |= c != b'0';
                if !seen_point {
                    exp10 += 1;
                }
            }
        } else {
            break;
        }
        i += 1;
    }
    if !any {
        return Err(DateError::Syntax);
    }
    if i < n && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        let mut eneg = false;
        if i < n && (s[i] == b'+' || s[i] == b'-') {
            eneg = s[i] == b'-';
            i += 1;
        }
        let start = i;
        let mut e: i64 = 0;
        while i < n && s[i].is_ascii_digit() {
            e = (e * 10 + (s[i] - b'0') as i64).min(100_000);
            i += 1;
        }
        if i == start {
            return Err(DateError::Syntax);
        }
        exp10 += if eneg { -e } else { e };
    }
    if i != n {
        return Err(DateError::Syntax);
    }
    if mant == 0 {
        return Ok(0);
    }
    if negative {
        return Err(DateError::Negative);
    }
    // ticks = mant * 10^(exp10 + digits)
    let shift = exp10 + digits as i64;
    let ticks: u128 = if shift >= 0 {
        if shift > 38 {
            return Err(DateError::Overflow);
        }
        mant.checked_mul(10u128.pow(shift as u32))
            .ok_or(DateError::Overflow)?
    } else {
        let down = (-shift) as u32;
        if down > 38 {
            *inexact = true;
            0
        } else {
            let p = 10u128.pow(down);
            let (q, r) = (mant / p, mant % p);
            if r != 0 {
                *inexact = true;
            }
            if r * 2 >= p {
                q + 1
            } else {
                q
            }
        }
    };
    if dropped_nonzero {
        *inexact = true;
    }
    u64::try_from(ticks).map_err(|_| DateError::Overflow)
}

/// A count written as an integer, a decimal (`3.000000`) or `NA` (SimGrid's `Size` field):
/// the integer part, or None when it is not a number.
pub fn lenient_count(s: &[u8]) -> Option<u64> {
    let int_end = s.iter().position(|&b| b == b'.').unwrap_or(s.len());
    let (int, rest) = s.split_at(int_end);
    if !rest.iter().skip(1).all(u8::is_ascii_digit) {
        return None;
    }
    uint(int)
}

/// A binary64 time in seconds (binary Paje, formats.md §F.2.7) as ticks of `10^digits` per
/// second: the ticks of the shortest decimal that reads back as `x`, so a time written
/// as text and converted by `strtod` gets the ticks `date` gives the text. Exact decimals
/// with at most `digits` fraction digits take the fast path (`n / 10^digits`, both exact
/// below 2^53, is correctly rounded, as `strtod` of that decimal is).
#[inline]
pub fn seconds_to_ticks(x: f64, digits: u32, inexact: &mut bool) -> Result<u64, DateError> {
    if x.is_nan() {
        return Err(DateError::Syntax);
    }
    if x < 0.0 {
        return Err(DateError::Negative);
    }
    if !x.is_finite() {
        return Err(DateError::Overflow);
    }
    let scale = POW10[digits as usize] as f64;
    // x ≥ 0: adding 0.5 and truncating rounds (ties do not matter: the check below decides);
    // below 2^53 the truncation is exact as an i64 (cheaper to convert than a u64)
    let y = x * scale + 0.5;
    if y < 9_007_199_254_740_992.0 {
        let n = y as i64;
        if n as f64 / scale == x {
            return Ok(n as u64);
        }
    }
    shortest_to_ticks(x, digits, inexact)
}

/// `seconds_to_ticks` of a time that is not an exact decimal of at most `digits` fraction
/// digits: through the shortest decimal that reads back as `x`.
#[cold]
#[inline(never)]
fn shortest_to_ticks(x: f64, digits: u32, inexact: &mut bool) -> Result<u64, DateError> {
    let s = format!("{x}");
    date(s.as_bytes(), digits, inexact)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Result<Vec<String>, usize> {
        let mut v = Vec::new();
        split(s.as_bytes(), &mut v)?;
        Ok(v.iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect())
    }

    #[test]
    fn splits_on_spaces_tabs_and_cr_with_quotes_and_comments() {
        assert_eq!(
            fields("6 0.000000 1 1 0 \"rank-0\"\r").unwrap(),
            ["6", "0.000000", "1", "1", "0", "rank-0"]
        );
        assert_eq!(
            fields("6\tI\t S  Init \"0.0 .7 1.0\"\t\t").unwrap(),
            ["6", "I", "S", "Init", "0.0 .7 1.0"]
        );
        assert_eq!(
            fields("13 0.000000 2 1 ").unwrap(),
            ["13", "0.000000", "2", "1"]
        );
        assert_eq!(fields("12 1 a#b # comment").unwrap(), ["12", "1", "a#b"]);
        assert_eq!(fields("5 \"a # b\" c").unwrap(), ["5", "a # b", "c"]);
        assert_eq!(fields("# only a comment").unwrap(), Vec::<String>::new());
        assert_eq!(fields("5 \"\" x").unwrap(), ["5", "", "x"]);
        assert_eq!(fields("5 \"open"), Err(2));
    }

    #[test]
    fn dates_are_exact_at_the_chosen_resolution() {
        let mut inexact = false;
        assert_eq!(date(b"29.537220", 9, &mut inexact), Ok(29_537_220_000));
        assert_eq!(date(b"0.000000", 9, &mut inexact), Ok(0));
        assert_eq!(date(b"3", 9, &mut inexact), Ok(3_000_000_000));
        assert_eq!(date(b".5", 9, &mut inexact), Ok(500_000_000));
        assert_eq!(date(b"1e-05", 9, &mut inexact), Ok(10_000));
        assert_eq!(date(b"2.5E+2", 9, &mut inexact), Ok(250_000_000_000));
        assert_eq!(date(b"-0.0", 9, &mut inexact), Ok(0));
        assert!(!inexact);
        assert_eq!(date(b"0.0000000015", 9, &mut inexact), Ok(2));
        assert!(inexact);
        let mut inexact = false;
        assert_eq!(date(b"0.0000000015", 10, &mut inexact), Ok(15));
        assert!(!inexact);
        assert_eq!(date(b"-1", 9, &mut inexact), Err(DateError::Negative));
        assert_eq!(date(b"NA", 9, &mut inexact), Err(DateError::Syntax));
        assert_eq!(date(b"1.2.3", 9, &mut inexact), Err(DateError::Syntax));
        assert_eq!(date(b"", 9, &mut inexact), Err(DateError::Syntax));
        assert_eq!(date(b".", 9, &mut inexact), Err(DateError::Syntax));
        assert_eq!(date(b"1e400", 9, &mut inexact), Err(DateError::Overflow));
        assert_eq!(
            date(b"99999999999999999999", 9, &mut inexact),
            Err(DateError::Overflow)
        );
    }

    #[test]
    fn counts_tolerate_decimals_and_na() {
        assert_eq!(lenient_count(b"1024"), Some(1024));
        assert_eq!(lenient_count(b"3.000000"), Some(3));
        assert_eq!(lenient_count(b"NA"), None);
        assert_eq!(lenient_count(b"1e3"), None);
    }
}

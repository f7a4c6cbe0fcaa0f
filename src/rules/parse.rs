//! The pattern language's syntax: a small expression language (docs/rules.md).
//!
//! ```text
//! expr   := 'if' expr 'then' expr 'else' expr | or
//! or     := and ('||' and)*          and := not ('&&' not)*
//! not    := '!' not | cmp            cmp := sum (('=='|'!='|'<'|'<='|'>'|'>='|'in') sum)?
//! sum    := prod (('+'|'-') prod)*   prod := unary (('*'|'/') unary)*
//! unary  := '-' unary | postfix      postfix := atom ('.' IDENT)*
//! atom   := NUMBER | STRING | 'true' | 'false' | '[' list ']' | '(' expr ')'
//!         | IDENT '(' IDENT 'in' IDENT ('where' expr)? ':' expr ')'     -- aggregate
//!         | IDENT '(' list ')' | IDENT
//! ```

/// A position in the expression text (0-based byte offset).
pub type Pos = usize;

#[derive(Clone, Debug, PartialEq)]
pub enum Ast {
    Num(f64, Pos),
    Str(String, Pos),
    Bool(bool, Pos),
    List(Vec<Ast>, Pos),
    Var(String, Pos),
    Field(Box<Ast>, String, Pos),
    Call(String, Vec<Ast>, Pos),
    /// `op(var in coll where cond: body)`
    Aggregate {
        op: String,
        var: String,
        coll: String,
        cond: Option<Box<Ast>>,
        body: Box<Ast>,
        pos: Pos,
    },
    Unary(char, Box<Ast>, Pos),
    Binary(&'static str, Box<Ast>, Box<Ast>, Pos),
    If(Box<Ast>, Box<Ast>, Box<Ast>, Pos),
}

impl Ast {
    pub fn pos(&self) -> Pos {
        match self {
            Ast::Num(_, p)
            | Ast::Str(_, p)
            | Ast::Bool(_, p)
            | Ast::List(_, p)
            | Ast::Var(_, p)
            | Ast::Field(_, _, p)
            | Ast::Call(_, _, p)
            | Ast::Unary(_, _, p)
            | Ast::Binary(_, _, _, p)
            | Ast::If(_, _, _, p) => *p,
            Ast::Aggregate { pos, .. } => *pos,
        }
    }

    /// Where the expression starts in the text: for an error about the expression as a whole
    /// (its type), rather than about its operator or last field name (`pos`).
    pub fn start(&self) -> Pos {
        match self {
            Ast::Binary(_, a, _, _) => a.start(),
            Ast::Field(base, _, _) => base.start(),
            _ => self.pos(),
        }
    }
}

/// Words of the syntax that can never be names.
pub const KEYWORDS: [&str; 7] = ["if", "then", "else", "in", "where", "true", "false"];

fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// A syntax or type error at a position of the expression text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LangError {
    pub pos: Pos,
    pub msg: String,
}

fn err<T>(pos: Pos, msg: impl Into<String>) -> Result<T, LangError> {
    Err(LangError {
        pos,
        msg: msg.into(),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Sym(&'static str),
    End,
}

fn lex(src: &str) -> Result<Vec<(Tok, Pos)>, LangError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    const SYMS: [&str; 20] = [
        "==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "(", ")", "[", "]", ",",
        ".", ":", "!",
    ];
    'outer: while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'_') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text: String = src[start..i].chars().filter(|&c| c != '_').collect();
            match text.parse::<f64>() {
                Ok(v) => out.push((Tok::Num(v), start)),
                Err(_) => return err(start, format!("malformed number `{}`", &src[start..i])),
            }
            continue;
        }
        if c == b'\'' || c == b'"' {
            let start = i;
            i += 1;
            let s = i;
            while i < b.len() && b[i] != c {
                i += 1;
            }
            if i >= b.len() {
                return err(start, "unterminated string");
            }
            out.push((Tok::Str(src[s..i].to_string()), start));
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), start));
            continue;
        }
        for s in SYMS {
            if src[i..].starts_with(s) {
                out.push((Tok::Sym(s), i));
                i += s.len();
                continue 'outer;
            }
        }
        return err(
            i,
            format!(
                "unexpected character `{}`",
                src[i..].chars().next().unwrap_or('?')
            ),
        );
    }
    out.push((Tok::End, src.len()));
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, Pos)>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.i].0
    }

    fn pos(&self) -> Pos {
        self.toks[self.i].1
    }

    fn bump(&mut self) -> (Tok, Pos) {
        let t = self.toks[self.i].clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }

    fn is_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(x) if x == k)
    }

    fn expect_sym(&mut self, s: &str) -> Result<(), LangError> {
        if self.is_sym(s) {
            self.bump();
            Ok(())
        } else {
            err(
                self.pos(),
                format!("expected `{s}`, found {}", describe(self.peek())),
            )
        }
    }

    fn expect_kw(&mut self, k: &str) -> Result<(), LangError> {
        if self.is_kw(k) {
            self.bump();
            Ok(())
        } else {
            err(
                self.pos(),
                format!("expected `{k}`, found {}", describe(self.peek())),
            )
        }
    }

    fn ident(&mut self) -> Result<(String, Pos), LangError> {
        match self.bump() {
            (Tok::Ident(s), p) if is_keyword(&s) => {
                err(p, format!("expected a name, found the keyword `{s}`"))
            }
            (Tok::Ident(s), p) => Ok((s, p)),
            (t, p) => err(p, format!("expected a name, found {}", describe(&t))),
        }
    }

    fn expr(&mut self) -> Result<Ast, LangError> {
        if self.is_kw("if") {
            let p = self.bump().1;
            let c = self.expr()?;
            self.expect_kw("then")?;
            let a = self.expr()?;
            self.expect_kw("else")?;
            let b = self.expr()?;
            return Ok(Ast::If(Box::new(c), Box::new(a), Box::new(b), p));
        }
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> Result<Ast, LangError> {
        const LEVELS: [&[&str]; 5] = [
            &["||"],
            &["&&"],
            &["==", "!=", "<", "<=", ">", ">=", "in"],
            &["+", "-"],
            &["*", "/"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        if level == 2 && self.is_sym("!") {
            let p = self.bump().1;
            let e = self.binary(2)?;
            return Ok(Ast::Unary('!', Box::new(e), p));
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Sym(s) if LEVELS[level].contains(s) => *s,
                Tok::Ident(s) if s == "in" && level == 2 => "in",
                _ => return Ok(lhs),
            };
            let p = self.bump().1;
            let rhs = self.binary(level + 1)?;
            lhs = Ast::Binary(op, Box::new(lhs), Box::new(rhs), p);
            if level == 2 {
                return Ok(lhs); // comparisons do not chain
            }
        }
    }

    fn unary(&mut self) -> Result<Ast, LangError> {
        if self.is_sym("-") {
            let p = self.bump().1;
            let e = self.unary()?;
            return Ok(Ast::Unary('-', Box::new(e), p));
        }
        let mut e = self.atom()?;
        while self.is_sym(".") {
            self.bump();
            let (f, p) = self.ident()?;
            e = Ast::Field(Box::new(e), f, p);
        }
        Ok(e)
    }

    fn list(&mut self, close: &str) -> Result<Vec<Ast>, LangError> {
        let mut items = Vec::new();
        if self.is_sym(close) {
            self.bump();
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.is_sym(",") {
                self.bump();
                continue;
            }
            self.expect_sym(close)?;
            return Ok(items);
        }
    }

    fn atom(&mut self) -> Result<Ast, LangError> {
        let (t, p) = self.bump();
        match t {
            Tok::Num(v) => Ok(Ast::Num(v, p)),
            Tok::Str(s) => Ok(Ast::Str(s, p)),
            Tok::Sym("(") => {
                let e = self.expr()?;
                self.expect_sym(")")?;
                Ok(e)
            }
            Tok::Sym("[") => Ok(Ast::List(self.list("]")?, p)),
            Tok::Ident(name) if name == "true" || name == "false" => {
                Ok(Ast::Bool(name == "true", p))
            }
            Tok::Ident(name) if is_keyword(&name) => err(
                p,
                format!("expected an expression, found the keyword `{name}`"),
            ),
            Tok::Ident(name) => {
                if !self.is_sym("(") {
                    return Ok(Ast::Var(name, p));
                }
                self.bump();
                // aggregate: name(var in coll [where cond]: body)
                let is_agg = matches!(self.peek(), Tok::Ident(_))
                    && matches!(&self.toks[self.i + 1].0, Tok::Ident(k) if k == "in");
                if is_agg {
                    let (var, _) = self.ident()?;
                    self.expect_kw("in")?;
                    let (coll, _) = self.ident()?;
                    let cond = if self.is_kw("where") {
                        self.bump();
                        Some(Box::new(self.expr()?))
                    } else {
                        None
                    };
                    self.expect_sym(":")?;
                    let body = self.expr()?;
                    self.expect_sym(")")?;
                    return Ok(Ast::Aggregate {
                        op: name,
                        var,
                        coll,
                        cond,
                        body: Box::new(body),
                        pos: p,
                    });
                }
                Ok(Ast::Call(name, self.list(")")?, p))
            }
            t => err(p, format!("expected an expression, found {}", describe(&t))),
        }
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(v) => format!("number {v}"),
        Tok::Str(s) => format!("string '{s}'"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Sym(s) => format!("`{s}`"),
        Tok::End => "the end of the expression".into(),
    }
}

/// Parse one expression.
pub fn parse(src: &str) -> Result<Ast, LangError> {
    let mut p = Parser {
        toks: lex(src)?,
        i: 0,
    };
    let e = p.expr()?;
    if !matches!(p.peek(), Tok::End) {
        return err(
            p.pos(),
            format!("unexpected {} after the expression", describe(p.peek())),
        );
    }
    Ok(e)
}

/// Parse a binding `name = expr` (or `m.name = expr` for a per-member binding).
pub fn parse_binding(src: &str) -> Result<(Option<String>, String, Pos, Ast), LangError> {
    let Some(eq) = src.find('=').filter(|&k| !src[k + 1..].starts_with('=')) else {
        return err(0, "expected a binding `name = expression`");
    };
    let lhs = src[..eq].trim();
    let (scope, name) = match lhs.split_once('.') {
        Some((s, n)) => (Some(s.trim().to_string()), n.trim().to_string()),
        None => (None, lhs.to_string()),
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !valid(&name) || scope.as_deref().is_some_and(|s| !valid(s)) {
        return err(0, format!("`{lhs}` is not a name to bind"));
    }
    if let Some(k) = [scope.as_deref(), Some(name.as_str())]
        .into_iter()
        .flatten()
        .find(|s| is_keyword(s))
    {
        return err(0, format!("`{k}` is a keyword, not a name to bind"));
    }
    let body = &src[eq + 1..];
    let offset = eq + 1;
    let ast = parse(body).map_err(|e| LangError {
        pos: e.pos + offset,
        msg: e.msg,
    })?;
    Ok((scope, name, offset, shift(ast, offset)))
}

/// Move every position of an expression by `d` (for expressions cut out of a larger text).
fn shift(a: Ast, d: Pos) -> Ast {
    let b = |x: Box<Ast>| Box::new(shift(*x, d));
    match a {
        Ast::Num(v, p) => Ast::Num(v, p + d),
        Ast::Str(s, p) => Ast::Str(s, p + d),
        Ast::Bool(v, p) => Ast::Bool(v, p + d),
        Ast::List(v, p) => Ast::List(v.into_iter().map(|x| shift(x, d)).collect(), p + d),
        Ast::Var(s, p) => Ast::Var(s, p + d),
        Ast::Field(x, f, p) => Ast::Field(b(x), f, p + d),
        Ast::Call(n, v, p) => Ast::Call(n, v.into_iter().map(|x| shift(x, d)).collect(), p + d),
        Ast::Aggregate {
            op,
            var,
            coll,
            cond,
            body,
            pos,
        } => Ast::Aggregate {
            op,
            var,
            coll,
            cond: cond.map(b),
            body: b(body),
            pos: pos + d,
        },
        Ast::Unary(o, x, p) => Ast::Unary(o, b(x), p + d),
        Ast::Binary(o, x, y, p) => Ast::Binary(o, b(x), b(y), p + d),
        Ast::If(c, x, y, p) => Ast::If(b(c), b(x), b(y), p + d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_postfix() {
        let a = parse("pos(min(S.enter.time, R.leave.time) - R.enter.time) > 0 && !x").unwrap();
        assert!(matches!(a, Ast::Binary("&&", _, _, _)));
        let a = parse("1 + 2 * 3").unwrap();
        let Ast::Binary("+", _, r, _) = a else {
            panic!()
        };
        assert!(matches!(*r, Ast::Binary("*", _, _, _)));
    }

    #[test]
    fn aggregates_and_lists() {
        let a = parse("max(m in members where m.sent > 0: m.begin)").unwrap();
        assert!(matches!(a, Ast::Aggregate { ref op, cond: Some(_), .. } if op == "max"));
        assert!(matches!(
            parse("op in ['BARRIER', 'BCAST']").unwrap(),
            Ast::Binary("in", _, _, _)
        ));
    }

    #[test]
    fn errors_carry_positions() {
        assert_eq!(parse("1 +").unwrap_err().pos, 3);
        assert_eq!(parse("a $ b").unwrap_err().pos, 2);
        assert_eq!(parse("'abc").unwrap_err().msg, "unterminated string");
        let e = parse_binding("x = 1 + )").unwrap_err();
        assert_eq!(e.pos, 8);
    }

    #[test]
    fn start_is_the_leftmost_token() {
        let a = parse("R.time - S.enter.time").unwrap();
        assert_eq!((a.pos(), a.start()), (7, 0));
        let a = parse("(x).y.z").unwrap();
        assert_eq!((a.pos(), a.start()), (6, 1));
    }

    #[test]
    fn keywords_are_not_names() {
        for src in ["then + 1", "1 + in", "x == where", "if then then 1 else 2"] {
            let e = parse(src).unwrap_err();
            assert!(e.msg.contains("keyword"), "{src}: {}", e.msg);
        }
        assert_eq!(
            parse("1 + if").unwrap_err().msg,
            "expected an expression, found the keyword `if`"
        );
        assert_eq!(
            parse("R.if").unwrap_err().msg,
            "expected a name, found the keyword `if`"
        );
        assert!(parse("max(in in members: 1)").is_err());
        assert_eq!(
            parse_binding("else = 1").unwrap_err().msg,
            "`else` is a keyword, not a name to bind"
        );
        assert!(parse_binding("m.true = 1").is_err());
        // names that merely start with a keyword are names
        assert!(parse("iff + thenx + input").is_ok());
    }

    #[test]
    fn bindings() {
        let (scope, name, _, _) = parse_binding("m.sync = m.recv > 0").unwrap();
        assert_eq!((scope.as_deref(), name.as_str()), (Some("m"), "sync"));
        assert!(parse_binding("1x = 2").is_err());
    }
}

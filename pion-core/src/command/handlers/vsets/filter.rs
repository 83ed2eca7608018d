//! `VSIM … FILTER`: Redis's small expression language over an element's JSON
//! attributes, parsed once per query and evaluated per candidate.
//!
//! ```text
//! expr    = or
//! or      = and (("or" | "||") and)*
//! and     = cmp (("and" | "&&") cmp)*
//! cmp     = sum (("==" | "!=" | ">" | ">=" | "<" | "<=" | "in") sum)*
//! sum     = product (("+" | "-") product)*
//! product = power (("*" | "/" | "%") power)*
//! power   = unary ("**" power)?
//! unary   = ("!" | "not") primary | primary
//! primary = number | string | .field | [literal, …] | null | "(" expr ")"
//! ```
//!
//! Values are numbers, strings, null and tuples. JSON booleans read as 1 and 0. An
//! element without attributes never matches, and neither does one for which any
//! `.field` the expression names is missing (or whose attributes are not a JSON
//! object). Comparisons and arithmetic read strings as numbers (C `strtod` of the
//! whole string, else 0); `==` compares two strings as strings; `x in [..]` tests
//! membership with `==`, `"s" in "string"` tests for a substring. Strings are
//! quoted with `"` or `'`; a backslash escapes the next character.
//!
//! Syntax errors read `ERR syntax error in FILTER expression near: <rest>`, where the
//! rest starts where the tokenizer stopped, or is the whole expression when the
//! tokens do not form an expression (as Redis reports them).

use std::borrow::Cow;

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    expr: Expr,
    /// The fields the expression names, each once: all an evaluation reads of the
    /// attributes.
    fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Or,
    And,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Not,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(Vec<u8>),
    Sel(String),
    Tuple(Vec<Field<'static>>),
    Null,
    Op(Op),
    Open,
    Close,
}

impl Tok {
    fn is_operand(&self) -> bool {
        matches!(
            self,
            Tok::Num(_) | Tok::Str(_) | Tok::Sel(_) | Tok::Tuple(_) | Tok::Null | Tok::Close
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Str(Vec<u8>),
    Sel(String),
    Tuple(Vec<Field<'static>>),
    Null,
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
}

/// Operators matched longest first.
const OPS: &[(&str, Op)] = &[
    ("**", Op::Pow),
    ("==", Op::Eq),
    ("!=", Op::Ne),
    (">=", Op::Ge),
    ("<=", Op::Le),
    ("&&", Op::And),
    ("||", Op::Or),
    ("!", Op::Not),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("+", Op::Add),
    ("-", Op::Sub),
    ("*", Op::Mul),
    ("/", Op::Div),
    ("%", Op::Mod),
];

fn is_op_char(c: u8) -> bool {
    b"=!<>&|*+-/%".contains(&c)
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Scans a number at `i` (a `-` sign allowed first); returns its end.
fn scan_number(src: &[u8], mut i: usize) -> usize {
    if src.get(i) == Some(&b'-') {
        i += 1;
    }
    while i < src.len() {
        let c = src[i];
        let sign_after_exp = (c == b'+' || c == b'-') && matches!(src[i - 1], b'e' | b'E');
        if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || sign_after_exp {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn parse_number(src: &[u8], start: usize) -> Result<(f64, usize), usize> {
    let end = scan_number(src, start);
    std::str::from_utf8(&src[start..end])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .map(|n| (n, end))
        .ok_or(start)
}

/// Scans a quoted string at `i` (a backslash escapes the next byte).
fn parse_string(src: &[u8], start: usize) -> Result<(Vec<u8>, usize), usize> {
    let quote = src[start];
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < src.len() {
        match src[i] {
            b'\\' if i + 1 < src.len() => {
                out.push(src[i + 1]);
                i += 2;
            }
            c if c == quote => return Ok((out, i + 1)),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err(start)
}

fn starts_number(src: &[u8], i: usize, prev_operand: bool) -> bool {
    let c = src[i];
    c.is_ascii_digit()
        || (c == b'-' && !prev_operand && src.get(i + 1).is_some_and(u8::is_ascii_digit))
}

/// Splits the expression into tokens; `Err` holds the position where it stopped.
fn tokenize(src: &[u8]) -> Result<Vec<Tok>, usize> {
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        let prev_operand = toks.last().is_some_and(Tok::is_operand);
        let tok = if c == b'(' {
            i += 1;
            Tok::Open
        } else if c == b')' {
            i += 1;
            Tok::Close
        } else if starts_number(src, i, prev_operand) {
            let (n, end) = parse_number(src, i)?;
            i = end;
            Tok::Num(n)
        } else if c == b'"' || c == b'\'' {
            let (s, end) = parse_string(src, i)?;
            i = end;
            Tok::Str(s)
        } else if c == b'.' {
            let start = i + 1;
            i = start;
            while i < src.len() && (src[i].is_ascii_alphanumeric() || matches!(src[i], b'_' | b'-'))
            {
                i += 1;
            }
            Tok::Sel(String::from_utf8_lossy(&src[start..i]).into_owned())
        } else if c == b'[' {
            let (t, end) = parse_tuple(src, i)?;
            i = end;
            Tok::Tuple(t)
        } else if c.is_ascii_alphabetic() {
            let start = i;
            while i < src.len() && src[i].is_ascii_alphabetic() {
                i += 1;
            }
            match &src[start..i] {
                b"and" => Tok::Op(Op::And),
                b"or" => Tok::Op(Op::Or),
                b"not" => Tok::Op(Op::Not),
                b"in" => Tok::Op(Op::In),
                b"null" => Tok::Null,
                _ => return Err(i),
            }
        } else if is_op_char(c) {
            match OPS.iter().find(|(t, _)| src[i..].starts_with(t.as_bytes())) {
                Some((t, op)) => {
                    i += t.len();
                    Tok::Op(*op)
                }
                None => {
                    while i < src.len() && is_op_char(src[i]) {
                        i += 1;
                    }
                    return Err(i);
                }
            }
        } else {
            return Err(i);
        };
        toks.push(tok);
    }
    Ok(toks)
}

/// A tuple literal at `start` (`[`): numbers and strings, commas between, a trailing
/// comma allowed.
fn parse_tuple(src: &[u8], start: usize) -> Result<(Vec<Field<'static>>, usize), usize> {
    let mut items = Vec::new();
    let mut i = start + 1;
    let skip = |i: &mut usize| {
        while *i < src.len() && is_space(src[*i]) {
            *i += 1;
        }
    };
    loop {
        skip(&mut i);
        match src.get(i) {
            None => return Err(i),
            Some(b']') => return Ok((items, i + 1)),
            Some(b'"' | b'\'') => {
                let (s, end) = parse_string(src, i)?;
                items.push(Field::Str(Cow::Owned(s)));
                i = end;
            }
            Some(_) if starts_number(src, i, false) => {
                let (n, end) = parse_number(src, i)?;
                items.push(Field::Num(n));
                i = end;
            }
            Some(_) => return Err(i),
        }
        skip(&mut i);
        match src.get(i) {
            Some(b',') => i += 1,
            Some(b']') => return Ok((items, i + 1)),
            _ => return Err(i),
        }
    }
}

/// Binding power of a binary operator (higher binds tighter).
fn binding(op: Op) -> Option<u8> {
    Some(match op {
        Op::Or => 0,
        Op::And => 1,
        Op::Eq | Op::Ne | Op::Gt | Op::Ge | Op::Lt | Op::Le | Op::In => 2,
        Op::Add | Op::Sub => 3,
        Op::Mul | Op::Div | Op::Mod => 4,
        Op::Pow => 5,
        Op::Not => return None,
    })
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expr(&mut self, min: u8) -> Option<Expr> {
        let mut left = self.unary()?;
        while let Some(Tok::Op(op)) = self.toks.get(self.pos) {
            let op = *op;
            let power = binding(op)?;
            if power < min {
                break;
            }
            self.pos += 1;
            // `**` is right-associative; the rest left-associative.
            let next_min = if op == Op::Pow { power } else { power + 1 };
            let right = self.expr(next_min)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr> {
        if self.toks.get(self.pos) == Some(&Tok::Op(Op::Not)) {
            self.pos += 1;
            return Some(Expr::Not(Box::new(self.primary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Expr> {
        Some(match self.next()? {
            Tok::Num(n) => Expr::Num(n),
            Tok::Str(s) => Expr::Str(s),
            Tok::Sel(s) => Expr::Sel(s),
            Tok::Tuple(t) => Expr::Tuple(t),
            Tok::Null => Expr::Null,
            Tok::Open => {
                let e = self.expr(0)?;
                if self.next()? != Tok::Close {
                    return None;
                }
                e
            }
            Tok::Op(_) | Tok::Close => return None,
        })
    }
}

impl Filter {
    /// Parses an expression, or returns Redis's error text.
    pub fn parse(src: &[u8]) -> Result<Filter, String> {
        let err = |at: usize| {
            let near = if at >= src.len() { src } else { &src[at..] };
            format!(
                "ERR syntax error in FILTER expression near: {}",
                String::from_utf8_lossy(near)
            )
        };
        let toks = tokenize(src).map_err(err)?;
        let mut p = Parser { toks, pos: 0 };
        match p.expr(0) {
            Some(expr) if p.pos == p.toks.len() => {
                let mut fields = Vec::new();
                expr.collect_fields(&mut fields);
                Ok(Filter { expr, fields })
            }
            _ => Err(err(0)),
        }
    }

    /// Whether an element with these attributes passes. Only the fields the
    /// expression names are read out of them (an expression naming none does not
    /// read them at all), and strings are compared where they lie.
    pub fn matches(&self, attr: Option<&[u8]>) -> bool {
        let Some(attr) = attr else {
            return false;
        };
        let doc = if self.fields.is_empty() {
            None
        } else {
            super::attrs::read(attr, &self.fields).map(|values| Doc {
                names: &self.fields,
                values,
            })
        };
        eval(&self.expr, doc.as_ref()).is_some_and(|v| v.truthy())
    }
}

impl Expr {
    /// Adds the fields this expression names to `out`, each once.
    fn collect_fields(&self, out: &mut Vec<String>) {
        match self {
            Expr::Sel(name) if !out.contains(name) => out.push(name.clone()),
            Expr::Not(inner) => inner.collect_fields(out),
            Expr::Bin(_, l, r) => {
                l.collect_fields(out);
                r.collect_fields(out);
            }
            _ => {}
        }
    }
}

/// A value held: a tuple literal's item, or a field read out of an element's
/// attributes (JSON booleans as 1 and 0; an array of scalars as a tuple; a string
/// borrowed from the attributes unless it had escapes to decode).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Field<'a> {
    Num(f64),
    Str(Cow<'a, [u8]>),
    Null,
    Tuple(Vec<Field<'a>>),
}

impl Field<'_> {
    /// The value, as the evaluation works on it.
    fn view(&self) -> V<'_> {
        match self {
            Field::Num(n) => V::Num(*n),
            Field::Str(s) => V::Str(s),
            Field::Null => V::Null,
            Field::Tuple(items) => V::Tuple(items),
        }
    }
}

/// The named fields of one element's attributes, when they are a JSON object: by
/// the names' positions, `None` for one missing or holding a value the language
/// has no use for (an object, an array holding more than scalars).
struct Doc<'a> {
    names: &'a [String],
    values: super::attrs::Values<'a>,
}

impl Doc<'_> {
    fn get(&self, name: &str) -> Option<&Field<'_>> {
        let i = self.names.iter().position(|n| n == name)?;
        self.values.get(i)?.as_ref()
    }
}

/// A value during evaluation: it borrows the expression's literals and the
/// element's fields, so testing an element allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum V<'a> {
    Num(f64),
    Str(&'a [u8]),
    Null,
    Tuple(&'a [Field<'a>]),
}

impl V<'_> {
    fn truthy(&self) -> bool {
        match self {
            V::Num(n) => *n != 0.0,
            V::Str(s) => !s.is_empty(),
            V::Null => false,
            V::Tuple(_) => true,
        }
    }

    fn num(&self) -> f64 {
        match self {
            V::Num(n) => *n,
            V::Str(s) => {
                let r = crate::util::strtod::strtod(s);
                if r.len == s.len() && !s.is_empty() {
                    r.value
                } else {
                    0.0
                }
            }
            V::Null | V::Tuple(_) => 0.0,
        }
    }
}

fn equal(a: &V<'_>, b: &V<'_>) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Null, _) | (_, V::Null) => false,
        (V::Str(x), V::Str(y)) => x == y,
        _ => a.num() == b.num(),
    }
}

fn bool_v(b: bool) -> V<'static> {
    V::Num(f64::from(u8::from(b)))
}

/// Evaluates; `None` when a field the expression names is missing (or the
/// attributes are not a JSON object).
fn eval<'a>(e: &'a Expr, obj: Option<&'a Doc<'_>>) -> Option<V<'a>> {
    Some(match e {
        Expr::Num(n) => V::Num(*n),
        Expr::Str(s) => V::Str(s),
        Expr::Null => V::Null,
        Expr::Tuple(t) => V::Tuple(t),
        Expr::Sel(name) => obj?.get(name)?.view(),
        Expr::Not(inner) => bool_v(!eval(inner, obj)?.truthy()),
        Expr::Bin(op, l, r) => {
            let (a, b) = (eval(l, obj)?, eval(r, obj)?);
            match op {
                Op::Or => bool_v(a.truthy() || b.truthy()),
                Op::And => bool_v(a.truthy() && b.truthy()),
                Op::Eq => bool_v(equal(&a, &b)),
                Op::Ne => bool_v(!equal(&a, &b)),
                Op::Gt => bool_v(a.num() > b.num()),
                Op::Ge => bool_v(a.num() >= b.num()),
                Op::Lt => bool_v(a.num() < b.num()),
                Op::Le => bool_v(a.num() <= b.num()),
                Op::In => bool_v(match (&a, &b) {
                    (_, V::Tuple(items)) => items.iter().any(|i| equal(&a, &i.view())),
                    (V::Str(needle), V::Str(hay)) => {
                        needle.is_empty() || hay.windows(needle.len()).any(|w| w == *needle)
                    }
                    _ => false,
                }),
                Op::Add => V::Num(a.num() + b.num()),
                Op::Sub => V::Num(a.num() - b.num()),
                Op::Mul => V::Num(a.num() * b.num()),
                Op::Div => V::Num(a.num() / b.num()),
                Op::Mod => V::Num(a.num() % b.num()),
                Op::Pow => V::Num(a.num().powf(b.num())),
                Op::Not => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: &[u8] =
        br#"{"year":1990,"genre":"drama","rating":7.5,"tags":["x","y"],"ok":true,"n":null}"#;
    const B: &[u8] = br#"{"year":1940,"genre":"comedy","rating":8,"ok":false}"#;

    fn m(expr: &str, attr: &[u8]) -> bool {
        Filter::parse(expr.as_bytes())
            .expect("parses")
            .matches(Some(attr))
    }

    fn err(expr: &str) -> String {
        Filter::parse(expr.as_bytes()).expect_err("syntax error")
    }

    #[test]
    fn comparisons_logic_and_arithmetic() {
        assert!(m(".year > 1950", A));
        assert!(!m(".year > 1950", B));
        assert!(m(".genre == \"drama\" and .year > 1950", A));
        assert!(m(".genre == 'drama' && .rating >= 7.5", A));
        assert!(m("!(.year > 1950)", B));
        assert!(!m("not .year > 1950", A));
        assert!(m(".year + 10 == 2000", A));
        assert!(m(".year % 100 == 90", A));
        assert!(m("2 ** 3 ** 2 == 512", A));
        assert!(m("10 - 2 - 3 == 5", A));
        assert!(m("1 or 0 and 0", A));
        assert!(m(".ok == 1", A));
        assert!(!m(".ok", B));
        assert!(m(".n == null", A));
        assert!(!m("null == 0", A));
        assert!(m("\"10\" > \"9\"", A));
        assert!(!m("\"10x\" == 10", A));
        assert!(m("\"abc\" == 0", A));
        assert!(m("-1 < 0", A));
        assert!(m("2-1 == 1", A));
        assert!(m("not0", A));
        assert!(m("(1)and(1)", A));
    }

    #[test]
    fn containment() {
        assert!(m("\"x\" in .tags", A));
        assert!(m(".genre in [\"drama\", \"comedy\"]", B));
        assert!(m(".year in [1990, 1940,]", A));
        assert!(m("\"rama\" in .genre", A));
        assert!(!m("1 in \"1\"", A));
        assert!(m("\"1\" in [1]", A));
    }

    #[test]
    fn missing_fields_and_attributes_exclude() {
        assert!(!m(".missing == 1 or 1", A));
        assert!(!m(".missing != 1", A));
        assert!(!m(".year-1 == 1989", A));
        let f = Filter::parse(b"1").expect("parses");
        assert!(!f.matches(None));
        assert!(f.matches(Some(b"not json")));
        assert!(!Filter::parse(b".x").expect("parses").matches(Some(b"[1]")));
    }

    #[test]
    fn syntax_errors_say_where() {
        let near = |s: &str| format!("ERR syntax error in FILTER expression near: {s}");
        assert_eq!(err(".year >"), near(".year >"));
        assert_eq!(err(".year = 1990"), near(" 1990"));
        assert_eq!(err(".year === 1990"), near(" 1990"));
        assert_eq!(err(".year ^ 1"), near("^ 1"));
        assert_eq!(err("1 AND 1"), near(" 1"));
        assert_eq!(err("AND"), near("AND"));
        assert_eq!(err("true"), near("true"));
        assert_eq!(err("0x10 == 16"), near("10 == 16"));
        assert_eq!(err("[1 2]"), near("2]"));
        assert_eq!(err("[null]"), near("null]"));
        assert_eq!(err(r#".genre == "dr"ama""#), near("\""));
        assert!(m(r#".genre == "dr\ama" or 1"#, A));
        assert_eq!(err("!!1"), near("!!1"));
        assert_eq!(err("not not 1"), near("not not 1"));
        assert_eq!(err("- 1 < 0"), near("- 1 < 0"));
        assert_eq!(err("1 + abc "), near(" "));
        assert_eq!(err(""), near(""));
        assert_eq!(err("()"), near("()"));
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(f) = Filter::parse(&src) {
                let _ = f.matches(Some(A));
                let _ = f.matches(Some(b"[]"));
            }
        }

        #[test]
        fn never_panics_on_near_valid(src in "[ .a-z0-9\"'\\[\\],()!=<>&|*+/%-]{0,30}") {
            if let Ok(f) = Filter::parse(src.as_bytes()) {
                let _ = f.matches(Some(A));
            }
        }
    }
}

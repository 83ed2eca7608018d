//! The expression language of `APPLY` and `FILTER`: numbers, quoted strings, `@field`
//! references, `NULL`, arithmetic (`+ - * / % ^`), comparisons, `&& || !`,
//! parentheses and a set of functions (see [`FUNCTIONS`]).
//!
//! It follows RediSearch 2.10 closely because clients see its corners: the lexer
//! skips characters it does not know and glues a leading `-` to numbers (`1-1` is two
//! numbers, a syntax error), `&&` and `||` share one precedence level, `^` binds
//! like `*` and groups to the left, `!` binds looser than comparisons, division by
//! zero gives NaN, and the error texts (offsets, the `near` token, the order in which
//! a syntax error and an unknown name are reported) are RediSearch's. Function arity and argument types are
//! checked when a row is evaluated, as RediSearch does, so a query that matches
//! nothing never reports them.

/// A token of the expression text.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(Vec<u8>),
    Prop(Vec<u8>),
    Sym(Vec<u8>),
    Op(Op),
    Not,
    Minus,
    LParen,
    RParen,
    Comma,
    End,
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-` (binary)
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `^`
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
}

impl Op {
    fn binding(self) -> u8 {
        match self {
            Op::And | Op::Or => 1,
            Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => 3,
            Op::Add | Op::Sub => 4,
            // `^` shares the level of `*`: `2*3^2` is 36.
            Op::Mul | Op::Div | Op::Mod | Op::Pow => 5,
        }
    }

    /// Whether the operator computes a number (`+ - * / % ^`), not a predicate.
    pub fn is_arithmetic(self) -> bool {
        self.binding() >= 4
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Mod => "%",
            Op::Pow => "^",
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::And => "&&",
            Op::Or => "||",
        }
    }
}

/// A token with its byte offset and the text RediSearch quotes in errors (only
/// literals and names carry text).
#[derive(Debug, Clone)]
struct Lexeme {
    tok: Tok,
    pos: usize,
    text: Option<Vec<u8>>,
}

fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The length of a number starting at `s[0]` (`-?digits(.digits)?([eE]-?digits)?`).
fn number_len(s: &[u8]) -> usize {
    let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(s.first() == Some(&b'-'));
    let d = digits(i);
    if d == 0 {
        return 0;
    }
    i += d;
    if s.get(i) == Some(&b'.') {
        let f = digits(i + 1);
        if f > 0 {
            i += 1 + f;
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(s.get(i + 1) == Some(&b'-'));
        let e = digits(i + 1 + sign);
        if e > 0 {
            i += 1 + sign + e;
        }
    }
    i
}

/// The end of a quoted string starting at `s[start]`, if it is closed.
fn string_end(s: &[u8], start: usize) -> Option<usize> {
    let quote = s[start];
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A string literal's value: a backslash before a quote or a backslash escapes it,
/// any other backslash stays.
fn unquote(raw: &[u8]) -> Vec<u8> {
    let inner = &raw[1..raw.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == b'\\' && matches!(inner.get(i + 1), Some(b'\\' | b'\'' | b'"')) {
            i += 1;
        }
        out.push(inner[i]);
        i += 1;
    }
    out
}

fn lex(s: &[u8]) -> Vec<Lexeme> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let pos = i;
        let two = s.get(i..i + 2).unwrap_or_default();
        let op2 = match two {
            b"==" => Some(Op::Eq),
            b"!=" => Some(Op::Ne),
            b"<=" => Some(Op::Le),
            b">=" => Some(Op::Ge),
            b"&&" => Some(Op::And),
            b"||" => Some(Op::Or),
            _ => None,
        };
        let (tok, len, text) = if let Some(op) = op2 {
            (Tok::Op(op), 2, None)
        } else if c.is_ascii_digit() || (c == b'-' && s.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let n = number_len(&s[i..]);
            let text = s[i..i + n].to_vec();
            let value = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or(0.0);
            (Tok::Num(value), n, Some(text))
        } else if c == b'\'' || c == b'"' {
            match string_end(s, i) {
                Some(end) => {
                    let raw = &s[i..end];
                    (Tok::Str(unquote(raw)), end - i, Some(raw.to_vec()))
                }
                None => {
                    i += 1;
                    continue;
                }
            }
        } else if c == b'@' && s.get(i + 1).is_some_and(|&c| is_name(c)) {
            let n = s[i + 1..].iter().take_while(|&&c| is_name(c)).count();
            let name = s[i + 1..i + 1 + n].to_vec();
            (Tok::Prop(name.clone()), n + 1, Some(name))
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let n = s[i..].iter().take_while(|&&c| is_name(c)).count();
            let name = s[i..i + n].to_vec();
            (Tok::Sym(name.clone()), n, Some(name))
        } else {
            let tok = match c {
                b'+' => Tok::Op(Op::Add),
                b'-' => Tok::Minus,
                b'*' => Tok::Op(Op::Mul),
                b'/' => Tok::Op(Op::Div),
                b'%' => Tok::Op(Op::Mod),
                b'^' => Tok::Op(Op::Pow),
                b'<' => Tok::Op(Op::Lt),
                b'>' => Tok::Op(Op::Gt),
                b'!' => Tok::Not,
                b'(' => Tok::LParen,
                b')' => Tok::RParen,
                b',' => Tok::Comma,
                // Whitespace and characters the language does not know are skipped.
                _ => {
                    i += 1;
                    continue;
                }
            };
            (tok, 1, None)
        };
        out.push(Lexeme { tok, pos, text });
        i = pos + len;
    }
    let pos = out.last().map_or(0, |l| l.pos);
    out.push(Lexeme {
        tok: Tok::End,
        pos,
        text: None,
    });
    out
}

use super::dates::Calendar;

/// A function the language knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `upper(s)`
    Upper,
    /// `lower(s)`
    Lower,
    /// `abs(x)`
    Abs,
    /// `floor(x)`
    Floor,
    /// `ceil(x)`
    Ceil,
    /// `sqrt(x)`
    Sqrt,
    /// `log(x)`
    Log,
    /// `log2(x)`
    Log2,
    /// `exp(x)`
    Exp,
    /// `exists(x)`
    Exists,
    /// `strlen(s)`
    Strlen,
    /// `startswith(s, prefix)`
    StartsWith,
    /// `contains(s, needle)`
    Contains,
    /// `substr(s, offset, count)`
    Substr,
    /// `format(fmt, …)`
    Format,
    /// `split(s [, separators [, strip]])`
    Split,
    /// `to_number(x)`
    ToNumber,
    /// `to_str(x)`
    ToStr,
    /// `timefmt(t [, format])`
    TimeFmt,
    /// `parsetime(text, format)`
    ParseTime,
    /// `minute(t)`, `hour(t)`, `day(t)`, `month(t)` and the calendar fields.
    Calendar(super::dates::Calendar),
    /// `geodistance(a, b)` with each point a string or a longitude/latitude pair.
    GeoDistance,
    /// `matched_terms([max])`: the query terms the row's document matched.
    MatchedTerms,
}

/// Every function, by the (case-insensitive) name queries use.
pub const FUNCTIONS: &[(&str, Func)] = &[
    ("upper", Func::Upper),
    ("lower", Func::Lower),
    ("abs", Func::Abs),
    ("floor", Func::Floor),
    ("ceil", Func::Ceil),
    ("sqrt", Func::Sqrt),
    ("log", Func::Log),
    ("log2", Func::Log2),
    ("exp", Func::Exp),
    ("exists", Func::Exists),
    ("strlen", Func::Strlen),
    ("startswith", Func::StartsWith),
    ("contains", Func::Contains),
    ("substr", Func::Substr),
    ("format", Func::Format),
    ("split", Func::Split),
    ("to_number", Func::ToNumber),
    ("to_str", Func::ToStr),
    ("timefmt", Func::TimeFmt),
    ("parsetime", Func::ParseTime),
    ("minute", Func::Calendar(Calendar::Minute)),
    ("hour", Func::Calendar(Calendar::Hour)),
    ("day", Func::Calendar(Calendar::Day)),
    ("month", Func::Calendar(Calendar::Month)),
    ("year", Func::Calendar(Calendar::Year)),
    ("monthofyear", Func::Calendar(Calendar::MonthOfYear)),
    ("dayofmonth", Func::Calendar(Calendar::DayOfMonth)),
    ("dayofweek", Func::Calendar(Calendar::DayOfWeek)),
    ("dayofyear", Func::Calendar(Calendar::DayOfYear)),
    ("geodistance", Func::GeoDistance),
    ("matched_terms", Func::MatchedTerms),
];

/// The hidden row slot that holds a document's matched terms (a name no query can
/// write after `@`).
pub const MATCHED_TERMS_SLOT: &[u8] = b"\0matched_terms";

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number literal.
    Num(f64),
    /// A string literal.
    Str(Vec<u8>),
    /// `NULL`.
    Null,
    /// `@name`, resolved to a row slot by [`Expr::resolve`].
    Prop {
        /// The name after `@`.
        name: Vec<u8>,
        /// The row slot (set by [`Expr::resolve`]).
        slot: usize,
    },
    /// `!x`.
    Not(Box<Expr>),
    /// `a op b`.
    Bin(Op, Box<Expr>, Box<Expr>),
    /// `f(args…)`.
    Call(Func, Vec<Expr>),
}

/// Where a parse ended badly: a parse error, or a stop after an unknown name.
enum Fail {
    Syntax(usize),
    Stop,
}

struct Parser {
    toks: Vec<Lexeme>,
    at: usize,
    /// The first naming error and the token RediSearch's parser was reading then; it
    /// stops after that token.
    error: Option<(usize, String)>,
}

/// A parsed node, or `None` where a name was unknown (RediSearch keeps a hole and
/// reports it).
type Parsed = Option<Expr>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].tok
    }

    fn bump(&mut self) -> Result<(), Fail> {
        if let Some((stop, _)) = &self.error {
            if self.at >= *stop {
                return Err(Fail::Stop);
            }
        }
        self.at += 1;
        Ok(())
    }

    fn semantic(&mut self, text: String) {
        let at = self.at;
        match &mut self.error {
            None => self.error = Some((at, text)),
            Some((_, t)) => *t = text,
        }
    }

    fn missing(&mut self, what: &str) -> Parsed {
        self.semantic(format!(
            "Missing (or badly formatted) value for expr->{what}"
        ));
        None
    }

    fn syntax(&self) -> Fail {
        Fail::Syntax(self.at)
    }

    fn expr(&mut self, min: u8) -> Result<Parsed, Fail> {
        let mut left = self.prefix()?;
        loop {
            let op = match self.peek() {
                Tok::Op(op) => *op,
                Tok::Minus => Op::Sub,
                _ => return Ok(left),
            };
            if op.binding() < min {
                return Ok(left);
            }
            self.bump()?;
            let right = self.expr(op.binding() + 1)?;
            left = match (left, right) {
                (Some(l), Some(r)) => Some(Expr::Bin(op, Box::new(l), Box::new(r))),
                (l, _) => {
                    let kind = if op.is_arithmetic() { "op" } else { "pred" };
                    let side = if l.is_none() { "left" } else { "right" };
                    self.missing(&format!("{kind}.{side}"))
                }
            };
        }
    }

    fn prefix(&mut self) -> Result<Parsed, Fail> {
        match self.peek().clone() {
            Tok::Num(n) => {
                self.bump()?;
                Ok(Some(Expr::Num(n)))
            }
            Tok::Minus => {
                self.bump()?;
                match self.peek().clone() {
                    Tok::Num(n) => {
                        self.bump()?;
                        Ok(Some(Expr::Num(-n)))
                    }
                    _ => Err(self.syntax()),
                }
            }
            Tok::Str(s) => {
                self.bump()?;
                Ok(Some(Expr::Str(s)))
            }
            Tok::Prop(name) => {
                self.bump()?;
                Ok(Some(Expr::Prop { name, slot: 0 }))
            }
            Tok::Not => {
                self.bump()?;
                let child = self.expr(2)?;
                Ok(match child {
                    Some(c) => Some(Expr::Not(Box::new(c))),
                    None => self.missing("inverted.child"),
                })
            }
            Tok::LParen => {
                self.bump()?;
                let inner = self.expr(0)?;
                if *self.peek() != Tok::RParen {
                    return Err(self.syntax());
                }
                self.bump()?;
                Ok(inner)
            }
            Tok::Sym(name) => {
                self.bump()?;
                if *self.peek() != Tok::LParen {
                    if name == b"NULL" {
                        return Ok(Some(Expr::Null));
                    }
                    self.semantic(format!("Unknown symbol '{}'", lossy(&name)));
                    return Ok(None);
                }
                self.bump()?;
                let args = self.args()?;
                let func = FUNCTIONS
                    .iter()
                    .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(&name))
                    .map(|(_, f)| *f);
                match (func, args) {
                    (None, _) => {
                        self.semantic(format!("Unknown function name '{}'", lossy(&name)));
                        Ok(None)
                    }
                    (Some(f), Some(args)) => Ok(Some(Expr::Call(f, args))),
                    (Some(_), None) => Ok(None),
                }
            }
            _ => Err(self.syntax()),
        }
    }

    /// Arguments after `(`, through `)`. A leading comma is accepted, as the
    /// grammar lets an empty list be extended.
    fn args(&mut self) -> Result<Option<Vec<Expr>>, Fail> {
        let mut args = Vec::new();
        let mut holes = false;
        if *self.peek() == Tok::RParen {
            self.bump()?;
            return Ok(Some(args));
        }
        if *self.peek() != Tok::Comma {
            match self.expr(0)? {
                Some(e) => args.push(e),
                None => holes = true,
            }
        }
        loop {
            match self.peek() {
                Tok::RParen => {
                    self.bump()?;
                    return Ok((!holes).then_some(args));
                }
                Tok::Comma => {
                    self.bump()?;
                    match self.expr(0)? {
                        Some(e) => args.push(e),
                        None => holes = true,
                    }
                }
                _ => return Err(self.syntax()),
            }
        }
    }
}

impl Expr {
    /// Whether the expression calls `matched_terms`.
    pub fn uses_matched_terms(&self) -> bool {
        match self {
            Expr::Call(Func::MatchedTerms, _) => true,
            Expr::Call(_, args) => args.iter().any(Expr::uses_matched_terms),
            Expr::Not(c) => c.uses_matched_terms(),
            Expr::Bin(_, a, b) => a.uses_matched_terms() || b.uses_matched_terms(),
            _ => false,
        }
    }

    /// Gives each `matched_terms` call the row slot of the document's terms, first
    /// among its arguments (resolved like any property); where rows are not one
    /// document (after a `GROUPBY`), the call is `NULL`, as in RediSearch.
    pub fn bind_matched_terms(&mut self, per_document: bool) {
        match self {
            Expr::Call(Func::MatchedTerms, _) if !per_document => *self = Expr::Null,
            Expr::Call(Func::MatchedTerms, args) => args.insert(
                0,
                Expr::Prop {
                    name: MATCHED_TERMS_SLOT.to_vec(),
                    slot: 0,
                },
            ),
            Expr::Call(_, args) => args
                .iter_mut()
                .for_each(|a| a.bind_matched_terms(per_document)),
            Expr::Not(c) => c.bind_matched_terms(per_document),
            Expr::Bin(_, a, b) => {
                a.bind_matched_terms(per_document);
                b.bind_matched_terms(per_document);
            }
            _ => {}
        }
    }

    /// How `FT.PROFILE` describes an `APPLY` or `FILTER` by its outermost node, as
    /// RediSearch does: `Operator *`, `Predicate >`, `Function upper`, `Property n`,
    /// `Literal x`, `Inverted`.
    pub fn profile_text(&self) -> String {
        match self {
            Expr::Num(n) => format!("Literal {}", crate::util::num::fmt_g(*n, 12)),
            Expr::Str(s) => format!("Literal {}", lossy(s)),
            Expr::Null => "Literal ".into(),
            Expr::Prop { name, .. } => format!("Property {}", lossy(name)),
            Expr::Not(_) => "Inverted".into(),
            Expr::Bin(op, ..) if op.is_arithmetic() => format!("Operator {}", op.symbol()),
            Expr::Bin(op, ..) => format!("Predicate {}", op.symbol()),
            Expr::Call(f, _) => {
                let name = FUNCTIONS
                    .iter()
                    .find(|(_, g)| g == f)
                    .map_or("", |(n, _)| n);
                format!("Function {name}")
            }
        }
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Parses an expression, with RediSearch's error texts.
pub fn parse(text: &[u8]) -> Result<Expr, String> {
    let mut p = Parser {
        toks: lex(text),
        at: 0,
        error: None,
    };
    let outcome = p.expr(0).and_then(|e| {
        if *p.peek() == Tok::End {
            Ok(e)
        } else {
            Err(p.syntax())
        }
    });
    let semantic = p.error.as_ref().map(|(_, t)| t.clone());
    match outcome {
        Ok(Some(e)) if semantic.is_none() => Ok(e),
        Ok(_) | Err(Fail::Stop) => Err(semantic.unwrap_or_else(|| "Syntax error".into())),
        Err(Fail::Syntax(at)) => {
            let pos = p.toks[at].pos;
            let near = p.toks[..=at]
                .iter()
                .rev()
                .find_map(|l| l.text.clone())
                .unwrap_or_default();
            let mut msg = format!("Syntax error at offset {pos} near '{}'", lossy(&near));
            if let Some(s) = semantic {
                msg.push_str(": ");
                msg.push_str(&s);
            }
            Err(msg)
        }
    }
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;

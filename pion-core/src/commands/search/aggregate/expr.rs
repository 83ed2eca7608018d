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

use super::value::{parse_number, Value};

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

    fn is_arithmetic(self) -> bool {
        self.binding() >= 4
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
];

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

/// Why evaluating a row failed (the text RediSearch replies with).
pub type EvalError = String;

/// RediSearch's type codes in argument errors.
fn type_code(v: &Value) -> u8 {
    match v {
        Value::Num(_) => 1,
        Value::Str(_) => 3,
        Value::Null => 4,
        Value::Array(_) => 6,
    }
}

fn want_string(f: &str, v: &Value, i: usize) -> Result<Vec<u8>, EvalError> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(format!(
            "Invalid type ({}) for argument {i} in function '{f}'. VALIDATE_ARG__STRING(v, 0) was false.",
            type_code(other)
        )),
    }
}

/// A value as a math function's argument: numbers, numeric strings, NaN otherwise.
fn math_arg(v: &Value) -> f64 {
    v.as_number().unwrap_or(f64::NAN)
}

/// NaN with the sign bit set: what x86 produces for invalid operations, and what
/// RediSearch then prints as `-nan`.
fn default_nan() -> f64 {
    -f64::NAN
}

/// An arithmetic result, with x86's NaN rules whatever the host.
fn arith(op: Op, a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return a;
    }
    if b.is_nan() {
        return b;
    }
    let r = match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => {
            if b == 0.0 {
                return f64::NAN;
            }
            a / b
        }
        Op::Mod => {
            let (x, y) = (a as i64, b as i64);
            if y == 0 {
                return f64::NAN;
            }
            return x.wrapping_rem(y) as f64;
        }
        Op::Pow => a.powf(b),
        // Comparisons never reach here.
        _ => return f64::NAN,
    };
    if r.is_nan() {
        default_nan()
    } else {
        r
    }
}

impl Expr {
    /// Resolves every `@name` to a row slot with `lookup`, left to right; the first
    /// failure is returned.
    pub fn resolve(
        &mut self,
        lookup: &mut dyn FnMut(&[u8]) -> Result<usize, String>,
    ) -> Result<(), String> {
        match self {
            Expr::Prop { name, slot } => {
                *slot = lookup(name)?;
                Ok(())
            }
            Expr::Not(c) => c.resolve(lookup),
            Expr::Bin(_, a, b) => {
                a.resolve(lookup)?;
                b.resolve(lookup)
            }
            Expr::Call(_, args) => args.iter_mut().try_for_each(|a| a.resolve(lookup)),
            _ => Ok(()),
        }
    }

    /// Evaluates the expression for one row; `get` gives a slot's value (`None`
    /// when the row has none).
    pub fn eval(&self, get: &dyn Fn(usize) -> Option<Value>) -> Result<Value, EvalError> {
        match self {
            Expr::Num(n) => Ok(Value::Num(*n)),
            Expr::Str(s) => Ok(Value::Str(s.clone())),
            Expr::Null => Ok(Value::Null),
            Expr::Prop { name, slot } => get(*slot).ok_or_else(|| {
                format!(
                    "{}: has no value, consider using EXISTS if applicable",
                    lossy(name)
                )
            }),
            Expr::Not(c) => Ok(Value::bool(!c.eval(get)?.truthy())),
            Expr::Bin(Op::And, a, b) => {
                Ok(Value::bool(a.eval(get)?.truthy() && b.eval(get)?.truthy()))
            }
            Expr::Bin(Op::Or, a, b) => {
                Ok(Value::bool(a.eval(get)?.truthy() || b.eval(get)?.truthy()))
            }
            Expr::Bin(op, a, b) => {
                let (x, y) = (a.eval(get)?, b.eval(get)?);
                if op.is_arithmetic() {
                    let n = |v: &Value| {
                        v.as_number()
                            .ok_or_else(|| "Could not convert value to a number".to_string())
                    };
                    let (x, y) = (n(&x)?, n(&y)?);
                    return Ok(Value::Num(arith(*op, x, y)));
                }
                compare(*op, &x, &y)
            }
            Expr::Call(f, args) => call(*f, args, get),
        }
    }
}

/// A number for `==` against a string: the string's leading number, 0 for none
/// (C's `strtod`).
fn lenient_number(s: &[u8]) -> f64 {
    let t = s.trim_ascii_start();
    (1..=t.len())
        .rev()
        .find_map(|n| parse_number(&t[..n]))
        .unwrap_or(0.0)
}

fn compare(op: Op, x: &Value, y: &Value) -> Result<Value, EvalError> {
    use std::cmp::Ordering;
    if matches!(op, Op::Eq | Op::Ne) {
        let eq = match (x, y) {
            (Value::Num(a), Value::Str(s)) | (Value::Str(s), Value::Num(a)) => {
                lenient_number(s) == *a
            }
            _ => x.loose_eq(y),
        };
        return Ok(Value::bool(eq == (op == Op::Eq)));
    }
    let to_num = |s: &[u8]| {
        parse_number(s).ok_or_else(|| {
            format!(
                "Error converting string '{}' to number",
                String::from_utf8_lossy(s)
            )
        })
    };
    let ord = match (x, y) {
        (Value::Num(a), Value::Str(s)) => a.partial_cmp(&to_num(s)?),
        (Value::Str(s), Value::Num(b)) => to_num(s)?.partial_cmp(b),
        _ => Some(x.order(y)),
    };
    let Some(ord) = ord else {
        return Ok(Value::bool(false));
    };
    Ok(Value::bool(match op {
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    }))
}

fn call(f: Func, args: &[Expr], get: &dyn Fn(usize) -> Option<Value>) -> Result<Value, EvalError> {
    let name = FUNCTIONS
        .iter()
        .find(|(_, g)| *g == f)
        .map_or("", |(n, _)| *n);
    let invalid = || format!("Invalid arguments for function '{name}'");
    if f == Func::Exists {
        if args.len() != 1 {
            return Err(invalid());
        }
        return Ok(Value::bool(match &args[0] {
            Expr::Prop { slot, .. } => get(*slot).is_some(),
            other => other.eval(get).is_ok(),
        }));
    }
    let vals = args
        .iter()
        .map(|a| a.eval(get))
        .collect::<Result<Vec<_>, _>>()?;
    let one = |c_name: &str| {
        if vals.len() == 1 {
            Ok(math_arg(&vals[0]))
        } else {
            Err(format!("Invalid number of arguments for {c_name}"))
        }
    };
    let math = |x: f64, r: f64| {
        if r.is_nan() && !x.is_nan() {
            default_nan()
        } else {
            r
        }
    };
    Ok(match f {
        Func::Upper | Func::Lower => {
            if vals.len() != 1 {
                return Err(invalid());
            }
            match &vals[0] {
                Value::Str(s) if f == Func::Upper => Value::Str(s.to_ascii_uppercase()),
                Value::Str(s) => Value::Str(s.to_ascii_lowercase()),
                _ => Value::Null,
            }
        }
        Func::Abs => Value::Num(one("fabs")?.abs()),
        Func::Floor => Value::Num(one("floor")?.floor()),
        Func::Ceil => Value::Num(one("ceil")?.ceil()),
        Func::Sqrt => {
            let x = one("sqrt")?;
            Value::Num(math(x, x.sqrt()))
        }
        Func::Log => {
            let x = one("log")?;
            Value::Num(math(x, x.ln()))
        }
        Func::Log2 => {
            let x = one("log2")?;
            Value::Num(math(x, x.log2()))
        }
        Func::Exp => Value::Num(one("exp")?.exp()),
        Func::Exists => Value::Null,
        Func::Strlen => {
            if vals.len() != 1 {
                return Err(invalid());
            }
            Value::Num(want_string(name, &vals[0], 0)?.len() as f64)
        }
        Func::StartsWith | Func::Contains => {
            if vals.len() != 2 {
                return Err(invalid());
            }
            let s = want_string(name, &vals[0], 0)?;
            let p = want_string(name, &vals[1], 1)?;
            if f == Func::StartsWith {
                Value::bool(s.starts_with(&p))
            } else {
                let n = if p.is_empty() {
                    s.len() + 1
                } else {
                    s.windows(p.len()).filter(|w| *w == p.as_slice()).count()
                };
                Value::Num(n as f64)
            }
        }
        Func::Substr => substr(&vals, invalid)?,
        Func::Format => format(&vals)?,
        Func::Split => split(&vals)?,
        Func::ToNumber => {
            if vals.len() != 1 {
                return Err(invalid());
            }
            match &vals[0] {
                Value::Num(n) => Value::Num(*n),
                other => {
                    let text = match other {
                        Value::Str(s) => s.clone(),
                        _ => b"(null)".to_vec(),
                    };
                    match parse_number(text.trim_ascii_start()) {
                        Some(n) => Value::Num(n),
                        None => {
                            return Err(format!(
                                "to_number: cannot convert string '{}'",
                                lossy(&text)
                            ))
                        }
                    }
                }
            }
        }
        Func::ToStr => {
            if vals.len() != 1 {
                return Err(invalid());
            }
            Value::Str(vals[0].to_text())
        }
    })
}

fn substr(vals: &[Value], invalid: impl Fn() -> String) -> Result<Value, EvalError> {
    if vals.len() != 3 {
        return Err(invalid());
    }
    let Value::Str(s) = &vals[0] else {
        return Err("Invalid type for substr. Expected string".into());
    };
    let num = |i: usize| {
        match &vals[i] {
        Value::Num(n) => Ok(*n as i64),
        other => Err(format!(
            "Invalid type ({}) for argument {i} in function 'substr'. VALIDATE_ARG__TYPE(v, RSValue_Number) was false.",
            type_code(other)
        )),
    }
    };
    let len = s.len() as i64;
    let mut offset = num(1)?;
    let mut count = num(2)?;
    if offset < 0 {
        offset += len;
    }
    if offset < 0 || offset > len {
        return Ok(Value::str(""));
    }
    if count < 0 {
        count += len - offset;
    }
    if count <= 0 {
        return Ok(Value::str(""));
    }
    let end = (offset + count).min(len);
    Ok(Value::Str(s[offset as usize..end as usize].to_vec()))
}

fn format(vals: &[Value]) -> Result<Value, EvalError> {
    let Some(first) = vals.first() else {
        return Err("Need at least one argument for format".into());
    };
    let fmt = want_string("format", first, 0)?;
    let mut out = Vec::new();
    let mut next = 1;
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        match fmt.get(i + 1) {
            None => return Err("Bad format string!".into()),
            Some(b'%') => out.push(b'%'),
            Some(b's') => {
                let v = vals
                    .get(next)
                    .ok_or_else(|| "Not enough arguments for format".to_string())?;
                next += 1;
                match v {
                    Value::Null => out.extend_from_slice(b"(null)"),
                    other => out.extend(other.to_text()),
                }
            }
            Some(_) => return Err("Unknown format specifier passed".into()),
        }
        i += 2;
    }
    Ok(Value::Str(out))
}

fn split(vals: &[Value]) -> Result<Value, EvalError> {
    if vals.is_empty() || vals.len() > 3 {
        return Err("Invalid number of arguments for split".into());
    }
    let s = want_string("split", &vals[0], 0)?;
    let sep = match vals.get(1) {
        Some(v) => want_string("split", v, 1)?,
        None => b",".to_vec(),
    };
    let strip = match vals.get(2) {
        Some(v) => want_string("split", v, 2)?,
        None => b" ".to_vec(),
    };
    let parts = s
        .split(|c| sep.contains(c))
        .map(|p| {
            let start = p.iter().position(|c| !strip.contains(c)).unwrap_or(p.len());
            let end = p
                .iter()
                .rposition(|c| !strip.contains(c))
                .map_or(start, |e| e + 1);
            &p[start..end.max(start)]
        })
        .filter(|p| !p.is_empty())
        .map(Value::str)
        .collect();
    Ok(Value::Array(parts))
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;

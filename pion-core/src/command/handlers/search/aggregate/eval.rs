//! Evaluating `APPLY`/`FILTER` expressions for one row: operators with RediSearch's
//! conversions and NaN rules, and the functions of [`super::expr::FUNCTIONS`], whose
//! arity and argument types RediSearch checks only here, row by row.

use super::expr::{Expr, Func, Op, FUNCTIONS};
use super::value::{parse_number, Value};
use super::{dates, geo};

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

/// `matched_terms([max])`: the row's document's terms (its first argument is the
/// hidden slot that holds them, [`Expr::bind_matched_terms`]), the first `max` of
/// them (a number above 0; otherwise, or with more arguments, up to 100); `NULL`
/// when the document matched none.
fn matched_terms(args: &[Expr], get: &dyn Fn(usize) -> Option<Value>) -> Value {
    use crate::index::eval::MAX_MATCHED_TERMS;
    let Some(Expr::Prop { slot, .. }) = args.first() else {
        return Value::Null;
    };
    let Some(Value::Array(terms)) = get(*slot) else {
        return Value::Null;
    };
    let max = match &args[1..] {
        [one] => one
            .eval(get)
            .ok()
            .and_then(|v| v.as_number())
            .filter(|d| *d >= 1.0)
            .map_or(MAX_MATCHED_TERMS, |d| (d as usize).min(MAX_MATCHED_TERMS)),
        _ => MAX_MATCHED_TERMS,
    };
    Value::Array(terms.into_iter().take(max).collect())
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
    let name = match f {
        // RediSearch registers `timefmt` under the name its errors use.
        Func::TimeFmt => "time",
        _ => FUNCTIONS
            .iter()
            .find(|(_, g)| *g == f)
            .map_or("", |(n, _)| *n),
    };
    let invalid = || format!("Invalid arguments for function '{name}'");
    if f == Func::MatchedTerms {
        return Ok(matched_terms(args, get));
    }
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
        Func::TimeFmt => {
            let format = match vals.get(1) {
                None => None,
                Some(Value::Str(s)) => Some(s.as_slice()),
                Some(other) => {
                    return Err(format!(
                        "Invalid type ({}) for argument 1 in function 'time'. VALIDATE_ARG__TYPE(v, RSValue_String) was false.",
                        type_code(other)
                    ))
                }
            };
            if !(1..=2).contains(&vals.len()) {
                return Err(invalid());
            }
            dates::timefmt(&vals[0], format)
        }
        Func::ParseTime => {
            if vals.len() != 2 {
                return Err(invalid());
            }
            let text = want_string(name, &vals[0], 0)?;
            let format = want_string(name, &vals[1], 1)?;
            dates::parsetime(&text, &format)
        }
        Func::Calendar(c) => {
            if vals.len() != 1 {
                return Err(invalid());
            }
            dates::calendar(c, &vals[0])
        }
        Func::GeoDistance => geo::geodistance(&vals)?,
        // Answered before the arguments are evaluated.
        Func::MatchedTerms => matched_terms(args, get),
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

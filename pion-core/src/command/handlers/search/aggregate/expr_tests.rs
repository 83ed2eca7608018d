//! The expression language against answers taken from RediSearch 2.10.

use proptest::prelude::*;

use super::*;
use crate::command::handlers::search::aggregate::value::Value;

fn eval(text: &str) -> Result<Value, String> {
    let mut e = parse(text.as_bytes())?;
    e.resolve(&mut |name| match name {
        b"n" => Ok(0),
        b"s" => Ok(1),
        b"missing" => Ok(2),
        other => Err(format!(
            "Property `{}` not loaded nor in pipeline",
            String::from_utf8_lossy(other)
        )),
    })?;
    e.eval(&|slot| match slot {
        0 => Some(Value::Num(10.0)),
        1 => Some(Value::str("apple")),
        _ => None,
    })
}

fn shown(text: &str) -> String {
    match eval(text) {
        Ok(v) => String::from_utf8_lossy(&v.to_text()).into_owned(),
        Err(e) => format!("ERR {e}"),
    }
}

#[test]
fn arithmetic_and_precedence() {
    for (q, want) in [
        ("1+1", "2"),
        ("3 - 1", "2"),
        ("2*-3", "-6"),
        ("--3", "3"),
        ("- 3", "-3"),
        ("2^3^2", "64"),
        ("2*3+4*5", "26"),
        ("100/10/5", "2"),
        ("1 + 2 * 3 ^ 2", "37"),
        ("2*3^2", "36"),
        ("2+3^2", "11"),
        ("2^3%5", "3"),
        ("8 % 3 * 2", "4"),
        ("7.5%2", "1"),
        ("-7%3", "-1"),
        ("1/0", "nan"),
        ("5 % 0", "nan"),
        ("1e300*1e300", "inf"),
        ("1e308 * 10 - 1e308 * 10", "-nan"),
        ("0.1+0.2", "0.3"),
        (".5", "5"),
        ("1e-3", "0.001"),
        ("'10'+1", "11"),
        ("@n * 2", "20"),
        ("(1 + 2) * 3", "9"),
    ] {
        assert_eq!(shown(q), want, "{q}");
    }
}

#[test]
fn predicates() {
    for (q, want) in [
        ("1 || 0 && 0", "0"),
        ("0 && 0 || 1", "1"),
        ("!0 + 1", "0"),
        ("!0 && 0", "0"),
        ("!1 == 0", "1"),
        ("1 < 2 < 3", "1"),
        ("'10'<'9'", "1"),
        ("5 == '5.0'", "1"),
        ("'abc' == 5", "0"),
        ("0 == ''", "1"),
        ("NULL == NULL", "1"),
        ("NULL < 1", "1"),
        ("'a' < NULL", "0"),
        ("1 || @missing", "1"),
        ("!''", "1"),
        ("@s == 'apple'", "1"),
    ] {
        assert_eq!(shown(q), want, "{q}");
    }
}

#[test]
fn functions() {
    for (q, want) in [
        ("upper('a')", "A"),
        ("UPPER(@s)", "APPLE"),
        ("upper(3)", ""),
        ("abs(-3)", "3"),
        ("abs('x')", "nan"),
        ("floor(2.7)", "2"),
        ("ceil(2.1)", "3"),
        ("sqrt(16)", "4"),
        ("sqrt(-1)", "-nan"),
        ("log(100)", "4.60517018599"),
        ("log(0)", "-inf"),
        ("log2(8)", "3"),
        ("exp(0)", "1"),
        ("exists(@n)", "1"),
        ("exists(@missing)", "0"),
        ("strlen('abc')", "3"),
        ("startswith('abc','ab')", "1"),
        ("contains('aaa','aa')", "2"),
        ("contains('abc','')", "4"),
        ("substr('hello',1,3)", "ell"),
        ("substr('hello',-2,3)", "lo"),
        ("substr('hello',1,-1)", "ell"),
        ("substr('hello',10,2)", ""),
        ("format('%s-%s','a',3)", "a-3"),
        ("format('%s', NULL)", "(null)"),
        ("split(' a , b ')", "a,b"),
        ("to_number(' 3')", "3"),
        ("to_str(NULL)", ""),
    ] {
        assert_eq!(shown(q), want, "{q}");
    }
}

#[test]
fn errors_match_redisearch() {
    for (q, want) in [
        ("1-1", "Syntax error at offset 1 near '-1'"),
        ("-@n", "Syntax error at offset 1 near 'n'"),
        ("+3", "Syntax error at offset 0 near ''"),
        ("", "Syntax error at offset 0 near ''"),
        ("(1", "Syntax error at offset 1 near '1'"),
        ("1)", "Syntax error at offset 1 near '1'"),
        ("1 + + 2", "Syntax error at offset 4 near '1'"),
        ("'a' 'b'", "Syntax error at offset 4 near ''b''"),
        ("upper(,)", "Syntax error at offset 7 near 'upper'"),
        ("1e+3", "Syntax error at offset 1 near 'e'"),
        ("foo", "Unknown symbol 'foo'"),
        ("foo + bar", "Unknown symbol 'foo'"),
        (
            "upper upper",
            "Syntax error at offset 6 near 'upper': Unknown symbol 'upper'",
        ),
        (
            "foo(1) 2",
            "Syntax error at offset 7 near '2': Unknown function name 'foo'",
        ),
        ("foo(1)", "Unknown function name 'foo'"),
        (
            "1 + foo",
            "Missing (or badly formatted) value for expr->op.right",
        ),
        (
            "1 == foo",
            "Missing (or badly formatted) value for expr->pred.right",
        ),
        (
            "!foo",
            "Missing (or badly formatted) value for expr->inverted.child",
        ),
        ("@nope", "Property `nope` not loaded nor in pipeline"),
        (
            "@missing + 1",
            "missing: has no value, consider using EXISTS if applicable",
        ),
        ("'abc'+1", "Could not convert value to a number"),
        ("@s > 5", "Error converting string 'apple' to number"),
        ("upper()", "Invalid arguments for function 'upper'"),
        ("abs(1,2)", "Invalid number of arguments for fabs"),
        (
            "strlen(3)",
            "Invalid type (1) for argument 0 in function 'strlen'. VALIDATE_ARG__STRING(v, 0) was false.",
        ),
        ("format('%d',3)", "Unknown format specifier passed"),
        ("to_number('abc')", "to_number: cannot convert string 'abc'"),
    ] {
        assert_eq!(shown(q), format!("ERR {want}"), "{q}");
    }
}

proptest! {
    /// Parsing and evaluating never panic, whatever the text.
    #[test]
    fn never_panics(text in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(mut e) = parse(&text) {
            let _ = e.resolve(&mut |_| Ok(0));
            let _ = e.eval(&|_| Some(Value::Num(1.5)));
        }
    }

    /// Texts built from the language's own tokens never panic either.
    #[test]
    fn token_soup_never_panics(parts in proptest::collection::vec(
        prop::sample::select(vec![
            "1", "-2.5", "1e3", "'a'", "\"b\"", "@n", "@s", "NULL", "upper", "substr",
            "split", "format", "(", ")", ",", "+", "-", "*", "/", "%", "^", "==", "!=",
            "<", "<=", ">", ">=", "&&", "||", "!", " ", "foo", "'%s'",
        ]),
        0..24,
    )) {
        let text = parts.concat();
        let _ = eval(&text);
    }
}

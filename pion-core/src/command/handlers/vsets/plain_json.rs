//! The fast path of reading a `FILTER`'s fields: a scanner for the plain JSON most
//! attributes are, which checks such a document completely itself.
//!
//! serde's reader, even reading only the named fields, took about half of a 1 %
//! filtered `VSIM`'s time: every key and every skipped string goes through its
//! UTF-8 and escape handling. Attributes are mostly flat objects of short ASCII
//! strings and numbers. This scanner accepts exactly the documents made of those
//! (printable ASCII strings without escapes, JSON's number grammar, `true`, `false`,
//! `null`, objects and arrays nested up to [`MAX_DEPTH`], the four JSON spaces),
//! checking the grammar as strictly as a full parse does, and answers `None` for
//! anything else, malformed or merely unusual (an escape, a non-ASCII byte, a
//! container under a named key), which the full reader in `attrs` then reads. So
//! a document it answers for is one a full parse accepts, and the values it gives
//! are the ones the full reader builds (numbers other than short integers are
//! handed to serde's own number parser).

use std::borrow::Cow;

use serde::de::DeserializeSeed;

use super::attrs::{Read, Values};
use super::filter::Field;

/// Deeper nesting is left to the full reader (serde refuses past 128 levels).
const MAX_DEPTH: usize = 64;

/// The values of `names` in `attr` when it is a plain JSON object (see the module
/// comment); `None` when it is not, malformed or not.
pub(super) fn read<'a>(attr: &'a [u8], names: &[String]) -> Option<Values<'a>> {
    let mut c = Cursor { s: attr, i: 0 };
    let mut values: Values<'a> = smallvec::smallvec![None; names.len()];
    c.space();
    c.expect(b'{')?;
    c.space();
    if c.peek() == Some(b'}') {
        c.i += 1;
    } else {
        loop {
            let key = c.string()?;
            c.space();
            c.expect(b':')?;
            c.space();
            match names.iter().position(|n| n.as_bytes() == key) {
                Some(at) => values[at] = Some(c.scalar()?),
                None => c.skip(1)?,
            }
            c.space();
            match c.next()? {
                b',' => c.space(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    c.space();
    (c.i == attr.len()).then_some(values)
}

/// A position in the document.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    /// Skips JSON's whitespace.
    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string of printable ASCII without escapes: its bytes between the quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.i;
        loop {
            match self.next()? {
                b'"' => return Some(&self.s[start..self.i - 1]),
                b'\\' => return None,
                b' '..=b'~' => {}
                _ => return None,
            }
        }
    }

    /// `word` exactly.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.s.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A number by JSON's grammar; its text, and whether it is an integer.
    fn number(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digit()?;
            integer = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digit()?;
            integer = false;
        }
        Some((&self.s[start..self.i], integer))
    }

    /// One digit or more.
    fn digit(&mut self) -> Option<()> {
        self.next()?.is_ascii_digit().then(|| self.digits())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// A scalar value, as the full reader builds it; `None` for a container too
    /// (under a named key one is left to the full reader, as they are rare in
    /// filters).
    fn scalar(&mut self) -> Option<Field<'a>> {
        Some(match self.peek()? {
            b'"' => Field::Str(Cow::Borrowed(self.string()?)),
            b't' => {
                self.literal(b"true")?;
                Field::Num(1.0)
            }
            b'f' => {
                self.literal(b"false")?;
                Field::Num(0.0)
            }
            b'n' => {
                self.literal(b"null")?;
                Field::Null
            }
            _ => {
                let (text, integer) = self.number()?;
                short_integer(text, integer)
                    .map_or_else(|| by_serde(text), |n| Some(Field::Num(n)))?
            }
        })
    }

    /// Checks and passes over a value at nesting `depth`.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'[' => self.container(b']', |c| c.skip(depth + 1)),
            b'{' => self.container(b'}', |c| {
                c.string()?;
                c.space();
                c.expect(b':')?;
                c.space();
                c.skip(depth + 1)
            }),
            // Read as a named one is: a number's range is checked as the full
            // parse checks it.
            _ => self.scalar().map(drop),
        }
    }

    /// An array or object: its items, each read by `item`, up to `close`.
    fn container(&mut self, close: u8, item: impl Fn(&mut Self) -> Option<()>) -> Option<()> {
        self.i += 1;
        self.space();
        if self.peek() == Some(close) {
            self.i += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.space();
            match self.next()? {
                b',' => self.space(),
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }
}

/// An integer of at most 15 digits, whose value as an `f64` is exact (as serde
/// reads it: an `i64` or `u64`, then converted).
fn short_integer(text: &[u8], integer: bool) -> Option<f64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if !integer || digits.len() > 15 {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')) as f64;
    // serde reads `-0` as the float -0.0, the other negatives as `i64`s.
    Some(if negative { -n } else { n })
}

/// A number as serde reads it (`None` past `f64`'s range, which a full parse refuses).
fn by_serde(text: &[u8]) -> Option<Field<'_>> {
    let mut de = serde_json::Deserializer::from_slice(text);
    Read::top().deserialize(&mut de).ok()?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_documents_are_read_here_and_the_rest_left() {
        let want = names(&["year", "genre", "ok", "n"]);
        let doc = br#" { "title" : "x y", "year":1990, "tags":[1, "a", {"b": [true, null]}],
            "genre":"drama", "ok":true, "n":null, "rating":-7.5e-1 } "#;
        let values = read(doc, &want).expect("plain");
        assert_eq!(values[0], Some(Field::Num(1990.0)));
        assert!(matches!(
            &values[1],
            Some(Field::Str(Cow::Borrowed(b"drama")))
        ));
        assert_eq!(values[2], Some(Field::Num(1.0)));
        assert_eq!(values[3], Some(Field::Null));
        // `-0` is a float to serde, negative zero.
        let zero = read(br#"{"year":-0}"#, &want).expect("plain");
        assert!(matches!(zero[0], Some(Field::Num(z)) if z == 0.0 && z.is_sign_negative()));
        // Left to the full reader: escapes, non-ASCII, a container under a named
        // key, deep nesting; and every malformed document.
        for other in [
            &br#"{"year":"a\"b"}"#[..],
            r#"{"year":"é"}"#.as_bytes(),
            br#"{"year":[1]}"#,
            br#"{"year":1,}"#,
            br#"{"year":01}"#,
            br#"{"year":1.}"#,
            br#"{"year":-}"#,
            br#"{"year":1e}"#,
            br#"{"year":1e400}"#,
            br#"{"x":1e400}"#,
            br#"{"year":tru}"#,
            br#"{"year":1} x"#,
            br#"{"year" 1}"#,
            br#"{"x":[1 2]}"#,
            br#"{"x":{"a"}}"#,
            b"{\"x\":\"\t\"}",
            b"[1]",
            b"",
        ] {
            assert!(
                read(other, &want).is_none(),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
        let deep = format!("{{\"x\":{}1{}}}", "[".repeat(70), "]".repeat(70));
        assert!(read(deep.as_bytes(), &want).is_none());
        let fine = format!("{{\"x\":{}1{}}}", "[".repeat(60), "]".repeat(60));
        assert!(read(fine.as_bytes(), &want).is_some());
    }
}

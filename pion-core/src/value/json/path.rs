//! The path language of `JSON.*` commands: JSONPath (`$.a[0]`, `$..b`, `$[*]`,
//! `$[1:3]`, `$['x','y']`, `$[?(@.n > 1 && @.s =~ "a.*")]`) and RedisJSON's legacy
//! dot paths (`.`, `.a.b`, `a[0]`), parsed into [`Path`].
//!
//! Written here rather than taken from a JSONPath crate: the reply shapes depend on
//! whether a path is legacy, RedisJSON's filters have their own operators (`=~`) and
//! comparison rules, the order of matches (recursive descent, unions) must be
//! RedisJSON's, and writes need the location of every match, not a copy of it; a
//! generic evaluator gives none of these. The grammar is small.

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// The steps after the root, in order.
    pub segments: Vec<Segment>,
    /// A legacy dot path (`.a`, `a`): replies are single values, and a path that
    /// matches nothing is an error.
    pub legacy: bool,
    /// The path as JSONPath text (`.a` is `$.a`), which some errors quote.
    pub text: String,
    /// The path as sent, which other errors quote.
    pub sent: String,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Applies to the node and all its descendants (`..`).
    pub recursive: bool,
    /// What it selects.
    pub selector: Selector,
}

/// What a step selects from a node.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// Object members by name (`.a`, `['a','b']`).
    Names(Vec<String>),
    /// Every member or element (`.*`, `[*]`).
    Wildcard,
    /// Array elements by index, negative from the end (`[0]`, `[-1,2]`).
    Indices(Vec<i64>),
    /// An array slice `[start:end:step]`.
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// Members or elements for which a filter holds (`[?(...)]`).
    Filter(Box<Expr>),
}

/// A filter expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Both hold.
    And(Box<Expr>, Box<Expr>),
    /// Either holds.
    Or(Box<Expr>, Box<Expr>),
    /// A comparison of two operands.
    Cmp(Operand, CmpOp, Operand),
    /// An operand alone: holds when it yields a value (a path that matches).
    Exists(Operand),
}

/// A comparison operator of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
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
    /// `=~`: the left string matches the right regular expression.
    Regex,
}

/// One side of a filter comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A path from the current node (`@.a`).
    Current(Vec<Segment>),
    /// A path from the document's root (`$.a`).
    Root(Vec<Segment>),
    /// A literal value.
    Literal(serde_json::Value),
}

/// The longest path accepted (deeper input is refused rather than parsed).
const MAX_PATH: usize = 64 * 1024;
/// The deepest nesting of filter parentheses accepted.
const MAX_DEPTH: usize = 64;

impl Path {
    /// Parses a path as sent to a `JSON.*` command.
    pub fn parse(input: &[u8]) -> Result<Path, String> {
        let text = std::str::from_utf8(input).map_err(|_| syntax_error("", 0))?;
        if text.len() > MAX_PATH {
            return Err(syntax_error(text, 0));
        }
        let jsonpath = text == "$" || text.starts_with("$.") || text.starts_with("$[");
        if jsonpath {
            let mut p = Parser::new(text, 1);
            let segments = p.segments(false)?;
            if p.pos != text.len() {
                return Err(syntax_error(text, p.pos));
            }
            return Ok(Path {
                segments,
                legacy: false,
                text: text.to_string(),
                sent: text.to_string(),
            });
        }
        let converted = if text == "." || text.is_empty() {
            "$".to_string()
        } else if text.starts_with('.') {
            format!("${text}")
        } else {
            format!("$.{text}")
        };
        let mut p = Parser::new(&converted, 1);
        let segments = p.segments(false)?;
        if p.pos != converted.len() {
            return Err(syntax_error(&converted, p.pos));
        }
        Ok(Path {
            segments,
            legacy: true,
            text: converted,
            sent: text.to_string(),
        })
    }

    /// The root path (`.`).
    pub fn root() -> Path {
        Path {
            segments: Vec::new(),
            legacy: true,
            text: "$".to_string(),
            sent: ".".to_string(),
        }
    }

    /// Whether the path names the root.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Whether the path can match one value at most (RedisJSON's *static* path):
    /// names and indices one at a time, no wildcard, slice, filter, union or
    /// recursive descent.
    pub fn is_definite(&self) -> bool {
        self.segments.iter().all(|s| {
            !s.recursive
                && match &s.selector {
                    Selector::Names(names) => names.len() == 1,
                    Selector::Indices(indices) => indices.len() == 1,
                    Selector::Wildcard | Selector::Slice(..) | Selector::Filter(_) => false,
                }
        })
    }
}

/// What RedisJSON expects after a dot.
const EXPECT_NAME: &str = "<string>, '*'";
/// What RedisJSON expects after an opening bracket.
const EXPECT_BRACKET: &str = "'<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'";
/// Anything else (RedisJSON lists its grammar's rule names).
const EXPECT_ELEMENT: &str = "path element";

/// RedisJSON's message for a path that does not parse at byte `pos`, expecting
/// `expected`: the text before it, and an arrow to what follows.
fn syntax_error_expecting(text: &str, pos: usize, expected: &str) -> String {
    let mut at = pos.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let (before, after) = text.split_at(at);
    let shown = if after.is_empty() {
        format!("{before} <<<<----")
    } else {
        format!("{before} ---->>>> {after}")
    };
    format!(
        "Error occurred on position {at}, \"{shown}\", expected one of the following: {expected}."
    )
}

fn syntax_error(text: &str, pos: usize) -> String {
    syntax_error_expecting(text, pos, EXPECT_ELEMENT)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, pos: usize) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos,
            depth: 0,
        }
    }

    fn err<T>(&self) -> Result<T, String> {
        Err(syntax_error(self.text, self.pos))
    }

    fn expected<T>(&self, what: &str) -> Result<T, String> {
        Err(syntax_error_expecting(self.text, self.pos, what))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.text[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Segments until the end, or (in a filter) until a byte that ends an operand.
    fn segments(&mut self, in_filter: bool) -> Result<Vec<Segment>, String> {
        let mut out = Vec::new();
        loop {
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    let recursive = self.peek() == Some(b'.');
                    if recursive {
                        self.pos += 1;
                    }
                    let selector = match self.peek() {
                        Some(b'*') => {
                            self.pos += 1;
                            Selector::Wildcard
                        }
                        Some(b'[') => self.bracket()?,
                        _ => Selector::Names(vec![self.name(in_filter)?]),
                    };
                    out.push(Segment {
                        recursive,
                        selector,
                    });
                }
                Some(b'[') => {
                    let selector = self.bracket()?;
                    out.push(Segment {
                        recursive: false,
                        selector,
                    });
                }
                None => return Ok(out),
                Some(_) if in_filter => return Ok(out),
                Some(_) => return self.err(),
            }
        }
    }

    /// A member name after a dot.
    fn name(&mut self, in_filter: bool) -> Result<String, String> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let stop = matches!(c, b'.' | b'[' | b']')
                || (in_filter
                    && matches!(
                        c,
                        b' ' | b'\t' | b'=' | b'!' | b'<' | b'>' | b'&' | b'|' | b')' | b'('
                    ));
            if stop {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return self.expected(EXPECT_NAME);
        }
        Ok(self.text[start..self.pos].to_string())
    }

    /// A bracketed selector, `[` included.
    fn bracket(&mut self) -> Result<Selector, String> {
        self.pos += 1;
        self.ws();
        let selector = match self.peek() {
            Some(b'*') => {
                self.pos += 1;
                Selector::Wildcard
            }
            Some(b'\'' | b'"') => {
                let mut names = vec![self.string()?];
                loop {
                    self.ws();
                    if !self.eat(",") {
                        break;
                    }
                    self.ws();
                    names.push(self.string()?);
                }
                Selector::Names(names)
            }
            Some(b'?') => {
                self.pos += 1;
                self.ws();
                if !self.eat("(") {
                    return self.err();
                }
                let e = self.or_expr()?;
                self.ws();
                if !self.eat(")") {
                    return self.err();
                }
                Selector::Filter(Box::new(e))
            }
            _ => self.indices()?,
        };
        self.ws();
        if !self.eat("]") {
            return self.err();
        }
        Ok(selector)
    }

    fn int(&mut self) -> Option<i64> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        match self.text[start..self.pos].parse() {
            Ok(n) => Some(n),
            Err(_) => {
                self.pos = start;
                None
            }
        }
    }

    /// `[1]`, `[1,-2]` or a slice `[a:b:c]`.
    fn indices(&mut self) -> Result<Selector, String> {
        let first = self.int();
        self.ws();
        if self.peek() == Some(b':') {
            self.pos += 1;
            self.ws();
            let end = self.int();
            self.ws();
            let mut step = None;
            if self.eat(":") {
                self.ws();
                step = self.int();
            }
            return Ok(Selector::Slice(first, end, step));
        }
        let Some(first) = first else {
            return self.expected(EXPECT_BRACKET);
        };
        let mut all = vec![first];
        loop {
            self.ws();
            if !self.eat(",") {
                break;
            }
            self.ws();
            match self.int() {
                Some(n) => all.push(n),
                None => return self.err(),
            }
        }
        Ok(Selector::Indices(all))
    }

    /// A quoted string, either quote, with JSON's escapes.
    fn string(&mut self) -> Result<String, String> {
        let Some(quote) = self.peek() else {
            return self.err();
        };
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.text[self.pos..].chars().next() else {
                self.pos = start;
                return self.err();
            };
            self.pos += c.len_utf8();
            match c {
                c if c as u32 == u32::from(quote) => return Ok(out),
                '\\' => {
                    let Some(e) = self.text[self.pos..].chars().next() else {
                        return self.err();
                    };
                    self.pos += e.len_utf8();
                    out.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        other => other,
                    });
                }
                c => out.push(c),
            }
        }
    }

    fn or_expr(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err();
        }
        let mut left = self.and_expr()?;
        loop {
            self.ws();
            if !self.eat("||") {
                break;
            }
            let right = self.and_expr()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr, String> {
        let mut left = self.atom()?;
        loop {
            self.ws();
            if !self.eat("&&") {
                break;
            }
            let right = self.atom()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn atom(&mut self) -> Result<Expr, String> {
        self.ws();
        if self.eat("(") {
            let e = self.or_expr()?;
            self.ws();
            if !self.eat(")") {
                return self.err();
            }
            return Ok(e);
        }
        let left = self.operand()?;
        self.ws();
        let ops = [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("=~", CmpOp::Regex),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ];
        for (text, op) in ops {
            if self.eat(text) {
                self.ws();
                let right = self.operand()?;
                return Ok(Expr::Cmp(left, op, right));
            }
        }
        Ok(Expr::Exists(left))
    }

    fn operand(&mut self) -> Result<Operand, String> {
        match self.peek() {
            Some(b'@') => {
                self.pos += 1;
                Ok(Operand::Current(self.segments(true)?))
            }
            Some(b'$') => {
                self.pos += 1;
                Ok(Operand::Root(self.segments(true)?))
            }
            Some(b'\'' | b'"') => Ok(Operand::Literal(serde_json::Value::String(self.string()?))),
            _ => {
                let start = self.pos;
                while self.peek().is_some_and(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.' | b'_')
                }) {
                    self.pos += 1;
                }
                let word = &self.text[start..self.pos];
                match serde_json::from_str::<serde_json::Value>(word) {
                    Ok(v) if !v.is_object() && !v.is_array() && !word.is_empty() => {
                        Ok(Operand::Literal(v))
                    }
                    _ => {
                        self.pos = start;
                        self.err()
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Path {
        Path::parse(s.as_bytes()).expect("parses")
    }

    #[test]
    fn definite_paths_match_one_value_at_most() {
        for definite in ["$", ".", "$.a.b", "$.a[0]", "$['a'].b[-1]", "a.b"] {
            assert!(p(definite).is_definite(), "{definite}");
        }
        for several in [
            "$.a[*]",
            "$..a",
            "$.a[0,1]",
            "$.a[1:3]",
            "$['a','b']",
            "$.a[?(@.x>1)]",
            "$.*",
        ] {
            assert!(!p(several).is_definite(), "{several}");
        }
    }

    #[test]
    fn legacy_paths_become_jsonpath() {
        assert_eq!(p(".").text, "$");
        assert!(p(".").legacy && p(".").is_root());
        assert_eq!(p("a.b").text, "$.a.b");
        assert_eq!(p(".a[0]").text, "$.a[0]");
        assert_eq!(p("[1]").text, "$.[1]");
        assert_eq!(p("[1]").segments, p("$[1]").segments);
        assert!(!p("$.a").legacy);
        assert_eq!(
            p("a.b").segments,
            vec![
                Segment {
                    recursive: false,
                    selector: Selector::Names(vec!["a".into()])
                },
                Segment {
                    recursive: false,
                    selector: Selector::Names(vec!["b".into()])
                }
            ]
        );
    }

    #[test]
    fn brackets_slices_unions_and_descent() {
        assert_eq!(
            p("$['a', \"b\"]").segments[0].selector,
            Selector::Names(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            p("$[1, -2]").segments[0].selector,
            Selector::Indices(vec![1, -2])
        );
        assert_eq!(
            p("$[1:]").segments[0].selector,
            Selector::Slice(Some(1), None, None)
        );
        assert_eq!(
            p("$[::2]").segments[0].selector,
            Selector::Slice(None, None, Some(2))
        );
        let d = p("$..x");
        assert!(d.segments[0].recursive);
        assert_eq!(p("$..*").segments[0].selector, Selector::Wildcard);
        assert_eq!(p("$.*[*]").segments.len(), 2);
    }

    #[test]
    fn filters() {
        let f = p("$.a[?(@.x > 1 && (@.s == 'q' || @.t =~ \"^a\"))]");
        let Selector::Filter(e) = &f.segments[1].selector else {
            panic!("not a filter");
        };
        assert!(matches!(**e, Expr::And(_, _)));
        assert!(Path::parse(b"$[?(@.a)]").is_ok());
        assert!(Path::parse(b"$[?(@ == true)]").is_ok());
        assert!(Path::parse(b"$[?(@.a == null)]").is_ok());
        assert!(Path::parse(b"$[?(@.a <= -1.5e3)]").is_ok());
    }

    #[test]
    fn bad_paths_are_errors() {
        for bad in [
            "$[",
            "$.",
            "$..",
            "$[1",
            "$['a",
            "$[?(@.a >)]",
            "$[?@.a]",
            "$[x]",
            "..",
        ] {
            assert!(Path::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(
            Path::parse(b"$[").expect_err("refused"),
            "Error occurred on position 2, \"$[ <<<<----\", expected one of the following: \
             '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'."
        );
        assert_eq!(
            Path::parse(b"$[x]").expect_err("refused"),
            "Error occurred on position 2, \"$[ ---->>>> x]\", expected one of the following: \
             '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'."
        );
        assert_eq!(
            Path::parse(b"a.").expect_err("refused"),
            "Error occurred on position 4, \"$.a. <<<<----\", expected one of the following: \
             <string>, '*'."
        );
        // `$` not followed by `.` or `[` is a legacy member name.
        assert_eq!(p("$a").text, "$.$a");
        let deep = format!("$[?({}@.a{})]", "(".repeat(200), ")".repeat(200));
        assert!(Path::parse(deep.as_bytes()).is_err());
        assert!(Path::parse(&[b'$', b'.', 0xff]).is_err());
    }
}

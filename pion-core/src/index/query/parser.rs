//! Recursive-descent parser for the query language, DIALECT 1 and 2.
//!
//! DIALECT 2 (and 3, 4, which parse the same way): `-`, `~` and `@field:` apply to
//! the one element after them, juxtaposition (intersection) binds tighter than `|`,
//! `$name` parameters are allowed, and `=>[KNN …]` / `VECTOR_RANGE` exist.
//!
//! DIALECT 1: `-`, `~` and `@field:` apply to everything after them up to the end of
//! the enclosing group (a field modifier stops at the next `-`, `~` or `@field`),
//! modifiers may nest (their fields intersect), and there are no parameters or
//! vector queries.

use super::ast::{unescape, FieldScope, GeoUnit, Node, NumericRange, Query, TagAlternative};
use super::lexer::{tokenize, Kind, Token};
use super::params::{parse_double, Params};
use super::{FieldKind, FieldKinds, QueryError};
use crate::index::tokens::lowercase;

mod vector;

pub(super) type PResult<T> = Result<T, QueryError>;

/// Where a DIALECT 1 prefix operator's reach ends (it otherwise runs to the end of
/// the enclosing group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Nowhere: the whole group.
    None,
    /// `-x …` ends before another `-` or `~`.
    Negation,
    /// `~x …` ends before another `~`.
    Optional,
    /// `@f:x …` ends before anything but plain words.
    Field,
}

/// Parser state over one query's tokens.
pub(crate) struct Parser<'a> {
    src: &'a [u8],
    toks: Vec<Token>,
    at: usize,
    params: &'a Params,
    dialect: u32,
    fields: &'a dyn FieldKinds,
}

/// The error RediSearch gives for a bad vector option.
pub(super) fn vector_params_error(what: &str) -> QueryError {
    QueryError::new(format!(
        "Error parsing vector similarity parameters: {what}"
    ))
}

/// Whether a node is a group of kind `op` written under `scope`, so that a further
/// operand joins it instead of nesting (`(p q) r` is one intersection of three).
fn same_group(node: &Node, union: bool, scope: &FieldScope) -> bool {
    match node {
        Node::Intersect { fields, .. } => !union && fields == scope,
        Node::Union { fields, .. } => union && fields == scope,
        _ => false,
    }
}

/// Joins two operands into an intersection or union, dropping empty ones.
fn combine(left: Node, right: Node, union: bool, scope: &FieldScope) -> Node {
    match (left, right) {
        (Node::Empty, r) => r,
        (l, Node::Empty) => l,
        (mut l, r) if same_group(&l, union, scope) => {
            if let Node::Intersect { children, .. } | Node::Union { children, .. } = &mut l {
                children.push(r);
            }
            l
        }
        (l, r) => {
            let children = vec![l, r];
            let fields = scope.clone();
            if union {
                Node::Union { fields, children }
            } else {
                Node::Intersect { fields, children }
            }
        }
    }
}

impl<'a> Parser<'a> {
    /// A text term (lowercased, unescaped); stopwords give [`Node::Empty`].
    fn text_term(&self, scope: &FieldScope, raw: &[u8], number: bool) -> Node {
        let term = lowercase(&unescape(raw));
        if !number && self.fields.is_stopword(&term) {
            return Node::Empty;
        }
        Node::Term {
            fields: scope.clone(),
            term,
            expanded: false,
        }
    }

    /// A parser over `src`.
    pub(crate) fn new(
        src: &'a [u8],
        params: &'a Params,
        dialect: u32,
        fields: &'a dyn FieldKinds,
    ) -> Parser<'a> {
        Parser {
            src,
            toks: tokenize(src),
            at: 0,
            params,
            dialect,
            fields,
        }
    }

    fn d2(&self) -> bool {
        self.dialect >= 2
    }

    fn peek(&self) -> &Token {
        &self.toks[self.at.min(self.toks.len() - 1)]
    }

    fn peek_at(&self, n: usize) -> &Token {
        &self.toks[(self.at + n).min(self.toks.len() - 1)]
    }

    fn kind(&self) -> Kind {
        self.peek().kind
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.at < self.toks.len() - 1 {
            self.at += 1;
        }
        t
    }

    /// `Syntax error at offset N near X` for the token at index `i`: its offset (the
    /// previous token's at end of input) and the text of the latest token with text.
    fn syntax_at(&self, i: usize, prefix: &str) -> QueryError {
        let i = i.min(self.toks.len() - 1);
        let mut pos_idx = i;
        if self.toks[i].kind == Kind::End && i > 0 {
            pos_idx = i - 1;
        }
        let near = self.toks[..=pos_idx]
            .iter()
            .rev()
            .find(|t| t.has_text())
            .map(|t| String::from_utf8_lossy(&t.raw).into_owned())
            .unwrap_or_default();
        let mut pos = self.toks[pos_idx].pos;
        // RediSearch reports a misplaced `=>[` at its `[`, unless it follows `*`.
        if self.toks[pos_idx].kind == Kind::Arrow
            && (pos_idx == 0 || self.toks[pos_idx - 1].kind != Kind::Star)
        {
            pos += 2;
        }
        QueryError::new(format!("Syntax error{prefix} at offset {pos} near {near}"))
    }

    /// A syntax error at the current token.
    fn syntax(&self) -> QueryError {
        self.syntax_at(self.at, "")
    }

    fn expect(&mut self, kind: Kind) -> PResult<Token> {
        if self.kind() == kind {
            Ok(self.bump())
        } else {
            Err(self.syntax())
        }
    }

    /// The value of a `$name` token (DIALECT 2; a syntax error in DIALECT 1).
    fn param(&self, tok_idx: usize) -> PResult<Vec<u8>> {
        if !self.d2() {
            return Err(self.syntax_at(tok_idx, ""));
        }
        Ok(self.params.require(&self.toks[tok_idx].raw)?.to_vec())
    }

    /// Parses the whole query.
    pub(crate) fn parse_query(&mut self) -> PResult<Query> {
        if self.kind() == Kind::End {
            return Ok(Query {
                filter: Node::Empty,
                vector: None,
            });
        }
        let (filter, simple) = if self.kind() == Kind::Star {
            self.bump();
            (Node::MatchAll, true)
        } else {
            // One element first: only a lone element may precede `=>[KNN …]`.
            let prefixed = matches!(self.kind(), Kind::Minus | Kind::Tilde);
            let first = self.unary(&FieldScope::All, false)?;
            let knn_next = self.kind() == Kind::Arrow && self.peek_at(1).kind == Kind::LBracket;
            if knn_next {
                (first, !prefixed)
            } else {
                let scope = FieldScope::All;
                (self.union_from(first, &scope, false, Stop::None)?, false)
            }
        };
        let mut vector = None;
        if self.kind() == Kind::Arrow && self.peek_at(1).kind == Kind::LBracket {
            if !self.d2() || !simple {
                return Err(self.syntax());
            }
            self.bump();
            self.bump();
            vector = Some(self.knn()?);
        }
        if self.kind() != Kind::End {
            return Err(self.syntax());
        }
        Ok(Query { filter, vector })
    }

    /// Whether the current token can start an element.
    fn starts_element(&self) -> bool {
        matches!(
            self.kind(),
            Kind::Term
                | Kind::Number
                | Kind::Prefix
                | Kind::Suffix
                | Kind::Fuzzy
                | Kind::Param
                | Kind::Modifier
                | Kind::LParen
                | Kind::Minus
                | Kind::Tilde
                | Kind::Quote
        )
    }

    /// `intersection ('|' intersection)*`; in DIALECT 1 `stop` limits an
    /// operator's reach.
    fn union(&mut self, scope: &FieldScope, in_field: bool, stop: Stop) -> PResult<Node> {
        // `(*=>[…])` opening the query is blamed on its arrow, elsewhere on `*`.
        if self.kind() == Kind::Star && self.peek_at(1).kind == Kind::Arrow && self.at == 1 {
            self.bump();
            return Err(self.syntax());
        }
        if !self.starts_element() {
            return Err(self.syntax());
        }
        let first = self.unary(scope, in_field)?;
        self.union_from(first, scope, in_field, stop)
    }

    /// The rest of a query (or group) whose first element is `first`: an
    /// intersection of unions. In DIALECT 2 a union's operand is an intersection,
    /// so `|` binds loosest. In DIALECT 1, as in RediSearch's grammar, `|` binds
    /// tighter than juxtaposition: an operand is one element, or a run of bare terms
    /// (`a b|c @t:x` is `((a b) | c) @t:x`), and the next element starts a new union.
    fn union_from(
        &mut self,
        first: Node,
        scope: &FieldScope,
        in_field: bool,
        stop: Stop,
    ) -> PResult<Node> {
        let mut all = Node::Empty;
        let mut chain = self.operand(first, scope, in_field, stop)?;
        loop {
            while self.kind() == Kind::Or {
                self.bump();
                if !self.starts_element() {
                    return Err(self.syntax());
                }
                let operand = self.next_operand(scope, in_field, stop)?;
                chain = combine(chain, operand, true, scope);
            }
            all = combine(all, chain, false, scope);
            if !self.starts_element() || self.stops(stop) {
                return Ok(all);
            }
            chain = self.next_operand(scope, in_field, stop)?;
        }
    }

    /// The union operand that starts at the next element.
    fn next_operand(&mut self, scope: &FieldScope, in_field: bool, stop: Stop) -> PResult<Node> {
        let first = self.unary(scope, in_field)?;
        self.operand(first, scope, in_field, stop)
    }

    /// A union's operand that starts with `first` (see [`Parser::union_from`]).
    fn operand(
        &mut self,
        first: Node,
        scope: &FieldScope,
        in_field: bool,
        stop: Stop,
    ) -> PResult<Node> {
        if self.d2() {
            self.intersection_from(first, scope, in_field, stop)
        } else {
            self.d1_operand(first, scope, in_field, stop)
        }
    }

    /// A DIALECT 1 operand: `node`, with the bare terms after it when it is a bare
    /// term itself (RediSearch's term list).
    fn d1_operand(
        &mut self,
        mut node: Node,
        scope: &FieldScope,
        in_field: bool,
        stop: Stop,
    ) -> PResult<Node> {
        let bare =
            |p: &Self| p.at > 0 && matches!(p.toks[p.at - 1].kind, Kind::Term | Kind::Number);
        if !bare(self) {
            return Ok(node);
        }
        while matches!(self.kind(), Kind::Term | Kind::Number) && !self.stops(stop) {
            let right = self.unary(scope, in_field)?;
            node = combine(node, right, false, scope);
            if !bare(self) {
                break;
            }
        }
        Ok(node)
    }

    /// Whether the current token ends the reach of a DIALECT 1 operator.
    fn stops(&self, stop: Stop) -> bool {
        match stop {
            Stop::None => false,
            Stop::Negation => matches!(self.kind(), Kind::Minus | Kind::Tilde),
            Stop::Optional => self.kind() == Kind::Tilde,
            Stop::Field => !matches!(self.kind(), Kind::Term | Kind::Number | Kind::Param),
        }
    }

    /// The rest of a DIALECT 2 intersection whose first element is `node`.
    fn intersection_from(
        &mut self,
        mut node: Node,
        scope: &FieldScope,
        in_field: bool,
        stop: Stop,
    ) -> PResult<Node> {
        while self.starts_element() && !self.stops(stop) {
            let right = self.unary(scope, in_field)?;
            node = combine(node, right, false, scope);
        }
        Ok(node)
    }

    /// `-x`, `~x` or an atom.
    fn unary(&mut self, scope: &FieldScope, in_field: bool) -> PResult<Node> {
        let negate = match self.kind() {
            Kind::Minus => true,
            Kind::Tilde => false,
            _ => return self.atom(scope, in_field),
        };
        self.bump();
        let child = if self.d2() {
            if !self.starts_element() {
                return Err(self.syntax());
            }
            self.unary(scope, in_field)?
        } else {
            let reach = if negate {
                Stop::Negation
            } else {
                Stop::Optional
            };
            self.union(scope, in_field, reach)?
        };
        if child == Node::Empty {
            return Ok(Node::Empty);
        }
        let fields = scope.clone();
        let child = Box::new(child);
        Ok(if negate {
            Node::Not { fields, child }
        } else {
            Node::Optional { fields, child }
        })
    }

    /// A term, phrase, group or field expression, with optional `=>{…}` attributes.
    fn atom(&mut self, scope: &FieldScope, in_field: bool) -> PResult<Node> {
        let i = self.at;
        let tok = self.bump();
        let fields = scope.clone();
        let node = match tok.kind {
            Kind::Number if !self.d2() && tok.raw.first() == Some(&b'+') => {
                self.text_term(scope, &tok.raw[1..], true)
            }
            Kind::Term | Kind::Number => self.text_term(scope, &tok.raw, tok.kind == Kind::Number),
            Kind::Param => Node::Term {
                fields,
                term: lowercase(&self.param(i)?),
                expanded: false,
            },
            Kind::Prefix => Node::Prefix {
                fields,
                prefix: lowercase(&unescape(&tok.raw)),
            },
            Kind::Suffix => Node::Suffix {
                fields,
                suffix: lowercase(&unescape(&tok.raw)),
            },
            Kind::Fuzzy => Node::Fuzzy {
                fields,
                term: lowercase(&unescape(&tok.raw)),
                distance: tok.fuzz,
            },
            Kind::Quote => {
                let words = self.phrase(i)?;
                let terms: Vec<Vec<u8>> = words.iter().map(|w| lowercase(&unescape(w))).collect();
                if !self.d2() {
                    // DIALECT 1: no empty phrases or stopwords; one word is a term.
                    if let Some(bad) = terms.iter().position(|t| self.fields.is_stopword(t)) {
                        return Err(self.syntax_at(i + 1 + bad, ""));
                    }
                    if terms.is_empty() {
                        return Err(self.syntax_at(i + 1, ""));
                    }
                    if terms.len() == 1 {
                        return Ok(self.text_term(scope, &words[0], false));
                    }
                }
                Node::Phrase { fields, terms }
            }
            Kind::LParen => {
                if self.kind() == Kind::RParen {
                    return Err(self.syntax());
                }
                let node = self.union(scope, in_field, Stop::None)?;
                self.expect(Kind::RParen)?;
                node
            }
            Kind::Modifier => {
                if in_field && self.d2() {
                    return Err(self.syntax_at(i, ""));
                }
                self.at = i;
                self.field_expr(scope)?
            }
            Kind::Star if self.kind() == Kind::Arrow => return Err(self.syntax()),
            _ => return Err(self.syntax_at(i, "")),
        };
        self.attributes(&node)?;
        Ok(node)
    }

    /// The words of a phrase up to the closing quote (the opening one is consumed).
    fn phrase(&mut self, open: usize) -> PResult<Vec<Vec<u8>>> {
        let mut words = Vec::new();
        loop {
            let t = self.bump();
            match t.kind {
                Kind::Quote => return Ok(words),
                // DIALECT 2 blames the phrase's first word, DIALECT 1 the end.
                Kind::End if self.d2() => return Err(self.syntax_at(open + 1, "")),
                Kind::End => return Err(self.syntax()),
                _ => words.push(t.raw),
            }
        }
    }

    /// `@a|b:…`: the field list, then what follows the colon.
    fn field_expr(&mut self, outer: &FieldScope) -> PResult<Node> {
        let first = self.bump();
        let mut names = vec![first.raw.clone()];
        while self.kind() == Kind::Or && self.peek_at(1).kind == Kind::Term {
            self.bump();
            names.push(self.bump().raw);
        }
        self.expect(Kind::Colon)?;
        let field = first.raw;
        match self.kind() {
            Kind::LBrace => {
                self.bump();
                self.tags(field)
            }
            Kind::LBracket => {
                self.bump();
                self.range(field)
            }
            _ => {
                let scope = outer.intersect(&self.text_scope(&names));
                if self.d2() {
                    self.unary(&scope, true)
                } else {
                    if self.kind() == Kind::LParen {
                        return self.atom(&scope, true);
                    }
                    self.union(&scope, true, Stop::Field)
                }
            }
        }
    }

    /// The TEXT fields among `names`, in schema order, without repeats.
    fn text_scope(&self, names: &[Vec<u8>]) -> FieldScope {
        let mut text: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if self.fields.kind(name) == Some(FieldKind::Text)
                && !text.iter().any(|(_, n)| n == name)
            {
                let order = self
                    .fields
                    .position(name)
                    .unwrap_or(usize::MAX - names.len() + i);
                text.push((order, name.clone()));
            }
        }
        text.sort();
        FieldScope::Fields(text.into_iter().map(|(_, n)| n).collect())
    }

    /// `{a | b c | d* | "x y" | $p}` after the opening brace.
    fn tags(&mut self, field: Vec<u8>) -> PResult<Node> {
        let mut alternatives = Vec::new();
        loop {
            let mut words = Vec::new();
            loop {
                let i = self.at;
                let t = self.bump();
                let word = match t.kind {
                    Kind::Term | Kind::Number => TagAlternative::Exact(t.raw),
                    Kind::Prefix => TagAlternative::Prefix(t.raw),
                    Kind::Param => TagAlternative::Exact(self.param(i)?),
                    Kind::Quote => {
                        self.phrase(i)?;
                        let end = self.toks[self.at - 1].pos;
                        TagAlternative::Exact(self.src[t.pos + 1..end].to_vec())
                    }
                    _ => return Err(self.syntax_at(i, "")),
                };
                words.push(word);
                if matches!(self.kind(), Kind::Or | Kind::RBrace) {
                    break;
                }
            }
            alternatives.push(if words.len() == 1 {
                words.remove(0)
            } else {
                TagAlternative::All(words)
            });
            if self.bump().kind == Kind::RBrace {
                break;
            }
        }
        let node = Node::Tag {
            field,
            alternatives,
        };
        Ok(node)
    }

    /// One item inside `[…]`: a number, `(number`, or `$param` (DIALECT 2). Returns
    /// the value text and whether `(` made it exclusive.
    fn range_item(&mut self) -> PResult<(Vec<u8>, bool, bool)> {
        let exclusive = self.kind() == Kind::LParen;
        if exclusive {
            self.bump();
        }
        let i = self.at;
        match self.kind() {
            Kind::Number => Ok((self.bump().raw, exclusive, false)),
            Kind::Param if self.d2() => {
                self.bump();
                Ok((self.param(i)?, exclusive, true))
            }
            _ => Err(self.syntax()),
        }
    }

    /// `[lo hi]`, `[v]` (DIALECT 2), `[lon lat radius unit]` or
    /// `[VECTOR_RANGE r $blob]` after the opening bracket.
    fn range(&mut self, field: Vec<u8>) -> PResult<Node> {
        if self.kind() == Kind::Term && self.d2() {
            return self.vector_range(field);
        }
        let lo = self.range_item()?;
        if self.kind() == Kind::RBracket && self.d2() {
            self.bump();
            let range = numeric_range(&lo, &lo)?;
            return Ok(Node::Numeric { field, range });
        }
        let hi = self.range_item()?;
        if self.kind() == Kind::RBracket {
            self.bump();
            let range = numeric_range(&lo, &hi)?;
            return Ok(Node::Numeric { field, range });
        }
        let radius = self.range_item()?;
        let unit_tok = self.expect(Kind::Term)?;
        self.expect(Kind::RBracket)?;
        let unit = match unit_tok.raw.to_ascii_lowercase().as_slice() {
            b"m" => GeoUnit::M,
            b"km" => GeoUnit::Km,
            b"mi" => GeoUnit::Mi,
            b"ft" => GeoUnit::Ft,
            _ => return Err(QueryError::new("Invalid GeoFilter unit")),
        };
        let num = |v: &(Vec<u8>, bool, bool)| {
            parse_double(&v.0).ok_or_else(|| QueryError::new("Invalid GeoFilter unit"))
        };
        Ok(Node::Geo {
            field,
            lon: num(&lo)?,
            lat: num(&hi)?,
            radius: num(&radius)?,
            unit,
        })
    }

    /// `{ $name: value; … }` after `=>{`: the pairs, values resolved.
    pub(super) fn attribute_list(&mut self) -> PResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        while self.kind() != Kind::RBrace {
            let name = self.expect(Kind::Param)?.raw;
            self.expect(Kind::Colon)?;
            let i = self.at;
            let v = self.bump();
            let value = match v.kind {
                Kind::Term | Kind::Number => v.raw,
                Kind::Param => self.param(i)?,
                _ => return Err(self.syntax_at(i, "")),
            };
            out.push((name, value));
            if self.kind() == Kind::Semicolon {
                self.bump();
            } else if self.kind() != Kind::RBrace {
                return Err(self.syntax());
            }
        }
        self.bump();
        Ok(out)
    }

    /// Optional `=>{$weight: …; $slop: …; $inorder: …; $phonetic: …}` after an
    /// element: validated, then dropped (they tune scoring, not matching).
    fn attributes(&mut self, node: &Node) -> PResult<()> {
        if !(self.kind() == Kind::Arrow && self.peek_at(1).kind == Kind::LBrace && self.d2()) {
            return Ok(());
        }
        if matches!(node, Node::VectorRange(_)) {
            return Ok(());
        }
        self.bump();
        self.bump();
        for (name, _) in self.attribute_list()? {
            let lower = name.to_ascii_lowercase();
            if !matches!(
                lower.as_slice(),
                b"weight" | b"slop" | b"inorder" | b"phonetic"
            ) {
                return Err(invalid_attribute(&name));
            }
        }
        Ok(())
    }
}

/// RediSearch's error for an unknown `=>{$name: …}` attribute.
pub(super) fn invalid_attribute(name: &[u8]) -> QueryError {
    QueryError::new(format!(
        "Invalid attribute {}",
        String::from_utf8_lossy(name)
    ))
}

/// Builds a numeric range from two range items. Literal bounds honour `(`; a
/// parameter's value may start with `(`, which is skipped without making the bound
/// exclusive (as RediSearch does).
fn numeric_range(lo: &(Vec<u8>, bool, bool), hi: &(Vec<u8>, bool, bool)) -> PResult<NumericRange> {
    let bound = |item: &(Vec<u8>, bool, bool), which: &str| -> PResult<f64> {
        let (raw, _, from_param) = item;
        let text = match raw.first() {
            Some(b'(') if *from_param => &raw[1..],
            _ => &raw[..],
        };
        parse_double(text).ok_or_else(|| {
            QueryError::new(format!(
                "Bad {which} range: {}",
                String::from_utf8_lossy(text)
            ))
        })
    };
    Ok(NumericRange {
        min: bound(lo, "lower")?,
        min_inclusive: !lo.1,
        max: bound(hi, "upper")?,
        max_inclusive: !hi.1,
    })
}

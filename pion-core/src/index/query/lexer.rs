//! Splits query text into tokens the way RediSearch's scanner does.
//!
//! Every token records its byte offset. Syntax errors quote the offset of the token
//! that could not be parsed and the text of the last token that carried text (a
//! punctuation token does not replace it), which is what RediSearch prints; the
//! parser reproduces this with [`Token::pos`] and [`Token::text`].

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A word (letters, digits, `_`, bytes ≥ 0x80, backslash escapes).
    Term,
    /// A number (`12`, `-1.5`, `1e3`, `-inf`); a term everywhere but in ranges.
    Number,
    /// `word*`.
    Prefix,
    /// `*word`.
    Suffix,
    /// `%word%`, `%%word%%`, `%%%word%%%`; the depth is in [`Token::fuzz`].
    Fuzzy,
    /// `$name`.
    Param,
    /// `@name`.
    Modifier,
    /// `|`.
    Or,
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `{`.
    LBrace,
    /// `}`.
    RBrace,
    /// `[`.
    LBracket,
    /// `]`.
    RBracket,
    /// `:`.
    Colon,
    /// `;`.
    Semicolon,
    /// `-` (not starting a number).
    Minus,
    /// `~`.
    Tilde,
    /// `*` alone.
    Star,
    /// `%` not forming a fuzzy term.
    Percent,
    /// `"`.
    Quote,
    /// `=>`.
    Arrow,
    /// End of input.
    End,
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub kind: Kind,
    /// Byte offset of its first character.
    pub pos: usize,
    /// Its text as written (escapes kept; without `$`, `@`, `*`, `%`), for tokens
    /// that carry text; empty for punctuation.
    pub raw: Vec<u8>,
    /// Fuzzy depth (1 to 3) for [`Kind::Fuzzy`].
    pub fuzz: u8,
}

impl Token {
    /// Whether this token carries text (updates the "near" part of errors).
    pub fn has_text(&self) -> bool {
        matches!(
            self.kind,
            Kind::Term
                | Kind::Number
                | Kind::Prefix
                | Kind::Suffix
                | Kind::Param
                | Kind::Modifier
                | Kind::Arrow
        )
    }
}

/// Whether `c` may appear unescaped in a word.
pub(crate) fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Length of the word starting at `i` (escapes included), 0 if none.
fn word_len(s: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < s.len() {
        if is_word_byte(s[j]) {
            j += 1;
        } else if s[j] == b'\\' && j + 1 < s.len() {
            // An escaped character, blanks included, belongs to the word (`a\ b`).
            j += 2;
        } else {
            break;
        }
    }
    j - i
}

/// Length of the number starting at `i`, 0 if none.
fn number_len(s: &[u8], i: usize) -> usize {
    let mut j = i;
    if matches!(s.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    if s.len() >= j + 3 && s[j..j + 3].eq_ignore_ascii_case(b"inf") {
        return j + 3 - i;
    }
    let digits = |j: usize| s[j..].iter().take_while(|c| c.is_ascii_digit()).count();
    let n = digits(j);
    if n == 0 {
        return 0;
    }
    j += n;
    if s.get(j) == Some(&b'.') {
        let f = digits(j + 1);
        if f > 0 {
            j += 1 + f;
        }
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let e = digits(k);
        if e > 0 {
            j = k + e;
        }
    }
    j - i
}

/// Splits `s` into tokens; `in_quotes` state is tracked so that punctuation inside
/// a phrase only separates words. The last token is always [`Kind::End`].
pub(crate) fn tokenize(s: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_quotes = false;
    let tok = |kind, pos, raw: &[u8]| Token {
        kind,
        pos,
        raw: raw.to_vec(),
        fuzz: 0,
    };
    while i < s.len() {
        let c = s[i];
        if c == b'"' {
            in_quotes = !in_quotes;
            out.push(tok(Kind::Quote, i, b""));
            i += 1;
            continue;
        }
        if in_quotes && c == b'$' && word_len(s, i + 1) > 0 {
            // Parameters are not expanded inside a phrase: `$p` is a word.
            let n = 1 + word_len(s, i + 1);
            out.push(tok(Kind::Term, i, &s[i..i + n]));
            i += n;
            continue;
        }
        let num = if in_quotes { 0 } else { number_len(s, i) };
        let word = word_len(s, i);
        if num > 0 && num >= word {
            // A number followed by `*` is a prefix of that text (`15*`, `-1.5*`).
            if s.get(i + num) == Some(&b'*') {
                out.push(tok(Kind::Prefix, i, &s[i..i + num]));
                i += num + 1;
            } else {
                out.push(tok(Kind::Number, i, &s[i..i + num]));
                i += num;
            }
            continue;
        }
        if word > 0 {
            let raw = &s[i..i + word];
            if !in_quotes && s.get(i + word) == Some(&b'*') {
                out.push(tok(Kind::Prefix, i, raw));
                i += word + 1;
            } else {
                out.push(tok(Kind::Term, i, raw));
                i += word;
            }
            continue;
        }
        if in_quotes || c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let next_word = |at: usize| word_len(s, at);
        match c {
            b'|' => out.push(tok(Kind::Or, i, b"")),
            b'(' => out.push(tok(Kind::LParen, i, b"")),
            b')' => out.push(tok(Kind::RParen, i, b"")),
            b'{' => out.push(tok(Kind::LBrace, i, b"")),
            b'}' => out.push(tok(Kind::RBrace, i, b"")),
            b'[' => out.push(tok(Kind::LBracket, i, b"")),
            b']' => out.push(tok(Kind::RBracket, i, b"")),
            b':' => out.push(tok(Kind::Colon, i, b"")),
            b';' => out.push(tok(Kind::Semicolon, i, b"")),
            b'-' => out.push(tok(Kind::Minus, i, b"")),
            b'~' => out.push(tok(Kind::Tilde, i, b"")),
            b'=' if s.get(i + 1) == Some(&b'>') => {
                out.push(tok(Kind::Arrow, i, &s[i + 1..(i + 3).min(s.len())]));
                i += 2;
                continue;
            }
            b'$' | b'@' if next_word(i + 1) > 0 => {
                let n = next_word(i + 1);
                let kind = if c == b'$' {
                    Kind::Param
                } else {
                    Kind::Modifier
                };
                out.push(tok(kind, i, &s[i + 1..i + 1 + n]));
                i += 1 + n;
                continue;
            }
            b'*' if next_word(i + 1) > 0 => {
                let n = next_word(i + 1);
                out.push(tok(Kind::Suffix, i, &s[i + 1..i + 1 + n]));
                i += 1 + n;
                continue;
            }
            b'*' => out.push(tok(Kind::Star, i, b"")),
            b'%' => {
                let depth = s[i..].iter().take_while(|&&c| c == b'%').count();
                let n = next_word(i + depth);
                let closing = s[i + depth + n..]
                    .iter()
                    .take_while(|&&c| c == b'%')
                    .count();
                if (1..=3).contains(&depth) && n > 0 && closing >= depth {
                    out.push(Token {
                        kind: Kind::Fuzzy,
                        pos: i,
                        raw: s[i + depth..i + depth + n].to_vec(),
                        fuzz: depth as u8,
                    });
                    i += 2 * depth + n;
                    continue;
                }
                out.push(tok(Kind::Percent, i, b""));
            }
            // Other punctuation separates words and is otherwise ignored.
            _ => {}
        }
        i += 1;
    }
    out.push(tok(Kind::End, s.len(), b""));
    out
}

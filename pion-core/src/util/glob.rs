//! Redis's glob-style pattern matching (`KEYS`, `SCAN MATCH`, `PSUBSCRIBE`, …).
//!
//! The rules follow Redis's `stringmatchlen` exactly, including its quirks (an unclosed
//! `[` class, reversed ranges such as `[z-a]`, a trailing backslash) and its guard
//! against patterns that would otherwise take exponential time.

/// Whether `string` matches the glob `pattern`.
///
/// ```
/// use pion_core::util::glob::glob_match;
/// assert!(glob_match(b"user:*", b"user:42", false));
/// assert!(glob_match(b"h?llo", b"hello", false));
/// assert!(glob_match(b"h[^e]llo", b"hallo", false));
/// assert!(!glob_match(b"h[^e]llo", b"hello", false));
/// assert!(glob_match(b"HELLO", b"hello", true));
/// ```
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // Redis's callers (KEYS, SCAN, CONFIG GET) treat a lone `*` as "everything" before
    // matching, which also covers the empty key.
    if pattern == b"*" {
        return true;
    }
    let mut skip_longer = false;
    match_impl(pattern, string, nocase, &mut skip_longer, 0)
}

fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn match_impl(pat: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    // Protection against abusive patterns, as in Redis.
    if nesting > 1000 {
        return false;
    }
    // `at` reads like the C code, which may look one byte past the end (the NUL).
    let at = |p: &[u8], i: usize| -> u8 { p.get(i).copied().unwrap_or(0) };
    let mut p = 0usize;
    let mut i = 0usize;
    while p < pat.len() && i < s.len() {
        match pat[p] {
            b'*' => {
                while p < pat.len() && at(pat, p + 1) == b'*' {
                    p += 1;
                }
                if pat.len() - p == 1 {
                    return true;
                }
                while i < s.len() {
                    if match_impl(&pat[p + 1..], &s[i..], nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    i += 1;
                }
                // No match for the rest of the pattern from anywhere in the rest of the
                // string: longer matches for earlier stars cannot help either.
                *skip_longer = true;
                return false;
            }
            b'?' => {
                i += 1;
            }
            b'[' => {
                p += 1;
                let not = at(pat, p) == b'^';
                if not {
                    p += 1;
                }
                let mut matched = false;
                loop {
                    let remaining = pat.len().saturating_sub(p);
                    if at(pat, p) == b'\\' && remaining >= 2 {
                        p += 1;
                        if pat[p] == s[i] {
                            matched = true;
                        }
                    } else if at(pat, p) == b']' {
                        break;
                    } else if remaining == 0 {
                        // Unterminated class: step back so the outer loop ends cleanly.
                        p -= 1;
                        break;
                    } else if remaining >= 3 && pat[p + 1] == b'-' {
                        let (mut start, mut end) = (pat[p], pat[p + 2]);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let c = fold(s[i], nocase);
                        let (start, end) = (fold(start, nocase), fold(end, nocase));
                        p += 2;
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if fold(pat[p], nocase) == fold(s[i], nocase) {
                        matched = true;
                    }
                    p += 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                i += 1;
            }
            c => {
                let mut c = c;
                if c == b'\\' && pat.len() - p >= 2 {
                    p += 1;
                    c = pat[p];
                }
                if fold(c, nocase) != fold(s[i], nocase) {
                    return false;
                }
                i += 1;
            }
        }
        p += 1;
        if i == s.len() {
            while at(pat, p) == b'*' {
                p += 1;
            }
            break;
        }
    }
    p >= pat.len() && i == s.len()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn redis_examples() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"*", b"", true),
            (b"*", b"anything", true),
            (b"h?llo", b"hallo", true),
            (b"h*llo", b"heeeello", true),
            (b"h[ae]llo", b"hello", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hello", false),
            (b"h[a-b]llo", b"hbllo", true),
            (b"h[b-a]llo", b"hallo", true),
            (b"h\\*llo", b"h*llo", true),
            (b"h\\*llo", b"hello", false),
            (b"a*b*c", b"aXXbYYc", true),
            (b"a*b*c", b"aXXbYY", false),
            (b"[abc", b"a", true),
            (b"abc\\", b"abc\\", true),
            (b"", b"", true),
            (b"", b"a", false),
            (b"a**", b"a", true),
        ];
        for (p, s, want) in cases {
            assert_eq!(
                glob_match(p, s, false),
                *want,
                "pattern {:?} string {:?}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(s)
            );
        }
    }

    #[test]
    fn abusive_pattern_is_fast() {
        let pat = b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let s = vec![b'a'; 4000];
        assert!(!glob_match(pat, &s, false));
    }
}

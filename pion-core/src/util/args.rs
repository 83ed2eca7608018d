//! A cursor over a command's arguments, for the commands whose grammar is read word
//! by word (`FT.CREATE`'s schema, `FT.HYBRID`'s clauses) rather than by position.

/// The arguments and the position of the next one.
pub struct ArgCursor<'a> {
    /// Every argument of the command.
    pub argv: &'a [Vec<u8>],
    /// The index of the next argument.
    pub at: usize,
}

impl<'a> ArgCursor<'a> {
    /// A cursor on `argv[at]`.
    pub fn new(argv: &'a [Vec<u8>], at: usize) -> ArgCursor<'a> {
        ArgCursor { argv, at }
    }

    /// The next argument, left in place.
    pub fn peek(&self) -> Option<&'a [u8]> {
        self.argv.get(self.at).map(Vec::as_slice)
    }

    /// Whether the next argument is the keyword `kw` (any case).
    pub fn is(&self, kw: &str) -> bool {
        self.peek()
            .is_some_and(|a| a.eq_ignore_ascii_case(kw.as_bytes()))
    }

    /// Consumes the next argument when it is the keyword `kw` (any case).
    pub fn eat(&mut self, kw: &str) -> bool {
        let found = self.is(kw);
        if found {
            self.at += 1;
        }
        found
    }

    /// How many arguments are left.
    pub fn remaining(&self) -> usize {
        self.argv.len().saturating_sub(self.at)
    }
}

/// The arguments left, each consumed as it is read.
impl<'a> Iterator for ArgCursor<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let a = self.peek()?;
        self.at += 1;
        Some(a)
    }
}

#[cfg(test)]
mod tests {
    use super::ArgCursor;

    #[test]
    fn walks_keywords_and_values() {
        let argv: Vec<Vec<u8>> = ["X", "knn", "2", "K"]
            .iter()
            .map(|w| w.as_bytes().to_vec())
            .collect();
        let mut a = ArgCursor::new(&argv, 1);
        assert_eq!(a.remaining(), 3);
        assert!(!a.eat("RANGE"));
        assert!(a.eat("KNN"));
        assert_eq!(a.next(), Some(&b"2"[..]));
        assert!(a.is("k"));
        assert_eq!(a.peek(), Some(&b"K"[..]));
        a.next();
        assert_eq!((a.next(), a.remaining()), (None, 0));
    }
}

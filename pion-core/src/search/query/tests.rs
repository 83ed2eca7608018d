//! Parser tests on the typed tree: constructs, precedence, escapes, parameters,
//! dialects and error texts (recorded from RediSearch 2.10.5), plus a property test
//! that no input makes the parser panic.

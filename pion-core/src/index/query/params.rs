//! Query parameters (`PARAMS n name value …`, DIALECT 2 and later) and the
//! conversions RediSearch applies when a `$name` stands for a number.

use super::QueryError;
use std::collections::HashMap;

/// The values of `$name` references: parameter name (without `$`) → raw bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    values: HashMap<Vec<u8>, Vec<u8>>,
}

impl Params {
    /// No parameters.
    pub fn new() -> Params {
        Params::default()
    }

    /// Sets `name` (without `$`) to `value`; a later value replaces an earlier one.
    pub fn insert(&mut self, name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.values.insert(name.into(), value.into());
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.values.get(name).map(Vec::as_slice)
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of `name`, or RediSearch's ``No such parameter `name` `` error.
    pub fn require(&self, name: &[u8]) -> Result<&[u8], QueryError> {
        self.get(name).ok_or_else(|| {
            QueryError::new(format!(
                "No such parameter `{}`",
                String::from_utf8_lossy(name)
            ))
        })
    }
}

impl<K: Into<Vec<u8>>, V: Into<Vec<u8>>> FromIterator<(K, V)> for Params {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Params {
        let mut params = Params::new();
        for (k, v) in iter {
            params.insert(k, v);
        }
        params
    }
}

/// Parses a whole byte string as a C double (leading blanks allowed, no trailing
/// bytes, no overflow), as RediSearch reads numeric parameters.
pub(crate) fn parse_double(s: &[u8]) -> Option<f64> {
    let r = crate::util::strtod::strtod(s);
    let overflow = r.range_error && r.value.is_infinite();
    if r.len == 0 || r.len != s.len() || overflow || r.value.is_nan() {
        return None;
    }
    Some(r.value)
}

/// Parses a non-negative integer parameter (KNN's `k`).
pub(crate) fn parse_count(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The error for a parameter that is not a valid number.
pub(crate) fn invalid_numeric(name: &[u8], value: &[u8]) -> QueryError {
    QueryError::new(format!(
        "Invalid numeric value ({}) for parameter `{}`",
        String::from_utf8_lossy(value),
        String::from_utf8_lossy(name)
    ))
}

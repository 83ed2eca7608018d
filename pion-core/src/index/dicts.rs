//! RediSearch's custom dictionaries (`FT.DICTADD`, `FT.DICTDEL`, `FT.DICTDUMP`): named
//! sets of terms that `FT.SPELLCHECK … TERMS INCLUDE|EXCLUDE` reads. They belong to the
//! server rather than to an index, go with `FLUSHALL` as in RediSearch, and are saved
//! with the search indexes in a snapshot ([`super::persist`]).

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::RwLock;

/// Every dictionary, by name; a dictionary exists while it holds a term.
#[derive(Default)]
pub struct Dictionaries {
    map: RwLock<BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>>,
}

impl Dictionaries {
    /// Adds terms (kept as given) to `name`, creating it; returns how many were new.
    pub fn add(&self, name: &[u8], terms: &[Vec<u8>]) -> usize {
        let mut map = self.map.write();
        let dict = map.entry(name.to_vec()).or_default();
        let added = terms.iter().filter(|t| dict.insert((*t).clone())).count();
        if dict.is_empty() {
            map.remove(name);
        }
        added
    }

    /// Removes terms from `name`; returns how many were there. An emptied dictionary
    /// is gone.
    pub fn remove(&self, name: &[u8], terms: &[Vec<u8>]) -> usize {
        let mut map = self.map.write();
        let Some(dict) = map.get_mut(name) else {
            return 0;
        };
        let removed = terms.iter().filter(|t| dict.remove(t.as_slice())).count();
        if dict.is_empty() {
            map.remove(name);
        }
        removed
    }

    /// The terms of `name` in byte order; `None` when there is no such dictionary.
    pub fn terms(&self, name: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.map
            .read()
            .get(name)
            .map(|d| d.iter().cloned().collect())
    }

    /// Whether any dictionary exists.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }

    /// Every dictionary with its terms, by name.
    pub fn all(&self) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
        self.map
            .read()
            .iter()
            .map(|(n, d)| (n.clone(), d.iter().cloned().collect()))
            .collect()
    }

    /// Removes every dictionary (`FLUSHALL`).
    pub fn clear(&self) {
        self.map.write().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn dictionaries_count_changes_and_vanish_when_empty() {
        let d = Dictionaries::default();
        assert_eq!(d.add(b"d", &v(&["b", "a", "b"])), 2);
        assert_eq!(d.add(b"d", &v(&["a"])), 0);
        assert_eq!(d.terms(b"d"), Some(v(&["a", "b"])));
        assert_eq!(d.remove(b"d", &v(&["a", "zz"])), 1);
        assert_eq!(d.remove(b"nope", &v(&["a"])), 0);
        assert_eq!(d.remove(b"d", &v(&["b"])), 1);
        assert_eq!(d.terms(b"d"), None);
        assert!(d.is_empty());
    }
}

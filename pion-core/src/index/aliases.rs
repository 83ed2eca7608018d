//! Index aliases (`FT.ALIASADD`, `FT.ALIASUPDATE`, `FT.ALIASDEL`): a second name under
//! which commands find an index, so an application can build a new index beside the
//! old one and switch its readers over in one command. An alias names an index, never
//! another alias; a name that is both an index and an alias means the index, as in
//! RediSearch. Aliases go with their index when it is dropped and are saved with the
//! indexes in a snapshot ([`super::persist`]).

use std::collections::BTreeMap;

use parking_lot::RwLock;

/// Every alias, with the name of the index it stands for.
#[derive(Default)]
pub struct Aliases {
    map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl Aliases {
    /// The index `alias` stands for.
    pub fn target(&self, alias: &[u8]) -> Option<Vec<u8>> {
        self.map.read().get(alias).cloned()
    }

    /// Points `alias` at `index`; with `replace` false an alias that exists is
    /// refused (`false`), with it the alias moves.
    pub fn set(&self, alias: &[u8], index: &[u8], replace: bool) -> bool {
        let mut map = self.map.write();
        if !replace && map.contains_key(alias) {
            return false;
        }
        map.insert(alias.to_vec(), index.to_vec());
        true
    }

    /// Removes `alias`; whether it existed.
    pub fn remove(&self, alias: &[u8]) -> bool {
        self.map.write().remove(alias).is_some()
    }

    /// Removes every alias of `index` (the index was dropped).
    pub fn forget_index(&self, index: &[u8]) {
        self.map
            .write()
            .retain(|_, target| target.as_slice() != index);
    }

    /// Every alias with its index, by alias.
    pub fn all(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.map
            .read()
            .iter()
            .map(|(a, i)| (a.clone(), i.clone()))
            .collect()
    }

    /// Whether there is no alias.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }

    /// Removes every alias (`FLUSHALL`).
    pub fn clear(&self) {
        self.map.write().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_is_added_once_moved_by_update_and_goes_with_its_index() {
        let a = Aliases::default();
        assert!(a.set(b"a", b"i", false));
        assert!(!a.set(b"a", b"j", false));
        assert_eq!(a.target(b"a"), Some(b"i".to_vec()));
        assert!(a.set(b"a", b"j", true));
        assert!(a.set(b"b", b"j", false));
        assert!(a.set(b"c", b"i", false));
        a.forget_index(b"j");
        assert_eq!(a.all(), vec![(b"c".to_vec(), b"i".to_vec())]);
        assert!(a.remove(b"c"));
        assert!(!a.remove(b"c"));
        assert!(a.is_empty());
    }
}

//! Each indexed term's weighted frequency in each document, kept from indexing as
//! RediSearch keeps its term records: the scorers read a term's frequencies from here
//! instead of counting a document's tokens, and its document frequency is a count.
//!
//! A term's frequency in a document sums every field: each occurrence of the word
//! counts its TEXT field's weight, each `+stem` or synonym group what
//! [`super::docs::Extra::weight`] says (RediSearch keeps one frequency per term and
//! document, whatever field a query names).
//!
//! Document ids only grow (a re-indexed hash gets a new one), so a term's entries are
//! appended in id order. Removing a document only counts its entries as stale; a list
//! is compacted once more than half of it is, so removal costs O(1) amortised.

use std::collections::HashMap;

use super::docs::DocSet;

/// One term's documents and its weighted frequency in each.
#[derive(Debug, Clone, Default)]
pub struct TermPostings {
    /// (document id, weighted frequency), ascending by id; may hold documents removed
    /// since, which every caller filters out with a set of live documents.
    entries: Vec<(u64, f64)>,
    /// Entries of removed documents.
    stale: usize,
}

impl TermPostings {
    /// Documents holding the term (its document frequency).
    pub fn live(&self) -> usize {
        self.entries.len() - self.stale
    }

    /// Every entry, removed documents' included: filter with a set of live ids.
    pub fn entries(&self) -> &[(u64, f64)] {
        &self.entries
    }

    /// The term's frequency in live document `id` (0 when it does not hold the term).
    pub fn frequency(&self, id: u64) -> f64 {
        match self.entries.binary_search_by_key(&id, |e| e.0) {
            Ok(i) => self.entries[i].1,
            Err(_) => 0.0,
        }
    }

    fn add(&mut self, id: u64, freq: f64) {
        match self.entries.last() {
            Some(&(last, _)) if last >= id => {
                // Only a restore indexes out of order (ids are never reused).
                if let Err(i) = self.entries.binary_search_by_key(&id, |e| e.0) {
                    self.entries.insert(i, (id, freq));
                }
            }
            _ => self.entries.push((id, freq)),
        }
    }
}

/// Every term's postings with frequencies, over all TEXT fields of an index.
#[derive(Debug, Default)]
pub struct TermFrequencies {
    by_term: HashMap<Vec<u8>, TermPostings, ahash::RandomState>,
}

impl TermFrequencies {
    /// A term's postings; `None` when no live document holds it.
    pub fn get(&self, term: &[u8]) -> Option<&TermPostings> {
        self.by_term.get(term)
    }

    /// Documents holding `term` in any TEXT field.
    pub fn document_frequency(&self, term: &[u8]) -> usize {
        self.get(term).map_or(0, TermPostings::live)
    }

    /// Records a newly indexed document's terms and their frequencies.
    pub fn add<'t>(&mut self, id: u64, terms: impl IntoIterator<Item = (&'t [u8], f64)>) {
        for (term, freq) in terms {
            match self.by_term.get_mut(term) {
                Some(p) => p.add(id, freq),
                None => {
                    let mut p = TermPostings::default();
                    p.add(id, freq);
                    self.by_term.insert(term.to_vec(), p);
                }
            }
        }
    }

    /// Forgets a removed document's `terms` (each once). `live` no longer holds `id`:
    /// compaction keeps the entries of the documents it does hold.
    pub fn remove<'t>(&mut self, terms: impl IntoIterator<Item = &'t [u8]>, live: &DocSet) {
        for term in terms {
            let Some(p) = self.by_term.get_mut(term) else {
                continue;
            };
            p.stale += 1;
            if p.live() == 0 {
                self.by_term.remove(term);
            } else if p.stale * 2 > p.entries.len() {
                p.entries.retain(|&(id, _)| live.contains(id));
                p.stale = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ids: &[u64]) -> DocSet {
        let mut s = DocSet::new();
        for &id in ids {
            s.insert(id);
        }
        s
    }

    #[test]
    fn frequencies_follow_adds_and_removals() {
        let mut t = TermFrequencies::default();
        t.add(1, [(&b"a"[..], 2.0), (&b"b"[..], 1.0)]);
        t.add(2, [(&b"a"[..], 1.0)]);
        t.add(3, [(&b"a"[..], 5.0)]);
        assert_eq!(t.document_frequency(b"a"), 3);
        assert_eq!(t.get(b"a").expect("postings of a").frequency(3), 5.0);
        assert_eq!(t.get(b"a").expect("postings of a").frequency(4), 0.0);
        // Removing 1 leaves a stale entry (1 of 3 is not past half).
        t.remove([&b"a"[..], &b"b"[..]], &live(&[2, 3]));
        assert_eq!(t.document_frequency(b"a"), 2);
        assert_eq!(t.get(b"a").expect("postings of a").entries().len(), 3);
        assert!(t.get(b"b").is_none(), "a term no document holds is gone");
        // Removing 2 makes two of three stale: compacted to the live one.
        t.remove([&b"a"[..]], &live(&[3]));
        assert_eq!(t.get(b"a").expect("postings of a").entries(), &[(3, 5.0)]);
        assert_eq!(t.document_frequency(b"a"), 1);
    }

    #[test]
    fn an_out_of_order_add_stays_sorted() {
        let mut t = TermFrequencies::default();
        t.add(5, [(&b"x"[..], 1.0)]);
        t.add(2, [(&b"x"[..], 3.0)]);
        t.add(9, [(&b"x"[..], 4.0)]);
        assert_eq!(
            t.get(b"x").expect("postings of x").entries(),
            &[(2, 3.0), (5, 1.0), (9, 4.0)]
        );
        assert_eq!(t.get(b"x").expect("postings of x").frequency(2), 3.0);
    }
}

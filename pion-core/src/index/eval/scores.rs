//! Text scores by document id: what a query's evaluation adds up for each document
//! it matches. Ranking reads every matched document's score, so they are kept in
//! pages indexed by id (ids are dense) rather than in a hash map: a lookup is two
//! loads, and a query touching few documents allocates only their pages.

use crate::index::docs::{DocSet, IdMap};

/// Ids per page.
const PAGE: usize = 1024;

/// Scores of documents, by id; a document without one reads as absent.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    pages: Vec<Option<Box<[f64; PAGE]>>>,
    present: DocSet,
    count: usize,
}

fn split(id: u64) -> (usize, usize) {
    let id = usize::try_from(id).unwrap_or(usize::MAX);
    (id / PAGE, id % PAGE)
}

impl Scores {
    /// No scores.
    pub fn new() -> Scores {
        Scores::default()
    }

    /// A document's score, if it has one.
    pub fn get(&self, id: u64) -> Option<f64> {
        if !self.present.contains(id) {
            return None;
        }
        let (p, i) = split(id);
        self.pages.get(p)?.as_ref().map(|page| page[i])
    }

    /// The score slot of a document, created at 0.
    pub fn slot(&mut self, id: u64) -> &mut f64 {
        let (p, i) = split(id);
        if self.pages.len() <= p {
            self.pages.resize_with(p + 1, || None);
        }
        let page = self.pages[p].get_or_insert_with(|| Box::new([0.0; PAGE]));
        if !self.present.contains(id) {
            self.present.insert(id);
            self.count += 1;
            page[i] = 0.0;
        }
        &mut page[i]
    }

    /// Adds to a document's score (from 0 when it has none).
    pub fn add(&mut self, id: u64, score: f64) {
        *self.slot(id) += score;
    }

    /// Sets a document's score.
    pub fn set(&mut self, id: u64, score: f64) {
        *self.slot(id) = score;
    }

    /// How many documents have a score.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no document has a score.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Forgets every score.
    pub fn clear(&mut self) {
        *self = Scores::default();
    }

    /// The documents with a score, ascending.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.present.iter()
    }

    /// Each document's score, by ascending id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.present
            .iter()
            .filter_map(|id| Some((id, self.get(id)?)))
    }

    /// Applies `f` to every score.
    pub fn update(&mut self, mut f: impl FnMut(u64, &mut f64)) {
        let ids: Vec<u64> = self.present.iter().collect();
        for id in ids {
            f(id, self.slot(id));
        }
    }

    /// Keeps only the scores of documents in `keep`.
    pub fn keep_only(&mut self, keep: &DocSet) {
        self.present.and(keep);
        self.count = self.present.len();
    }

    /// Adds every score of `other` (taken whole when there are none yet).
    pub fn merge(&mut self, other: Scores) {
        if self.is_empty() {
            *self = other;
            return;
        }
        for (id, s) in other.iter() {
            self.add(id, s);
        }
    }

    /// The scores as a map (what an aggregate's columns hold).
    pub fn to_map(&self) -> IdMap<f64> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_add_keep_and_merge_by_id() {
        let mut s = Scores::new();
        assert_eq!(s.get(5), None);
        s.add(5, 1.5);
        s.add(5, 1.0);
        s.add(70_000, 2.0);
        assert_eq!(
            (s.get(5), s.get(70_000), s.len()),
            (Some(2.5), Some(2.0), 2)
        );
        assert_eq!(s.get(6), None);
        let mut keep = DocSet::new();
        keep.insert(70_000);
        s.keep_only(&keep);
        assert_eq!((s.get(5), s.len()), (None, 1));
        // A score that came back starts from 0, not from what it held.
        s.add(5, 1.0);
        assert_eq!(s.get(5), Some(1.0));
        let mut other = Scores::new();
        other.add(5, 0.5);
        other.add(9, 3.0);
        s.merge(other);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![(5, 1.5), (9, 3.0), (70_000, 2.0)]
        );
        s.update(|_, v| *v *= 2.0);
        assert_eq!(s.to_map().get(&9), Some(&6.0));
    }
}

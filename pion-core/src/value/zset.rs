//! The sorted-set type: members with scores, ordered by (score, member).

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use super::{sampled_size, EncodingLimits};

/// An entry of the score order: compares by score, then member bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredMember {
    /// The score (never NaN).
    pub score: f64,
    /// The member.
    pub member: Vec<u8>,
}

impl Eq for ScoredMember {}

impl PartialOrd for ScoredMember {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ScoredMember {
    fn cmp(&self, other: &Self) -> Ordering {
        // Scores are never NaN; -0 and 0 compare equal, as with C's `<`.
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.member.cmp(&other.member))
    }
}

/// A sorted-set value.
#[derive(Debug, Clone, PartialEq)]
pub struct ZSetValue {
    scores: HashMap<Vec<u8>, f64, ahash::RandomState>,
    order: BTreeSet<ScoredMember>,
    listpack: bool,
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::new()
    }
}

impl ZSetValue {
    /// An empty sorted set.
    pub fn new() -> ZSetValue {
        ZSetValue {
            scores: HashMap::with_hasher(ahash::RandomState::new()),
            order: BTreeSet::new(),
            listpack: true,
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The encoding name (`listpack` or `skiplist`).
    pub fn encoding(&self) -> &'static str {
        if self.listpack {
            "listpack"
        } else {
            "skiplist"
        }
    }

    /// The score of a member.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets a member's score; returns the previous score.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &EncodingLimits) -> Option<f64> {
        let old = self.scores.insert(member.to_vec(), score);
        if let Some(old) = old {
            self.order.remove(&ScoredMember {
                score: old,
                member: member.to_vec(),
            });
        }
        self.order.insert(ScoredMember {
            score,
            member: member.to_vec(),
        });
        if self.listpack
            && (self.len() > limits.zset_max_listpack_entries
                || member.len() > limits.zset_max_listpack_value)
        {
            self.listpack = false;
        }
        old
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let old = self.scores.remove(member)?;
        self.order.remove(&ScoredMember {
            score: old,
            member: member.to_vec(),
        });
        Some(old)
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &ScoredMember> {
        self.order.iter()
    }

    /// The 0-based rank of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let key = ScoredMember {
            score,
            member: member.to_vec(),
        };
        Some(self.order.range(..key).count())
    }

    pub(crate) fn mem_usage(&self) -> usize {
        sampled_size(self.order.iter().map(|m| m.member.len()), self.len(), 40)
    }
}

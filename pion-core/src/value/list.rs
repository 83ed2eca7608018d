//! The list type: a double-ended queue of byte strings (`quicklist` in Redis 7.0).

use std::collections::VecDeque;

use super::sampled_size;

/// A list value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListValue {
    items: VecDeque<Vec<u8>>,
}

impl ListValue {
    /// An empty list.
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The elements, for reading.
    pub fn items(&self) -> &VecDeque<Vec<u8>> {
        &self.items
    }

    /// The elements, for editing.
    pub fn items_mut(&mut self) -> &mut VecDeque<Vec<u8>> {
        &mut self.items
    }

    pub(crate) fn mem_usage(&self) -> usize {
        sampled_size(self.items.iter().map(Vec::len), self.len(), 16)
    }
}

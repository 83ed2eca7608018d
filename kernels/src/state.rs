//! A partial attention state and the exact merge of several.
//!
//! Attention of one query row over a part of the keys is kept as the pair (o, lse):
//! `o = Σ softmax(s)_i v_i` over the part's scores `s` (normalised within the part) and
//! `lse = ln Σ exp(s_i)` (natural log). Two parts of one sequence merge exactly:
//! `lse = ln(e^lse₁ + e^lse₂)` and `o = e^(lse₁-lse) o₁ + e^(lse₂-lse) o₂`, which is how
//! the server's prefix state joins a client's own suffix attention. An empty part has
//! `lse = -inf` and `o = 0`, weighs nothing in a merge and never produces NaN.

use crate::error::{refuse, KernelError};

/// Attention states for `rows` query rows (positions × query heads, in that order) of
/// `head_dim` each.
#[derive(Debug, Clone, PartialEq)]
pub struct AttnState {
    /// Elements per row.
    pub head_dim: usize,
    /// `[rows, head_dim]`: each row's output, normalised within the part.
    pub out: Vec<f32>,
    /// `[rows]`: each row's log-sum-exp of its scores (natural log; `-inf` when the
    /// part held no keys).
    pub lse: Vec<f32>,
}

impl AttnState {
    /// The state of `rows` rows over no keys at all: outputs 0, LSE `-inf`.
    pub fn empty(rows: usize, head_dim: usize) -> AttnState {
        AttnState {
            head_dim,
            out: vec![0.0; rows * head_dim],
            lse: vec![f32::NEG_INFINITY; rows],
        }
    }

    /// Query rows.
    pub fn rows(&self) -> usize {
        self.lse.len()
    }

    /// Merges `other` (another part of the same rows' keys) into this state.
    pub fn merge(&mut self, other: &AttnState) -> Result<(), KernelError> {
        if other.rows() != self.rows() || other.head_dim != self.head_dim {
            refuse!(
                "cannot merge states of {}×{} and {}×{}",
                self.rows(),
                self.head_dim,
                other.rows(),
                other.head_dim
            );
        }
        let d = self.head_dim;
        for r in 0..self.rows() {
            let (a, b) = (self.lse[r], other.lse[r]);
            let row = &mut self.out[r * d..(r + 1) * d];
            let theirs = &other.out[r * d..(r + 1) * d];
            let (lse, wa, wb) = merge_weights(a, b);
            self.lse[r] = lse;
            for (x, &y) in row.iter_mut().zip(theirs) {
                *x = wa * *x + wb * y;
            }
        }
        Ok(())
    }
}

/// The merged LSE of two parts and each part's weight in the merged output (each
/// `e^(lse_part - lse)`, 0 for an empty part; both 0 when both are empty).
pub(crate) fn merge_weights(a: f32, b: f32) -> (f32, f32, f32) {
    let m = a.max(b);
    if m == f32::NEG_INFINITY {
        return (f32::NEG_INFINITY, 0.0, 0.0);
    }
    let (ea, eb) = ((a - m).exp(), (b - m).exp());
    let sum = ea + eb;
    (m + sum.ln(), ea / sum, eb / sum)
}

/// The exact merge of parts of the same rows' keys, in the order given (the order
/// fixes the rounding; a merge of one part is that part).
pub fn merge_states(parts: &[&AttnState]) -> Result<AttnState, KernelError> {
    let Some(first) = parts.first() else {
        refuse!("merge_states needs at least one state");
    };
    let mut merged = (*first).clone();
    for part in &parts[1..] {
        merged.merge(part)?;
    }
    Ok(merged)
}

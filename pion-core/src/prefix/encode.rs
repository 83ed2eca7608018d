//! From the bytes a client sends to the bytes a namespace stores: unchanged for the
//! `as-given` tier, quantised (per [`super::quant`]) for the others. Attention layers
//! are K then V, each `[kv_heads, tokens, head_dim]`; recurrent state is never
//! quantised (it is kept exactly as sent: float32 state stays float32).

use bytes::Bytes;

use super::manifest::{Layer, Manifest};
use super::quant::{self, DType, Role, Shape, Tier};
use super::store::{LayerIn, PrefixError};

fn tier_of(m: &Manifest) -> Tier {
    Tier::parse(&m.tier).unwrap_or(Tier::AsGiven)
}

fn dtype_of(m: &Manifest) -> DType {
    DType::parse(&m.dtype).unwrap_or(DType::F16)
}

/// Whether a namespace keeps layers exactly as sent (its `as-given` tier).
pub fn keeps_as_given(m: &Manifest) -> bool {
    tier_of(m) == Tier::AsGiven
}

/// The stored form of one layer's bytes (already checked for length): `None` for a
/// recurrent layer sent empty (no state at this block). Kept as given, a handed-over
/// buffer is adopted without a copy.
pub fn to_stored(
    m: &Manifest,
    layer: &Layer,
    tokens: u32,
    given: &LayerIn<'_>,
) -> Result<Option<Bytes>, PrefixError> {
    let data = given.bytes();
    if data.is_empty() {
        return Ok(None);
    }
    let (Layer::Attention { kv_heads, head_dim }
    | Layer::Sliding {
        kv_heads, head_dim, ..
    }) = *layer
    else {
        return Ok(Some(given.to_shared()));
    };
    let tier = tier_of(m);
    if tier == Tier::AsGiven {
        return Ok(Some(given.to_shared()));
    }
    let shape = Shape {
        heads: kv_heads as usize,
        tokens: tokens as usize,
        head_dim: head_dim as usize,
    };
    let dtype = dtype_of(m);
    let (k, v) = data.split_at(data.len() / 2);
    let mut out = quant::encode(tier, dtype, shape, Role::Keys, k)
        .map_err(|e| PrefixError::Refused(format!("ERR {e}")))?;
    out.extend(
        quant::encode(tier, dtype, shape, Role::Values, v)
            .map_err(|e| PrefixError::Refused(format!("ERR {e}")))?,
    );
    Ok(Some(Bytes::from(out)))
}

/// One layer's stored bytes back in the namespace's dtype (for clients that do not
/// read the tier's format themselves).
pub fn to_wire(
    m: &Manifest,
    layer: &Layer,
    tokens: u32,
    stored: &[u8],
) -> Result<Vec<u8>, PrefixError> {
    let (Layer::Attention { kv_heads, head_dim }
    | Layer::Sliding {
        kv_heads, head_dim, ..
    }) = *layer
    else {
        return Ok(stored.to_vec());
    };
    let tier = tier_of(m);
    if tier == Tier::AsGiven {
        return Ok(stored.to_vec());
    }
    let shape = Shape {
        heads: kv_heads as usize,
        tokens: tokens as usize,
        head_dim: head_dim as usize,
    };
    let dtype = dtype_of(m);
    let k_len = quant::encoded_len(tier, dtype, shape, Role::Keys);
    if stored.len() < k_len {
        return Err(PrefixError::Refused(
            "ERR stored block is shorter than its tier says".into(),
        ));
    }
    let (k, v) = stored.split_at(k_len);
    let mut out = quant::decode(tier, dtype, shape, Role::Keys, k)
        .map_err(|e| PrefixError::Refused(format!("ERR {e}")))?;
    out.extend(
        quant::decode(tier, dtype, shape, Role::Values, v)
            .map_err(|e| PrefixError::Refused(format!("ERR {e}")))?,
    );
    Ok(out)
}

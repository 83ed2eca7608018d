//! A namespace's manifest: everything that makes stored K/V incompatible between two
//! models (model and revision, tokenizer, block size, element type, storage tier, and
//! the layer layout). Registered once as JSON; every store and fetch is checked
//! against it, so K/V of one model can never reach another.
//!
//! ```json
//! {"model": "meta-llama/Llama-3.2-1B", "revision": "4e20de3", "tokenizer": "sha256:…",
//!  "block_tokens": 256, "dtype": "f16", "tier": "as-given",
//!  "layers": [{"kind": "attention", "kv_heads": 8, "head_dim": 64},
//!             {"kind": "sliding", "window": 4096, "kv_heads": 8, "head_dim": 64},
//!             {"kind": "recurrent", "state_bytes": 65536}]}
//! ```

use serde::{Deserialize, Serialize};

/// One layer's kind and shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Layer {
    /// Full attention: K and V for every token.
    Attention {
        /// K/V heads.
        kv_heads: u32,
        /// Elements per head.
        head_dim: u32,
    },
    /// Sliding-window attention: K and V for every token of the block (a window is
    /// rebuilt from the blocks before it).
    Sliding {
        /// Window length in tokens.
        window: u32,
        /// K/V heads.
        kv_heads: u32,
        /// Elements per head.
        head_dim: u32,
    },
    /// A recurrent layer (Mamba, GDN, RWKV …): its state as of the end of a block, an
    /// opaque blob of a fixed size, present only where the client supplied it.
    Recurrent {
        /// Size of the state blob in bytes.
        state_bytes: u64,
    },
}

fn default_block_tokens() -> u32 {
    256
}

fn default_dtype() -> String {
    "f16".into()
}

fn default_tier() -> String {
    "as-given".into()
}

/// A namespace's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Model id.
    pub model: String,
    /// Model revision (commit, version).
    #[serde(default)]
    pub revision: String,
    /// Tokenizer identity (a hash of its files, say).
    #[serde(default)]
    pub tokenizer: String,
    /// Tokens per block (the last block of a sequence may be shorter).
    #[serde(default = "default_block_tokens")]
    pub block_tokens: u32,
    /// Element type of K/V as clients send it: `f16`, `bf16` or `f32`.
    #[serde(default = "default_dtype")]
    pub dtype: String,
    /// How K/V is stored: `as-given`, `int8`, `q4` or `q2`.
    #[serde(default = "default_tier")]
    pub tier: String,
    /// Every layer, in model order.
    pub layers: Vec<Layer>,
}

/// Bytes per element of a `dtype` name.
pub fn dtype_size(dtype: &str) -> Option<usize> {
    match dtype {
        "f16" | "bf16" => Some(2),
        "f32" => Some(4),
        _ => None,
    }
}

impl Manifest {
    /// Parses and checks a manifest.
    pub fn parse(json: &[u8]) -> Result<Manifest, String> {
        let m: Manifest =
            serde_json::from_slice(json).map_err(|e| format!("invalid manifest: {e}"))?;
        m.validate()?;
        Ok(m)
    }

    /// The manifest as compact JSON.
    pub fn to_json(&self) -> String {
        // Serializing plain strings, integers and enums cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    fn validate(&self) -> Result<(), String> {
        let bad = |what: String| Err(format!("invalid manifest: {what}"));
        if self.model.is_empty() {
            return bad("model must not be empty".into());
        }
        if !(1..=65_536).contains(&self.block_tokens) {
            return bad(format!(
                "block_tokens must be 1..65536, got {}",
                self.block_tokens
            ));
        }
        if dtype_size(&self.dtype).is_none() {
            return bad(format!(
                "dtype must be f16, bf16 or f32, got '{}'",
                self.dtype
            ));
        }
        if !["as-given", "int8", "q4", "q2"].contains(&self.tier.as_str()) {
            return bad(format!(
                "tier must be as-given, int8, q4 or q2, got '{}'",
                self.tier
            ));
        }
        if self.layers.is_empty() || self.layers.len() > 4096 {
            return bad(format!("1 to 4096 layers, got {}", self.layers.len()));
        }
        for (i, l) in self.layers.iter().enumerate() {
            match *l {
                Layer::Attention { kv_heads, head_dim }
                | Layer::Sliding {
                    kv_heads, head_dim, ..
                } => {
                    if !(1..=4096).contains(&kv_heads) || !(1..=65_536).contains(&head_dim) {
                        return bad(format!("layer {i}: kv_heads 1..4096 and head_dim 1..65536"));
                    }
                    if self.tier != "as-given" && head_dim % 32 != 0 {
                        return bad(format!(
                            "layer {i}: tier {} needs head_dim a multiple of 32, got {head_dim}",
                            self.tier
                        ));
                    }
                }
                Layer::Recurrent { state_bytes } => {
                    if !(1..=1 << 30).contains(&state_bytes) {
                        return bad(format!("layer {i}: state_bytes 1..1GiB, got {state_bytes}"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The first difference from another manifest, for the error that refuses a
    /// conflicting registration.
    pub fn difference(&self, other: &Manifest) -> Option<String> {
        let fields = [
            ("model", self.model != other.model),
            ("revision", self.revision != other.revision),
            ("tokenizer", self.tokenizer != other.tokenizer),
            ("block_tokens", self.block_tokens != other.block_tokens),
            ("dtype", self.dtype != other.dtype),
            ("tier", self.tier != other.tier),
            ("layers", self.layers != other.layers),
        ];
        fields
            .iter()
            .find(|(_, differs)| *differs)
            .map(|(name, _)| name.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_refuses_bad_manifests() {
        let m = Manifest::parse(
            br#"{"model":"m","layers":[{"kind":"attention","kv_heads":2,"head_dim":64},
                {"kind":"recurrent","state_bytes":100}]}"#,
        )
        .expect("valid");
        assert_eq!(
            (m.block_tokens, m.dtype.as_str(), m.tier.as_str()),
            (256, "f16", "as-given")
        );
        assert_eq!(Manifest::parse(m.to_json().as_bytes()), Ok(m.clone()));
        for bad in [
            &br#"{"model":"","layers":[{"kind":"attention","kv_heads":2,"head_dim":64}]}"#[..],
            br#"{"model":"m","layers":[]}"#,
            br#"{"model":"m","dtype":"f8","layers":[{"kind":"recurrent","state_bytes":1}]}"#,
            br#"{"model":"m","tier":"q4","layers":[{"kind":"attention","kv_heads":2,"head_dim":20}]}"#,
            br#"{"model":"m","layers":[{"kind":"conv","kv_heads":2,"head_dim":64}]}"#,
            br#"{"model":"m","extra":1,"layers":[{"kind":"recurrent","state_bytes":1}]}"#,
            b"not json",
        ] {
            let e = Manifest::parse(bad).expect_err("refused");
            assert!(e.starts_with("invalid manifest"), "{e}");
        }
        let mut other = m.clone();
        other.tokenizer = "t2".into();
        assert_eq!(m.difference(&other), Some("tokenizer".into()));
    }
}

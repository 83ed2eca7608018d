//! The prompt cache with Rust types: register a namespace, store a block, match a
//! token sequence, fetch blocks whose layers share the store's buffers (no copy).
//! Each call is the `KV.*` command it stands for, through the same admission as
//! every command (ACL on namespaces, limits, statistics, the log).

use bytes::Bytes;

use super::typed::check;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::prefix::block_id::BlockId;
use crate::prefix::ops::{Fetched, Outcome};
use crate::prefix::store::Match;

fn le(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

fn no_outcome(command: &str) -> OpError {
    OpError::custom(format!("ERR {command} gave no typed result"))
}

impl Engine {
    /// `KV.REGISTER ns manifest`: registers a namespace with its manifest (JSON:
    /// model, tokenizer, block size, dtype, tier, layers); the same manifest again
    /// is accepted, another one refused.
    ///
    /// ```
    /// use pion_core::{Engine, EngineOptions};
    /// use pion_core::prefix::block_id::BlockId;
    ///
    /// let engine = Engine::in_memory(EngineOptions::default());
    /// let manifest = r#"{"model":"m","block_tokens":2,"dtype":"f16",
    ///     "layers":[{"kind":"attention","kv_heads":1,"head_dim":4}]}"#;
    /// engine.kv_register("llm", manifest).unwrap();
    /// // One layer: K and V of 1 head × 2 tokens × 4 dims, f16.
    /// let kv = vec![7u8; 2 * 2 * 4 * 2];
    /// let first = engine.kv_put("llm", BlockId::ROOT, &[10, 11], &[&kv]).unwrap();
    /// let second = engine.kv_put("llm", first, &[12, 13], &[&kv]).unwrap();
    ///
    /// let found = engine.kv_match("llm", &[10, 11, 12, 13, 14]).unwrap();
    /// assert_eq!((found.tokens, &found.blocks[..]), (4, &[first, second][..]));
    ///
    /// let blocks = engine.kv_fetch("llm", &found.blocks, None).unwrap();
    /// assert_eq!(blocks[1].tokens, 2);
    /// assert_eq!(blocks[1].layers[0].as_deref(), Some(&kv[..]));
    /// ```
    pub fn kv_register(&self, ns: &str, manifest_json: &str) -> OpResult<()> {
        let argv = [b"KV.REGISTER".to_vec(), ns.into(), manifest_json.into()];
        check(self.execute_argv(0, &argv, false).0).map(drop)
    }

    /// `KV.PUT ns parent tokens layer…`: stores one block after `parent`
    /// ([`BlockId::ROOT`] for a sequence's first block), each layer in the
    /// namespace's layout (an empty layer: a recurrent layer without state); returns
    /// the block's id. Each layer is copied once, into the store.
    pub fn kv_put(
        &self,
        ns: &str,
        parent: BlockId,
        tokens: &[u32],
        layers: &[&[u8]],
    ) -> OpResult<BlockId> {
        let shared = layers
            .iter()
            .map(|l| crate::util::shared_copy::shared_copy(l))
            .collect();
        self.kv_put_shared(ns, parent, tokens, shared)
    }

    /// [`kv_put`](Self::kv_put) with the layers in shared buffers the store keeps as
    /// they are (no copy) when the namespace stores layers as given; a quantising tier
    /// reads them into its own format. A durable engine writes them to its block files
    /// and keeps views of those instead. `Bytes` cannot change once made, so what is
    /// stored is what was handed over.
    pub fn kv_put_shared(
        &self,
        ns: &str,
        parent: BlockId,
        tokens: &[u32],
        layers: Vec<Bytes>,
    ) -> OpResult<BlockId> {
        let mut argv = Vec::with_capacity(4 + layers.len());
        argv.extend([
            b"KV.PUT".to_vec(),
            ns.into(),
            parent.0.to_le_bytes().to_vec(),
            le(tokens),
        ]);
        // One empty placeholder per layer: the buffers travel beside the command.
        argv.extend(layers.iter().map(|_| Vec::new()));
        match self.execute_with_layers(&argv, layers) {
            (reply, Some(Outcome::Stored(id))) => check(reply).map(|_| id),
            (reply, _) => check(reply).and(Err(no_outcome("KV.PUT"))),
        }
    }

    /// `KV.MATCH ns tokens`: the longest stored usable prefix of `tokens` (the
    /// tokens it covers and its blocks).
    pub fn kv_match(&self, ns: &str, tokens: &[u32]) -> OpResult<Match> {
        let argv = [b"KV.MATCH".to_vec(), ns.into(), le(tokens)];
        match self.execute_argv(0, &argv, true) {
            (reply, Some(Outcome::Matched(m))) => check(reply).map(|_| m),
            (reply, _) => check(reply).and(Err(no_outcome("KV.MATCH"))),
        }
    }

    /// `KV.MGET ns id… [LAYERS i…]`: the blocks (every one stored, or an error) with
    /// their layers (all, or those listed, in that order), sharing the store's
    /// buffers: they stay valid even if the blocks are evicted afterwards.
    pub fn kv_fetch(
        &self,
        ns: &str,
        ids: &[BlockId],
        layers: Option<&[usize]>,
    ) -> OpResult<Vec<Fetched>> {
        let mut argv = vec![b"KV.MGET".to_vec(), ns.into()];
        argv.extend(ids.iter().map(|id| id.0.to_le_bytes().to_vec()));
        if let Some(list) = layers {
            argv.push(b"LAYERS".to_vec());
            argv.extend(list.iter().map(|l| l.to_string().into_bytes()));
        }
        match self.execute_argv(0, &argv, true) {
            (reply, Some(Outcome::Fetched(blocks))) => check(reply).map(|_| blocks),
            (reply, _) => check(reply).and(Err(no_outcome("KV.MGET"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, EngineOptions};
    use crate::prefix::block_id::BlockId;

    const MANIFEST: &str = r#"{"model":"m","block_tokens":2,"dtype":"f16","layers":[{"kind":"attention","kv_heads":1,"head_dim":4},{"kind":"recurrent","state_bytes":3}]}"#;

    #[test]
    fn refusals_are_the_commands_errors() {
        let e = Engine::in_memory(EngineOptions::default());
        let err = e
            .kv_put("nope", BlockId::ROOT, &[1], &[])
            .expect_err("no such namespace");
        assert!(err.wire_text().starts_with("ERR"), "{}", err.wire_text());
        e.kv_register("ns", MANIFEST).expect("register");
        assert!(e.kv_register("ns", "{}").is_err());
        let kv = vec![1u8; 2 * 4 * 2 * 2];
        let state = [9u8; 3];
        assert!(e
            .kv_put("ns", BlockId::ROOT, &[1, 2], &[&kv[..3], &state])
            .is_err());
        let a = e
            .kv_put("ns", BlockId::ROOT, &[1, 2], &[&kv, &state])
            .expect("put");
        let only_state = e.kv_fetch("ns", &[a], Some(&[1])).expect("fetch");
        assert_eq!(only_state[0].layers.len(), 1);
        assert_eq!(only_state[0].layers[0].as_deref(), Some(&state[..]));
        assert!(e.kv_fetch("ns", &[BlockId(5)], None).is_err());
        assert_eq!(e.kv_match("ns", &[7, 7]).expect("match").tokens, 0);
    }
}

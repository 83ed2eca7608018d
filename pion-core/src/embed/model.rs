//! A BERT sentence encoder (the all-MiniLM-L6-v2 family) loaded from a local model
//! folder as sentence-transformers saves it: `config.json`, `model.safetensors`,
//! `tokenizer.json`, and optionally `sentence_bert_config.json` (the sequence limit),
//! `modules.json` (whether a `Normalize` step follows) and `1_Pooling/config.json`
//! (mean or CLS pooling).
//!
//! The forward pass is written out here rather than taken from an ML framework: the
//! whole encoder is a few dense layers per layer of the model (over weights packed
//! once at load) and the arithmetic between them, in the kernels crate's
//! [`kernels::encoder`],
//! and a framework (candle with its GEMM and model zoo) costs minutes of build time
//! on every build of the engine for nothing this model needs. Tokenising is the HF
//! `tokenizers` crate, configured as sentence-transformers configures it (no padding,
//! truncation at the model's `max_seq_length`).
//!
//! A batch is not padded: every sentence's tokens are stacked into one matrix for the
//! dense layers, and attention runs per sentence over its own tokens, so a batch
//! costs the sum of its sentences and nothing for padding.

use std::path::{Path, PathBuf};

use kernels::encoder::{attend, gelu_in_place, layer_norm, LayerNorm, PackedLinear};

use super::EmbedError;

/// The shape of the encoder, from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    /// Width of every token's hidden state.
    pub hidden: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Width of the feed-forward layer.
    pub intermediate: usize,
    /// Positions the model has embeddings for.
    pub max_positions: usize,
    /// Layer-norm epsilon.
    pub eps: f32,
    /// Vocabulary size.
    pub vocab: usize,
}

/// How token states become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over the sentence's tokens (special tokens included, as
    /// sentence-transformers computes it).
    Mean,
    /// The `[CLS]` token's state.
    Cls,
}

/// A dense layer as stored: `y = x · Wᵀ + b`, `W` being `out × in`, row-major.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Layer {
    /// Query, key and value projections in one (`3·hidden` outputs).
    qkv: PackedLinear,
    attn_out: PackedLinear,
    attn_norm: LayerNorm,
    ffn_in: PackedLinear,
    ffn_out: PackedLinear,
    ffn_norm: LayerNorm,
}

/// A loaded sentence encoder.
pub struct SentenceEncoder {
    name: String,
    config: BertConfig,
    max_tokens: usize,
    pooling: Pooling,
    normalize: bool,
    tokenizer: tokenizers::Tokenizer,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
}

fn folder_err(dir: &Path, what: impl std::fmt::Display) -> EmbedError {
    EmbedError::Folder(format!("{}: {what}", dir.display()))
}

fn read_json(dir: &Path, name: &str) -> Result<Option<serde_json::Value>, EmbedError> {
    let path = dir.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| folder_err(dir, format!("{name} is not valid JSON ({e})"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(folder_err(dir, format!("cannot read {name} ({e})"))),
    }
}

fn field(dir: &Path, cfg: &serde_json::Value, key: &str) -> Result<usize, EmbedError> {
    cfg.get(key)
        .and_then(|v| v.as_u64())
        .and_then(|v| usize::try_from(v).ok())
        .filter(|&v| v > 0)
        .ok_or_else(|| folder_err(dir, format!("config.json lacks a positive '{key}'")))
}

impl BertConfig {
    fn from_json(dir: &Path, cfg: &serde_json::Value) -> Result<BertConfig, EmbedError> {
        let model_type = cfg.get("model_type").and_then(|v| v.as_str()).unwrap_or("");
        if model_type != "bert" {
            return Err(folder_err(
                dir,
                format!("model_type '{model_type}' is not supported (only 'bert' encoders)"),
            ));
        }
        let act = cfg
            .get("hidden_act")
            .and_then(|v| v.as_str())
            .unwrap_or("gelu");
        if act != "gelu" {
            return Err(folder_err(
                dir,
                format!("hidden_act '{act}' is not supported (only 'gelu')"),
            ));
        }
        let c = BertConfig {
            hidden: field(dir, cfg, "hidden_size")?,
            heads: field(dir, cfg, "num_attention_heads")?,
            layers: field(dir, cfg, "num_hidden_layers")?,
            intermediate: field(dir, cfg, "intermediate_size")?,
            max_positions: field(dir, cfg, "max_position_embeddings")?,
            eps: cfg
                .get("layer_norm_eps")
                .and_then(|v| v.as_f64())
                .unwrap_or(1e-12) as f32,
            vocab: field(dir, cfg, "vocab_size")?,
        };
        if !c.hidden.is_multiple_of(c.heads) {
            return Err(folder_err(
                dir,
                "hidden_size is not a multiple of num_attention_heads",
            ));
        }
        Ok(c)
    }
}

/// The tensors of `model.safetensors`, read as f32 whatever their stored type.
struct Weights<'a> {
    dir: &'a Path,
    file: safetensors::SafeTensors<'a>,
    prefix: &'static str,
}

impl Weights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .file
            .tensor(&full)
            .map_err(|_| folder_err(self.dir, format!("model.safetensors lacks '{full}'")))?;
        if t.shape() != shape {
            return Err(folder_err(
                self.dir,
                format!(
                    "'{full}' has shape {:?}, config.json implies {shape:?}",
                    t.shape()
                ),
            ));
        }
        let data = t.data();
        let out: Vec<f32> = match t.dtype() {
            safetensors::Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            safetensors::Dtype::F16 => data
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            safetensors::Dtype::BF16 => data
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            other => {
                return Err(folder_err(
                    self.dir,
                    format!("'{full}' is {other:?}; only F32, F16 and BF16 are read"),
                ))
            }
        };
        if out.iter().any(|x| !x.is_finite()) {
            return Err(folder_err(
                self.dir,
                format!("'{full}' holds NaN or infinity"),
            ));
        }
        Ok(out)
    }

    fn linear(&self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, EmbedError> {
        Ok(Linear {
            weight: self.get(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.get(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str, width: usize) -> Result<LayerNorm, EmbedError> {
        Ok(LayerNorm {
            gain: self.get(&format!("{name}.weight"), &[width])?,
            bias: self.get(&format!("{name}.bias"), &[width])?,
        })
    }
}

impl Linear {
    fn packed(self) -> PackedLinear {
        PackedLinear::pack(&self.weight, &self.bias, self.inputs, self.outputs)
    }
}

/// Concatenates the query, key and value projections into one layer.
fn stack(parts: [Linear; 3]) -> Linear {
    let inputs = parts[0].inputs;
    let outputs = parts.iter().map(|p| p.outputs).sum();
    let mut weight = Vec::with_capacity(inputs * outputs);
    let mut bias = Vec::with_capacity(outputs);
    for p in parts {
        weight.extend_from_slice(&p.weight);
        bias.extend_from_slice(&p.bias);
    }
    Linear {
        weight,
        bias,
        inputs,
        outputs,
    }
}

impl SentenceEncoder {
    /// Loads the model in `dir`; any missing or malformed part is a clear error.
    pub fn load(dir: &Path) -> Result<SentenceEncoder, EmbedError> {
        if !dir.is_dir() {
            return Err(folder_err(dir, "not a directory"));
        }
        let cfg = read_json(dir, "config.json")?
            .ok_or_else(|| folder_err(dir, "config.json is missing"))?;
        let config = BertConfig::from_json(dir, &cfg)?;
        let st_config = read_json(dir, "sentence_bert_config.json")?;
        let max_tokens = st_config
            .as_ref()
            .and_then(|c| c.get("max_seq_length"))
            .and_then(|v| v.as_u64())
            .map_or(config.max_positions, |v| v as usize)
            .min(config.max_positions);
        let pooling = match read_json(dir, "1_Pooling/config.json")? {
            None => Pooling::Mean,
            Some(p) => {
                let on = |k: &str| p.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
                if on("pooling_mode_mean_tokens") {
                    Pooling::Mean
                } else if on("pooling_mode_cls_token") {
                    Pooling::Cls
                } else {
                    return Err(folder_err(
                        dir,
                        "1_Pooling/config.json asks for a pooling other than mean or CLS",
                    ));
                }
            }
        };
        let normalize = match read_json(dir, "modules.json")? {
            None => true,
            Some(m) => m.as_array().is_some_and(|mods| {
                mods.iter().any(|m| {
                    m.get("type")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| t.ends_with(".Normalize"))
                })
            }),
        };
        let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| folder_err(dir, format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| folder_err(dir, format!("tokenizer.json: {e}")))?;
        let path: PathBuf = dir.join("model.safetensors");
        let bytes = std::fs::read(&path)
            .map_err(|e| folder_err(dir, format!("cannot read model.safetensors ({e})")))?;
        let file = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| folder_err(dir, format!("model.safetensors: {e}")))?;
        let prefix = if file
            .tensor("bert.embeddings.word_embeddings.weight")
            .is_ok()
        {
            "bert."
        } else {
            ""
        };
        let w = Weights { dir, file, prefix };
        let h = config.hidden;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                qkv: stack([
                    w.linear(&format!("{p}.attention.self.query"), h, h)?,
                    w.linear(&format!("{p}.attention.self.key"), h, h)?,
                    w.linear(&format!("{p}.attention.self.value"), h, h)?,
                ])
                .packed(),
                attn_out: w
                    .linear(&format!("{p}.attention.output.dense"), h, h)?
                    .packed(),
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                ffn_in: w
                    .linear(&format!("{p}.intermediate.dense"), h, config.intermediate)?
                    .packed(),
                ffn_out: w
                    .linear(&format!("{p}.output.dense"), config.intermediate, h)?
                    .packed(),
                ffn_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        let type_rows = w
            .file
            .tensor(&format!("{prefix}embeddings.token_type_embeddings.weight"))
            .map(|t| t.shape().first().copied().unwrap_or(0))
            .unwrap_or(0);
        let token_type = w.get("embeddings.token_type_embeddings.weight", &[type_rows, h])?;
        if type_rows == 0 {
            return Err(folder_err(dir, "token_type_embeddings is empty"));
        }
        let name = cfg
            .get("_name_or_path")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| {
                dir.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        Ok(SentenceEncoder {
            name,
            max_tokens,
            pooling,
            normalize,
            tokenizer,
            word: w.get("embeddings.word_embeddings.weight", &[config.vocab, h])?,
            position: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_positions, h],
            )?,
            token_type: token_type[..h].to_vec(),
            embed_norm: w.norm("embeddings.LayerNorm", h)?,
            layers,
            config,
        })
    }

    /// The model's name (`_name_or_path` of its config, else the folder's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Dimensions of the sentence vectors.
    pub fn dim(&self) -> usize {
        self.config.hidden
    }

    /// Tokens a sentence is cut to.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The token ids of each text, with `[CLS]` and `[SEP]`, cut to the limit.
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Input(format!("cannot tokenize: {e}")))?;
        Ok(enc.into_iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// Sentence vectors for token sequences (each non-empty, within the limit).
    pub fn encode_ids(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let h = self.config.hidden;
        let total: usize = seqs.iter().map(Vec::len).sum();
        let mut x = vec![0f32; total * h];
        let mut row = 0;
        for seq in seqs {
            for (pos, &id) in seq.iter().enumerate() {
                let id = (id as usize).min(self.config.vocab - 1);
                let pos = pos.min(self.config.max_positions - 1);
                let out = &mut x[row * h..(row + 1) * h];
                let w = &self.word[id * h..(id + 1) * h];
                let p = &self.position[pos * h..(pos + 1) * h];
                for i in 0..h {
                    out[i] = w[i] + p[i] + self.token_type[i];
                }
                row += 1;
            }
        }
        layer_norm(&mut x, &self.embed_norm, self.config.eps);
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        for layer in &self.layers {
            self.layer(&mut x, &lens, layer);
        }
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for &len in &lens {
            let rows = &x[start * h..(start + len) * h];
            let mut v = match self.pooling {
                Pooling::Cls => rows[..h].to_vec(),
                Pooling::Mean => {
                    let mut sum = vec![0f32; h];
                    for r in rows.chunks_exact(h) {
                        for (s, v) in sum.iter_mut().zip(r) {
                            *s += v;
                        }
                    }
                    let n = len.max(1) as f32;
                    sum.iter_mut().for_each(|s| *s /= n);
                    sum
                }
            };
            if self.normalize {
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|a| *a /= norm);
            }
            out.push(v);
            start += len;
        }
        out
    }

    /// One encoder layer over the stacked tokens of sentences of lengths `lens`.
    fn layer(&self, x: &mut Vec<f32>, lens: &[usize], layer: &Layer) {
        let h = self.config.hidden;
        let qkv = layer.qkv.forward(x);
        let mut context = vec![0f32; x.len()];
        let mut start = 0;
        for &len in lens {
            attend(
                &qkv[start * 3 * h..(start + len) * 3 * h],
                len,
                self.config.heads,
                &mut context[start * h..(start + len) * h],
            );
            start += len;
        }
        let mut attn = layer.attn_out.forward(&context);
        for (a, r) in attn.iter_mut().zip(x.iter()) {
            *a += r;
        }
        layer_norm(&mut attn, &layer.attn_norm, self.config.eps);
        let mut mid = layer.ffn_in.forward(&attn);
        gelu_in_place(&mut mid);
        let mut out = layer.ffn_out.forward(&mid);
        for (o, r) in out.iter_mut().zip(attn.iter()) {
            *o += r;
        }
        layer_norm(&mut out, &layer.ffn_norm, self.config.eps);
        *x = out;
    }
}

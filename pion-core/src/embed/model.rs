//! A BERT sentence encoder (the all-MiniLM-L6-v2 family) loaded from a local model
//! folder as sentence-transformers saves it: `config.json`, `model.safetensors`,
//! `tokenizer.json`, and optionally `sentence_bert_config.json` (the sequence limit),
//! `modules.json` (whether a `Normalize` step follows) and `1_Pooling/config.json`
//! (mean or CLS pooling).
//!
//! The forward pass is written out here over `matrixmultiply`'s SGEMM rather than
//! taken from an ML framework: the whole encoder is a few matrix products per layer,
//! and a framework (candle with its GEMM and model zoo) costs minutes of build time
//! on every build of the engine for nothing this model needs. Tokenising is the HF
//! `tokenizers` crate, configured as sentence-transformers configures it (no padding,
//! truncation at the model's `max_seq_length`).
//!
//! A batch is not padded: every sentence's tokens are stacked into one matrix for the
//! dense layers, and attention runs per sentence over its own tokens, so a batch
//! costs the sum of its sentences and nothing for padding.

use std::path::{Path, PathBuf};

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

/// A dense layer: `y = x · Wᵀ + b`, with `W` kept as stored (`out × in`, row-major).
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value projections in one (`3·hidden` outputs).
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    ffn_in: Linear,
    ffn_out: Linear,
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
                ]),
                attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                ffn_in: w.linear(&format!("{p}.intermediate.dense"), h, config.intermediate)?,
                ffn_out: w.linear(&format!("{p}.output.dense"), config.intermediate, h)?,
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
        let heads = self.config.heads;
        let dh = h / heads;
        let n = x.len() / h;
        let qkv = linear(x, n, &layer.qkv);
        let mut context = vec![0f32; n * h];
        let scale = 1.0 / (dh as f32).sqrt();
        let mut start = 0;
        let mut scores = Vec::new();
        for &len in lens {
            scores.resize(len * len, 0.0);
            for head in 0..heads {
                let q = &qkv[start * 3 * h + head * dh..];
                let k = &qkv[start * 3 * h + h + head * dh..];
                let v = &qkv[start * 3 * h + 2 * h + head * dh..];
                // scores = Q·Kᵀ: Q is len × dh with row stride 3h, Kᵀ is dh × len.
                gemm(
                    (len, dh, len),
                    scale,
                    (q, 3 * h, 1),
                    (k, 1, 3 * h),
                    0.0,
                    (&mut scores, len, 1),
                );
                for r in scores.chunks_exact_mut(len) {
                    softmax(r);
                }
                let out = &mut context[start * h + head * dh..];
                gemm(
                    (len, len, dh),
                    1.0,
                    (&scores, len, 1),
                    (v, 3 * h, 1),
                    0.0,
                    (out, h, 1),
                );
            }
            start += len;
        }
        let mut attn = linear(&context, n, &layer.attn_out);
        for (a, r) in attn.iter_mut().zip(x.iter()) {
            *a += r;
        }
        layer_norm(&mut attn, &layer.attn_norm, self.config.eps);
        let mut mid = linear(&attn, n, &layer.ffn_in);
        gelu_in_place(&mut mid);
        let mut out = linear(&mid, n, &layer.ffn_out);
        for (o, r) in out.iter_mut().zip(attn.iter()) {
            *o += r;
        }
        layer_norm(&mut out, &layer.ffn_norm, self.config.eps);
        *x = out;
    }
}

/// `C = α·A·B + β·C` for row-major slices with the given row and column strides:
/// `(m, k, n)`, then `(A, row stride, column stride)`, `(B, …)`, `(C, …)`.
fn gemm(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    (a, rsa, csa): (&[f32], usize, usize),
    (b, rsb, csb): (&[f32], usize, usize),
    beta: f32,
    (c, rsc, csc): (&mut [f32], usize, usize),
) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| (rows - 1) * rs + (cols - 1) * cs;
    // The last element each matrix reaches must lie inside its slice: checked here so
    // the pointer arithmetic below stays in bounds (k = 0 reads nothing of A or B).
    assert!(
        k == 0 || last(m, k, rsa, csa) < a.len(),
        "gemm: A out of bounds"
    );
    assert!(
        k == 0 || last(k, n, rsb, csb) < b.len(),
        "gemm: B out of bounds"
    );
    assert!(last(m, n, rsc, csc) < c.len(), "gemm: C out of bounds");
    // SAFETY: every element sgemm reads or writes is at `row * rs + col * cs` with
    // row and col within the dimensions, and the asserts above put the farthest one
    // inside its slice; `c` is borrowed mutably, so nothing else aliases it.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            beta,
            c.as_mut_ptr(),
            rsc as isize,
            csc as isize,
        );
    }
}

/// `x · Wᵀ + b` for `n` rows of `x`.
fn linear(x: &[f32], n: usize, l: &Linear) -> Vec<f32> {
    let mut y = Vec::with_capacity(n * l.outputs);
    for _ in 0..n {
        y.extend_from_slice(&l.bias);
    }
    // Wᵀ as an (inputs × outputs) matrix: W's rows are its columns.
    gemm(
        (n, l.inputs, l.outputs),
        1.0,
        (x, l.inputs, 1),
        (&l.weight, 1, l.inputs),
        1.0,
        (&mut y, l.outputs, 1),
    );
    y
}

fn layer_norm(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    let h = norm.gain.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / h as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * g + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for v in row.iter_mut() {
        *v = exp_f32(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// BERT's exact GELU, `x·Φ(x)`, over a slice: branch-free f32 arithmetic the
/// compiler vectorises (erf from Abramowitz and Stegun 7.1.26, absolute error below
/// 1.5e-7, with [`exp_f32`]), within 4e-7 of the f64 form (`gelu_f64`, the tests'
/// reference).
fn gelu_in_place(xs: &mut [f32]) {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];
    for x in xs.iter_mut() {
        let v = *x;
        let z = (v * std::f32::consts::FRAC_1_SQRT_2).abs();
        let t = 1.0 / (1.0 + P * z);
        let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
        let erf_abs = 1.0 - poly * exp_f32(-z * z);
        let erf = erf_abs.copysign(v);
        *x = 0.5 * v * (1.0 + erf);
    }
}

/// `e^x` for `x ≤ 0` (below −87: e^−87, about 1.6e-38), branch-free: `x = n·ln 2 + r` with
/// `|r| ≤ ln 2 / 2`, `e^r` by its degree-6 Taylor polynomial (relative error below
/// 2e-7), and `2^n` put into the exponent bits.
fn exp_f32(x: f32) -> f32 {
    let x = x.max(-87.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = x - n * std::f32::consts::LN_2;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // n is in [-126, 0]: 2^n is a normal f32 with exponent field n + 127.
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// GELU in f64 with the f64 erf below: the reference the fast form is tested against.
#[cfg(test)]
fn gelu_f64(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))) as f32
}

/// The error function, from the complementary error function's Chebyshev-fitted
/// approximation (Numerical Recipes' `erfc`, relative error below 1.2e-7).
#[cfg(test)]
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-1.5, -0.966_105_146_475_310_7),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn the_fast_gelu_matches_the_f64_one() {
        let xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 / 1000.0).collect();
        let mut fast = xs.clone();
        gelu_in_place(&mut fast);
        for (x, got) in xs.iter().zip(&fast) {
            let want = gelu_f64(*x);
            assert!(
                (got - want).abs() <= 4e-7 * (1.0 + want.abs()),
                "gelu({x}) = {got}, want {want}"
            );
        }
        assert!(exp_f32(-100.0) < 2e-38);
        for x in [0.0f32, -0.3, -1.0, -10.0, -50.0, -87.0] {
            let want = f64::from(x).exp();
            assert!(
                (f64::from(exp_f32(x)) - want).abs() <= 3e-7 * want + 1e-38,
                "exp({x})"
            );
        }
    }

    #[test]
    fn gemm_with_strides_matches_a_plain_product() {
        // A: 2×3, B given transposed (3×2 read through strides of a 2×3 array).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let bt = [1.0, 0.0, -1.0, 2.0, 1.0, 0.5];
        let mut c = [0f32; 4];
        gemm((2, 3, 2), 1.0, (&a, 3, 1), (&bt, 1, 3), 0.0, (&mut c, 2, 1));
        // row0: [1,2,3]·[1,0,-1] = -2; [1,2,3]·[2,1,0.5] = 5.5
        assert_eq!(c, [-2.0, 5.5, -2.0, 16.0]);
    }

    #[test]
    fn softmax_and_layer_norm_are_normalised() {
        let mut r = [1.0f32, 2.0, 3.0, 1000.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[3] > 0.999);
        let norm = LayerNorm {
            gain: vec![1.0; 4],
            bias: vec![0.0; 4],
        };
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        layer_norm(&mut x, &norm, 1e-12);
        assert!(x.iter().sum::<f32>().abs() < 1e-5);
        let var: f32 = x.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!((var - 1.0).abs() < 1e-4);
    }
}

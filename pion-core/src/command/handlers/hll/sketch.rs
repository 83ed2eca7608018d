//! Redis's HyperLogLog representation, byte for byte.
//!
//! A HyperLogLog is a string value, so `GET` and `SET` carry it between servers: the
//! bytes must be exactly the ones redis-server writes, or a value copied from one to
//! the other would count differently (or be refused). The layout:
//!
//! - a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three unused bytes,
//!   and the cached cardinality as 8 little-endian bytes whose top bit, when set,
//!   says the cache is stale;
//! - dense: 16,384 registers of 6 bits, packed least significant bit first (12,288
//!   bytes, so the value is always 12,304 bytes long);
//! - sparse: run-length opcodes, `00xxxxxx` (1 to 64 zero registers), `01xxxxxx
//!   yyyyyyyy` (1 to 16,384 zero registers) and `1vvvvvxx` (1 to 4 registers of value
//!   1 to 32).
//!
//! Edits of the sparse form split and merge opcodes exactly as Redis does, and the
//! form turns dense when a register needs more than 32 or the value would grow past
//! `hll-sparse-max-bytes`. A register or run outside the 16,384 registers makes the
//! value corrupt ([`HllError::Corrupt`]); nothing here panics on any input.

/// Length of the header.
pub const HDR: usize = 16;
/// Number of registers (2^14).
pub const REGISTERS: usize = 1 << 14;
/// Length of a dense value: header and 16,384 six-bit registers.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * 6).div_ceil(8);
/// The encoding byte of the dense form.
const DENSE: u8 = 0;
/// The encoding byte of the sparse form.
const SPARSE: u8 = 1;
/// Largest register value a sparse `VAL` opcode holds.
const SPARSE_VAL_MAX_VALUE: u8 = 32;
/// Longest run of a sparse `VAL` opcode.
const SPARSE_VAL_MAX_LEN: usize = 4;
/// Longest run of a sparse `ZERO` opcode.
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// Longest run of a sparse `XZERO` opcode.
const SPARSE_XZERO_MAX_LEN: usize = 16384;

/// Why a string cannot be used as a HyperLogLog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HllError {
    /// Not a HyperLogLog at all: too short, no `HYLL` magic, an unknown encoding, or
    /// a dense value of the wrong length.
    NotHll,
    /// A HyperLogLog whose sparse opcodes do not cover exactly the 16,384 registers.
    Corrupt,
}

impl From<HllError> for crate::error::OpError {
    fn from(e: HllError) -> Self {
        match e {
            HllError::NotHll => crate::error::OpError::NotHyperLogLog,
            HllError::Corrupt => crate::error::OpError::CorruptHyperLogLog,
        }
    }
}

/// The two encodings a stored HyperLogLog may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// 16,384 packed six-bit registers.
    Dense,
    /// Run-length opcodes.
    Sparse,
}

impl Encoding {
    /// The name `PFDEBUG ENCODING` answers.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// Checks that bytes are a HyperLogLog as Redis does before any `PF*` command uses
/// them (the sparse opcodes are checked only when they are read).
pub fn check(bytes: &[u8]) -> Result<Encoding, HllError> {
    if bytes.len() < HDR || &bytes[..4] != b"HYLL" {
        return Err(HllError::NotHll);
    }
    match bytes[4] {
        DENSE if bytes.len() == DENSE_SIZE => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(HllError::NotHll),
    }
}

/// A new, empty HyperLogLog as `PFADD` creates it: sparse, one `XZERO` opcode over
/// every register, and a valid cached cardinality of 0.
pub fn empty() -> Vec<u8> {
    let mut s = vec![0u8; HDR];
    s[..4].copy_from_slice(b"HYLL");
    s[4] = SPARSE;
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        s.extend_from_slice(&xzero_op(run));
        left -= run;
    }
    s
}

/// The cached cardinality, when the header says it is valid.
pub fn cached_card(bytes: &[u8]) -> Option<u64> {
    let card: [u8; 8] = bytes.get(8..16)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores a freshly computed cardinality in the header (which makes it valid).
pub fn set_cached_card(bytes: &mut [u8], card: u64) {
    if let Some(slot) = bytes.get_mut(8..16) {
        slot.copy_from_slice(&card.to_le_bytes());
    }
}

/// Marks the cached cardinality stale (only its top bit changes, as in Redis).
pub fn invalidate_cache(bytes: &mut [u8]) {
    if let Some(b) = bytes.get_mut(15) {
        *b |= 0x80;
    }
}

/// Reads dense register `i` from the register bytes. A byte past the end reads as the
/// zero that terminates Redis's strings.
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let bit = i * 6;
    let (byte, fb) = (bit / 8, bit % 8);
    let b0 = u16::from(regs.get(byte).copied().unwrap_or(0));
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & 63) as u8
}

/// Writes dense register `i` (values are six bits).
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let bit = i * 6;
    let (byte, fb) = (bit / 8, bit % 8);
    let v = u16::from(val & 63);
    if let Some(b) = regs.get_mut(byte) {
        *b &= !((63u16 << fb) as u8);
        *b |= (v << fb) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((63u16 >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Raises dense register `i` to `count` if it is lower; whether it changed.
fn dense_raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// Whether a sparse opcode byte is `ZERO`.
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

/// Whether a sparse opcode byte starts an `XZERO`.
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

/// Whether a sparse opcode byte is `VAL`.
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

/// The register value of a `VAL` opcode.
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

/// The run length of a `VAL` opcode.
fn val_len(b: u8) -> usize {
    usize::from(b & 3) + 1
}

/// A `VAL` opcode (`val` 1..=32, `len` 1..=4).
fn val_op(val: u8, len: usize) -> u8 {
    0x80 | ((val - 1) << 2) | ((len - 1) as u8 & 3)
}

/// A `ZERO` opcode (`len` 1..=64).
fn zero_op(len: usize) -> u8 {
    ((len - 1) & 0x3f) as u8
}

/// An `XZERO` opcode (`len` 1..=16384).
fn xzero_op(len: usize) -> [u8; 2] {
    let l = len - 1;
    [0x40 | ((l >> 8) & 0x3f) as u8, (l & 0xff) as u8]
}

/// One decoded sparse opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A run of zero registers (`ZERO` when `long` is false, else `XZERO`).
    Zeros {
        /// How many registers.
        run: usize,
        /// Whether it is the two-byte `XZERO`.
        long: bool,
    },
    /// A run of registers holding one value.
    Val {
        /// The value.
        value: u8,
        /// How many registers.
        run: usize,
    },
}

impl Op {
    /// The registers the opcode covers.
    pub fn run(self) -> usize {
        match self {
            Op::Zeros { run, .. } | Op::Val { run, .. } => run,
        }
    }

    /// Its length in bytes.
    fn width(self) -> usize {
        match self {
            Op::Zeros { long: true, .. } => 2,
            _ => 1,
        }
    }
}

/// Decodes the opcode at `p` of `s`. An `XZERO` cut off by the end reads its second
/// byte as the zero that terminates Redis's strings.
fn op_at(s: &[u8], p: usize) -> Op {
    let b = s.get(p).copied().unwrap_or(0);
    if is_zero(b) {
        Op::Zeros {
            run: usize::from(b & 0x3f) + 1,
            long: false,
        }
    } else if is_xzero(b) {
        let lo = usize::from(s.get(p + 1).copied().unwrap_or(0));
        Op::Zeros {
            run: ((usize::from(b & 0x3f) << 8) | lo) + 1,
            long: true,
        }
    } else {
        Op::Val {
            value: val_value(b),
            run: val_len(b),
        }
    }
}

/// The opcodes of a sparse value, in order (the register checks are the caller's).
pub fn ops(bytes: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut p = HDR;
    std::iter::from_fn(move || {
        if p >= bytes.len() {
            return None;
        }
        let op = op_at(bytes, p);
        p += op.width();
        Some(op)
    })
}

/// Walks the sparse opcodes, calling `val(first, run, value)` for each run of
/// non-zero registers, and checks that they cover exactly the 16,384 registers (a
/// run past the last register stops the walk, as Redis's overflow checks do).
fn walk_sparse(bytes: &[u8], mut val: impl FnMut(usize, usize, u8)) -> Result<(), HllError> {
    let mut idx = 0usize;
    for op in ops(bytes) {
        let run = op.run();
        if idx + run > REGISTERS {
            return Err(HllError::Corrupt);
        }
        if let Op::Val { value, run } = op {
            val(idx, run, value);
        }
        idx += run;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// Converts a sparse value to dense in place (the header, cached cardinality
/// included, is kept); `Ok(false)` when it was dense already. A corrupt value is
/// left as it was.
pub fn to_dense(bytes: &mut Vec<u8>) -> Result<bool, HllError> {
    if bytes.get(4) != Some(&SPARSE) {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&bytes[..HDR]);
    dense[4] = DENSE;
    walk_sparse(bytes, |first, run, value| {
        for i in first..first + run {
            dense_put(&mut dense[HDR..], i, value);
        }
    })?;
    *bytes = dense;
    Ok(true)
}

/// Raises register `index` to `count` in a value of either encoding, as `PFADD` and
/// `PFMERGE` do: whether it changed.
pub fn set_register(
    bytes: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: u64,
) -> Result<bool, HllError> {
    match bytes.get(4) {
        Some(&DENSE) => Ok(dense_raise(&mut bytes[HDR..], index, count)),
        Some(&SPARSE) => sparse_set(bytes, index, count, sparse_max),
        _ => Err(HllError::NotHll),
    }
}

/// Adds an element: hashes it to a register and a count, and raises the register.
pub fn add(bytes: &mut Vec<u8>, element: &[u8], sparse_max: u64) -> Result<bool, HllError> {
    let (index, count) = super::estimate::pattern(element);
    set_register(bytes, index, count, sparse_max)
}

/// Turns the value dense and raises the register there (the sparse form could not
/// hold the new value, or would grow too long).
fn promote(bytes: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    to_dense(bytes)?;
    dense_raise(&mut bytes[HDR..], index, count);
    // Redis counts a promotion as an update whatever the register held.
    Ok(true)
}

/// Raises register `index` of a sparse value to `count`: finds the opcode covering
/// it, splits that opcode into up to three (at most five bytes), merges equal `VAL`
/// neighbours, and promotes the value to dense when a register needs more than 32
/// or the value would grow past `sparse_max` bytes.
fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, sparse_max: u64) -> Result<bool, HllError> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: the opcode covering `index`, the one before it, and its first register.
    let end = s.len();
    let (mut p, mut first, mut prev, mut span) = (HDR, 0usize, None, 0usize);
    while p < end {
        let op = op_at(s, p);
        span = op.run();
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.width();
        first += span;
    }
    if span == 0 || p >= end {
        return Err(HllError::Corrupt);
    }
    let op = op_at(s, p);
    // Step 2: the cases that change one byte in place.
    match op {
        Op::Val { value, .. } if value >= count => return Ok(false),
        Op::Val { run: 1, .. }
        | Op::Zeros {
            run: 1,
            long: false,
        } => {
            s[p] = val_op(count, 1);
            merge_vals(s, prev);
            return Ok(true);
        }
        _ => {}
    }
    // Step 3: split the opcode around the register.
    let last = first + span - 1;
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    let zeros = |seq: &mut Vec<u8>, len: usize| {
        if len > SPARSE_ZERO_MAX_LEN {
            seq.extend_from_slice(&xzero_op(len));
        } else {
            seq.push(zero_op(len));
        }
    };
    match op {
        Op::Zeros { .. } => {
            if index != first {
                zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                zeros(&mut seq, last - index);
            }
        }
        Op::Val { value, .. } => {
            if index != first {
                seq.push(val_op(value, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(value, last - index));
            }
        }
    }
    let old_width = op.width();
    if seq.len() > old_width && (end + seq.len() - old_width) as u64 > sparse_max {
        return promote(s, index, count);
    }
    // The new length is the old one plus the growth, as Redis keeps it: for an
    // `XZERO` cut off by the end, one byte of the new sequence falls past it.
    let new_len = end + seq.len() - old_width;
    s.splice(p..(p + old_width).min(end), seq);
    s.truncate(new_len);
    merge_vals(s, prev);
    Ok(true)
}

/// Step 4 of a sparse edit: from the opcode before the edited one, looks at up to
/// five opcodes and merges adjacent `VAL`s of equal value whose runs fit one opcode;
/// then marks the cached cardinality stale.
fn merge_vals(s: &mut Vec<u8>, prev: Option<usize>) {
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if let Some(&next) = s.get(p + 1) {
            if is_val(next) && val_value(b) == val_value(next) {
                let len = val_len(b) + val_len(next);
                if len <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val_op(val_value(b), len);
                    s.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(s);
}

/// Raises each of `max`'s registers (one byte each) to the value's, as `PFCOUNT` of
/// several keys and `PFMERGE` do.
pub fn merge_into(max: &mut [u8], bytes: &[u8]) -> Result<(), HllError> {
    match check(bytes)? {
        Encoding::Dense => {
            let regs = &bytes[HDR..];
            for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
                *m = (*m).max(dense_get(regs, i));
            }
            Ok(())
        }
        Encoding::Sparse => walk_sparse(bytes, |first, run, value| {
            for m in &mut max[first..first + run] {
                *m = (*m).max(value);
            }
        }),
    }
}

/// How many registers hold each value (0 to 63), the input of the estimator.
pub type Histogram = [u32; 64];

/// The register histogram of a stored value; a corrupt sparse value is an error.
pub fn histogram(bytes: &[u8]) -> Result<Histogram, HllError> {
    let mut h = [0u32; 64];
    match check(bytes)? {
        Encoding::Dense => {
            let regs = &bytes[HDR..];
            for i in 0..REGISTERS {
                h[usize::from(dense_get(regs, i))] += 1;
            }
        }
        Encoding::Sparse => {
            let mut nonzero = 0u32;
            walk_sparse(bytes, |_, run, value| {
                h[usize::from(value)] += run as u32;
                nonzero += run as u32;
            })?;
            h[0] = REGISTERS as u32 - nonzero;
        }
    }
    Ok(h)
}

/// The register histogram of one-byte registers (the merged temporary of `PFCOUNT`).
pub fn raw_histogram(max: &[u8]) -> Histogram {
    let mut h = [0u32; 64];
    for &r in max {
        h[usize::from(r & 63)] += 1;
    }
    h
}

/// `PFDEBUG DECODE`'s text for a sparse value: `z:N`, `Z:N` and `v:VALUE,N` per
/// opcode, separated by spaces.
pub fn decode(bytes: &[u8]) -> String {
    let words: Vec<String> = ops(bytes)
        .map(|op| match op {
            Op::Zeros { run, long: false } => format!("z:{run}"),
            Op::Zeros { run, long: true } => format!("Z:{run}"),
            Op::Val { value, run } => format!("v:{value},{run}"),
        })
        .collect();
    words.join(" ")
}

/// The cardinality of a value: the cached one when valid, else estimated (without
/// storing it); also whether it was estimated.
pub fn cardinality(bytes: &[u8]) -> Result<(u64, bool), HllError> {
    check(bytes)?;
    if let Some(card) = cached_card(bytes) {
        return Ok((card, false));
    }
    Ok((super::estimate::estimate(&histogram(bytes)?), true))
}

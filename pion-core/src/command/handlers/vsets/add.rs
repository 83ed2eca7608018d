//! `VADD key [REDUCE dim] (FP32 blob | VALUES n v…) element [CAS] [NOQUANT | Q8 | BIN]
//! [EF n] [SETATTR json] [M n]`.
//!
//! The outcome depends only on the arguments and the set as it is, so the log keeps
//! the command as sent. `CAS` (Redis: search for neighbours on a thread, then insert)
//! is accepted and the insert simply runs at once. `EF` (build effort) is validated;
//! the index uses its own construction parameters.

use super::arity;
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::{parse_f64, parse_i64};
use crate::value::vset::{Projection, VQuant};
use crate::value::{Value, VectorSetValue};

fn invalid_spec() -> OpError {
    OpError::custom("ERR invalid vector specification")
}

/// Reads `FP32 blob` or `VALUES n v…` at `argv[i]`: the vector and the index after it.
/// `None` when the words are not a well-formed vector.
pub(crate) fn parse_vector(argv: &[Vec<u8>], i: usize) -> Option<(Vec<f32>, usize)> {
    let kw = argv.get(i)?;
    if is_kw(kw, "FP32") {
        let blob = argv.get(i + 1)?;
        if blob.is_empty() || !blob.len().is_multiple_of(4) {
            return None;
        }
        let v: Vec<f32> = blob
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        return Some((v, i + 2));
    }
    if is_kw(kw, "VALUES") {
        let n = parse_i64(argv.get(i + 1)?)?;
        let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
        let values = argv.get(i + 2..i + 2 + n)?;
        let v = values
            .iter()
            .map(|a| {
                parse_f64(a)
                    .filter(|x| x.is_finite())
                    .map(|x| x as f32)
                    .filter(|x| x.is_finite())
            })
            .collect::<Option<Vec<f32>>>()?;
        return Some((v, i + 2 + n));
    }
    None
}

/// `Vector dimension mismatch` as Redis words it.
pub(crate) fn dim_mismatch(got: usize, has: usize) -> OpError {
    OpError::custom(format!(
        "ERR Vector dimension mismatch - got {got} but set has {has}"
    ))
}

struct AddArgs {
    reduce: Option<usize>,
    vector: Vec<f32>,
    element: Vec<u8>,
    quant: VQuant,
    attr: Option<Vec<u8>>,
    m: Option<usize>,
}

fn parse(argv: &[Vec<u8>]) -> OpResult<AddArgs> {
    if argv.len() < 4 {
        return Err(arity(argv));
    }
    let mut i = 2;
    let mut reduce = None;
    if is_kw(&argv[i], "REDUCE") {
        let dim = argv
            .get(i + 1)
            .and_then(|a| parse_i64(a))
            .and_then(|d| usize::try_from(d).ok())
            .filter(|&d| d > 0)
            .ok_or_else(invalid_spec)?;
        reduce = Some(dim);
        i += 2;
    }
    let (vector, next) = parse_vector(argv, i).ok_or_else(invalid_spec)?;
    let element = argv.get(next).ok_or_else(invalid_spec)?.clone();
    let mut args = AddArgs {
        reduce,
        vector,
        element,
        quant: VQuant::Q8,
        attr: None,
        m: None,
    };
    let bad_option = || OpError::custom("ERR invalid option after element");
    let mut i = next + 1;
    while i < argv.len() {
        let opt = &argv[i];
        let value = argv.get(i + 1);
        if is_kw(opt, "CAS") {
        } else if is_kw(opt, "NOQUANT") {
            args.quant = VQuant::NoQuant;
        } else if is_kw(opt, "Q8") {
            args.quant = VQuant::Q8;
        } else if is_kw(opt, "BIN") {
            args.quant = VQuant::Bin;
        } else if is_kw(opt, "EF") {
            let ef = value.ok_or_else(bad_option)?;
            parse_i64(ef)
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| OpError::custom("ERR invalid EF"))?;
            i += 1;
        } else if is_kw(opt, "M") {
            let m = value.ok_or_else(bad_option)?;
            let m = parse_i64(m)
                .filter(|n| (4..=4096).contains(n))
                .ok_or_else(|| OpError::custom("ERR invalid M"))?;
            args.m = Some(m as usize);
            i += 1;
        } else if is_kw(opt, "SETATTR") {
            args.attr = Some(value.ok_or_else(bad_option)?.clone());
            i += 1;
        } else {
            return Err(bad_option());
        }
        i += 1;
    }
    Ok(args)
}

/// `VADD`: true when the element is new, false when its vector (and attributes) changed.
pub(crate) fn vadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let args = parse(argv)?;
    let db = ctx.db();
    let len = args.vector.len();
    if let Some(value) = ctx.ks.get_mut(db, &argv[1])? {
        let set = value.as_vset_mut()?;
        if set.quant() != args.quant {
            return Err(OpError::custom(
                "ERR asked quantization mismatch with existing vector set",
            ));
        }
        if args.m.is_some_and(|m| m != set.m()) {
            return Err(OpError::custom(
                "ERR asked M value mismatch with existing vector set",
            ));
        }
        match set.projection().map(|p| p.input) {
            Some(input) => {
                // Vectors for a projected set come with the same REDUCE, always.
                if args.reduce != Some(set.dim()) || len != input {
                    return Err(dim_mismatch(len, set.dim()));
                }
            }
            None => {
                if args.reduce.is_some() {
                    return Err(OpError::custom(
                        "ERR cannot add projection to existing set without projection",
                    ));
                }
                if len != set.dim() {
                    return Err(dim_mismatch(len, set.dim()));
                }
            }
        }
        let added = set.insert(&args.element, &args.vector, args.attr.as_deref());
        return Ok(Reply::Bool(added));
    }
    let dim = args.reduce.unwrap_or(len);
    if args
        .reduce
        .is_some_and(|r| r.saturating_mul(len) > crate::value::vset::MAX_PROJECTION_CELLS)
    {
        return Err(OpError::custom(
            "ERR REDUCE projection too large (input dimensions × REDUCE must be at most 67108864)",
        ));
    }
    let projection = args.reduce.map(|r| Projection::new(len, r));
    let mut set = VectorSetValue::new(dim, args.quant, args.m.unwrap_or(16), projection);
    set.insert(&args.element, &args.vector, args.attr.as_deref());
    ctx.ks.set(db, &argv[1], Value::VectorSet(Box::new(set)))?;
    Ok(Reply::Bool(true))
}

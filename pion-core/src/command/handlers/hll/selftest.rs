//! `PFSELFTEST`: the HyperLogLog checks Redis runs on request, run on Pion's own
//! representation.
//!
//! Two checks, as Redis's: every dense register keeps a random six-bit value without
//! disturbing its neighbours (1,000 rounds over all 16,384 registers), and ten million
//! distinct elements added to a dense and a sparse HyperLogLog side by side keep the
//! sparse one sparse while it is small, give both the same estimate, and stay within
//! six standard errors of the true count at every power of ten.

use rand::{Rng, SeedableRng};

use super::estimate::estimate;
use super::sketch::{self, DENSE_SIZE, HDR, REGISTERS};
use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// Rounds of the register check.
const REGISTER_ROUNDS: usize = 1000;
/// Elements added in the estimate check.
const ELEMENTS: u64 = 10_000_000;

/// `PFSELFTEST`: `OK`, or the first failure as a `TESTFAILED` error.
pub(super) fn pfselftest(ctx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> OpResult<Reply> {
    let sparse_max = ctx.config().with(|c| c.hll_sparse_max_bytes);
    run(sparse_max, rand::random())?;
    Ok(Reply::ok())
}

/// Runs both checks with a random generator seeded by `seed`.
pub(super) fn run(sparse_max: u64, seed: u64) -> OpResult<()> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    registers(&mut rng)?;
    estimates(&mut rng, sparse_max)
}

/// Every register holds what was written to it, whatever its neighbours hold.
fn registers(rng: &mut impl Rng) -> OpResult<()> {
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..REGISTER_ROUNDS {
        for (i, e) in expected.iter_mut().enumerate() {
            *e = rng.gen::<u8>() & 63;
            sketch::dense_put(&mut regs, i, *e);
        }
        for (i, &e) in expected.iter().enumerate() {
            let got = sketch::dense_get(&regs, i);
            if got != e {
                return Err(OpError::custom(format!(
                    "TESTFAILED Register error, counter {i} should be {e} but is {got}"
                )));
            }
        }
    }
    Ok(())
}

/// Dense and sparse agree, the sparse form is used while small, and the estimate is
/// close to the truth at 1, 10, 100, … elements.
fn estimates(rng: &mut impl Rng, sparse_max: u64) -> OpResult<()> {
    let failed = |text: String| Err(OpError::custom(format!("TESTFAILED {text}")));
    let mut dense = sketch::empty();
    sketch::to_dense(&mut dense).map_err(OpError::from)?;
    let mut sparse = sketch::empty();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let salt: u64 = rng.gen();
    let mut checkpoint: u64 = 1;
    for j in 1..=ELEMENTS {
        let element = (j ^ salt).to_le_bytes();
        sketch::add(&mut dense, &element, sparse_max).map_err(OpError::from)?;
        sketch::add(&mut sparse, &element, sparse_max).map_err(OpError::from)?;
        if j != checkpoint {
            continue;
        }
        if j < sparse_max / 2 && sketch::check(&sparse) != Ok(sketch::Encoding::Sparse) {
            return failed("sparse encoding not used".into());
        }
        let count = |b: &[u8]| sketch::histogram(b).map(|h| estimate(&h));
        let dense_card = count(&dense).map_err(OpError::from)?;
        if count(&sparse).map_err(OpError::from)? != dense_card {
            return failed("dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(dense_card);
        // Ten elements may collide in a register now and then: Redis allows one.
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return failed(format!("Too big error. card:{checkpoint} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

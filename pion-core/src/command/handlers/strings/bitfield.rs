//! `BITFIELD` and `BITFIELD_RO`: signed and unsigned integers of 1 to 64 bits at any bit
//! offset of a string value.
//!
//! It is its own module because its argument language (a list of `GET`, `SET`,
//! `INCRBY` and `OVERFLOW` subcommands, types such as `i5` or `u63`, `#N` offsets) and
//! Redis's exact overflow arithmetic are a small interpreter of their own. Every
//! subcommand is parsed before anything runs, so an error changes nothing. The
//! arithmetic mirrors Redis's C code operation for operation (wrapping where C's
//! integers wrap), so even its odd corners (a `SET i8` of `-2^63` under `SAT` stores
//! 127) reply as Redis does.

use super::bits::{bit_offset, string_for_bits};
use crate::command::ctx::{Ctx, Effect};
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;

/// What a field operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    Set,
    IncrBy,
}

/// How `SET` and `INCRBY` treat a value that does not fit the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    /// Keep the low bits (two's complement for signed fields).
    Wrap,
    /// Clamp to the field's minimum or maximum.
    Sat,
    /// Write nothing and reply nil.
    Fail,
}

/// One parsed operation.
#[derive(Debug, Clone, Copy)]
struct FieldOp {
    kind: Kind,
    signed: bool,
    bits: u32,
    offset: u64,
    /// The `SET` value or `INCRBY` increment.
    value: i64,
    overflow: Overflow,
}

/// `BITFIELD key [GET type offset | SET type offset value | INCRBY type offset
/// increment | OVERFLOW WRAP|SAT|FAIL] ...`: one reply per `GET`, `SET` (the old value)
/// and `INCRBY` (the new value), nil for an operation that `OVERFLOW FAIL` stopped.
pub(super) fn bitfield(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run(ctx, argv, false)
}

/// `BITFIELD_RO key [GET type offset] ...`: `BITFIELD` limited to `GET`.
pub(super) fn bitfield_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run(ctx, argv, true)
}

fn run(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], read_only_command: bool) -> OpResult<Reply> {
    let ops = parse(ctx, argv)?;
    let key = &argv[1];
    let writes = ops.iter().filter(|op| op.kind != Kind::Get);
    let Some(highest) = writes.map(|op| op.offset + u64::from(op.bits) - 1).max() else {
        // Only reads: a missing key reads as zeros and is not created.
        let db = ctx.db();
        let bytes: &[u8] = match ctx.ks.get(db, key)? {
            None => &[],
            Some(v) => v.as_str()?.as_bytes(),
        };
        let replies = ops
            .iter()
            .map(|op| Reply::Integer(get(bytes, op)))
            .collect();
        ctx.effect = Effect::Nothing;
        return Ok(Reply::Array(replies));
    };
    if read_only_command {
        return Err(OpError::custom(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let (bytes, grew) = string_for_bits(ctx, key, highest)?;
    let mut changes = 0usize;
    let mut replies = Vec::with_capacity(ops.len());
    for op in &ops {
        if op.kind == Kind::Get {
            replies.push(Reply::Integer(get(bytes, op)));
            continue;
        }
        let old = read_bits(bytes, op.offset, op.bits);
        let (outcome, new) = if op.signed {
            signed_write(sign_extend(old, op.bits), op)
        } else {
            unsigned_write(old, op)
        };
        match outcome {
            None => replies.push(Reply::Null),
            Some(reply) => {
                replies.push(Reply::Integer(reply));
                write_bits(bytes, op.offset, op.bits, new);
                if grew || field(new, op.bits) != old {
                    changes += 1;
                }
            }
        }
    }
    if changes > 0 {
        ctx.notify(notify::STRING, "setbit", key);
    } else if grew {
        // Created or padded but no field changed: Redis signals nothing (no event, no
        // invalidation for WATCH or tracking), yet the key now exists, so the command
        // is still logged for a restart to rebuild it.
        ctx.unmodified_keys.push(1);
    } else {
        ctx.effect = Effect::Nothing;
    }
    Ok(Reply::Array(replies))
}

/// Whether a `BITFIELD` call may write its key, read from its arguments the way
/// Redis's key finder for it reads them (for ACL key permissions and `COMMAND
/// GETKEYSANDFLAGS`): only `GET` and `OVERFLOW` subcommands read; a `SET`, an `INCRBY`
/// or anything it cannot make sense of counts as a write.
pub fn bitfield_writes(argv: &[Vec<u8>]) -> bool {
    let mut i = 2;
    while i < argv.len() {
        let remaining = argv.len() - i - 1;
        let arg = &argv[i];
        if is_kw(arg, "get") && remaining >= 2 {
            i += 3;
        } else if is_kw(arg, "overflow") && remaining >= 1 {
            i += 2;
        } else {
            return true;
        }
    }
    false
}

/// Parses every subcommand, in Redis's order of checks.
fn parse(ctx: &Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Vec<FieldOp>> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < argv.len() {
        let sub = &argv[j];
        let remaining = argv.len() - j - 1;
        let kind = if is_kw(sub, "get") && remaining >= 2 {
            Kind::Get
        } else if is_kw(sub, "set") && remaining >= 3 {
            Kind::Set
        } else if is_kw(sub, "incrby") && remaining >= 3 {
            Kind::IncrBy
        } else if is_kw(sub, "overflow") && remaining >= 1 {
            let how = &argv[j + 1];
            overflow = if is_kw(how, "wrap") {
                Overflow::Wrap
            } else if is_kw(how, "sat") {
                Overflow::Sat
            } else if is_kw(how, "fail") {
                Overflow::Fail
            } else {
                return Err(OpError::custom("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(OpError::Syntax);
        };
        let (signed, bits) = field_type(&argv[j + 1])?;
        let offset = bit_offset(ctx, &argv[j + 2], Some(bits))?;
        let value = match kind {
            Kind::Get => 0,
            Kind::Set | Kind::IncrBy => int(&argv[j + 3])?,
        };
        ops.push(FieldOp {
            kind,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if kind == Kind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// A field type, `i1`..`i64` or `u1`..`u63` (the prefix is case-sensitive, as in
/// Redis; `u64` is refused because its values would not fit a reply integer).
fn field_type(arg: &[u8]) -> OpResult<(bool, u32)> {
    let bad = || {
        OpError::custom(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not \
             supported but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(bad()),
    };
    // Redis reads the width up to the first NUL byte (it takes the C string's length).
    let digits = &arg[1..];
    let digits = &digits[..digits.iter().position(|&b| b == 0).unwrap_or(digits.len())];
    let bits = crate::util::num::parse_i64(digits).ok_or_else(bad)?;
    let max = if signed { 64 } else { 63 };
    if !(1..=max).contains(&bits) {
        return Err(bad());
    }
    // 1..=64 fits.
    Ok((signed, bits as u32))
}

/// The value a `GET` replies with.
fn get(bytes: &[u8], op: &FieldOp) -> i64 {
    let raw = read_bits(bytes, op.offset, op.bits);
    if op.signed {
        sign_extend(raw, op.bits)
    } else {
        // Unsigned fields are at most 63 bits wide.
        raw as i64
    }
}

/// The `bits`-wide field at bit `offset`, high bit first; bytes past the end of the
/// string read as zeros.
fn read_bits(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for i in offset..offset + u64::from(bits) {
        let byte = usize::try_from(i >> 3)
            .ok()
            .and_then(|b| bytes.get(b))
            .copied()
            .unwrap_or(0);
        value = (value << 1) | u64::from((byte >> (7 - (i & 7))) & 1);
    }
    value
}

/// Writes the low `bits` bits of `value` at bit `offset` (inside `bytes`, which the
/// caller grew to hold every write).
fn write_bits(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let bit = (value >> (u64::from(bits) - 1 - j)) & 1;
        let i = offset + j;
        let Some(byte) = usize::try_from(i >> 3).ok().and_then(|b| bytes.get_mut(b)) else {
            return;
        };
        let mask = 0x80u8 >> (i & 7);
        if bit == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// The low `bits` bits of a value (what a write stores).
fn field(value: u64, bits: u32) -> u64 {
    if bits >= 64 {
        value
    } else {
        value & ((1u64 << bits) - 1)
    }
}

/// A `bits`-wide two's-complement field as an `i64`.
fn sign_extend(raw: u64, bits: u32) -> i64 {
    if bits < 64 && raw & (1u64 << (bits - 1)) != 0 {
        (raw | (u64::MAX << bits)) as i64
    } else {
        raw as i64
    }
}

/// `SET` or `INCRBY` on an unsigned field holding `old`: the reply (`None` when
/// `OVERFLOW FAIL` stops it) and the value to store.
fn unsigned_write(old: u64, op: &FieldOp) -> (Option<i64>, u64) {
    let (start, incr) = match op.kind {
        Kind::IncrBy => (old, op.value),
        _ => (op.value as u64, 0),
    };
    let new = match unsigned_overflow(start, incr, op.bits, op.overflow) {
        Ok(()) => start.wrapping_add(incr as u64),
        Err(None) => return (None, old),
        Err(Some(limit)) => limit,
    };
    // Unsigned fields are at most 63 bits wide, so both replies fit.
    let reply = if op.kind == Kind::IncrBy { new } else { old };
    (Some(reply as i64), new)
}

/// `SET` or `INCRBY` on a signed field holding `old`.
fn signed_write(old: i64, op: &FieldOp) -> (Option<i64>, u64) {
    let (start, incr) = match op.kind {
        Kind::IncrBy => (old, op.value),
        _ => (op.value, 0),
    };
    let new = match signed_overflow(start, incr, op.bits, op.overflow) {
        Ok(()) => start.wrapping_add(incr),
        Err(None) => return (None, old as u64),
        Err(Some(limit)) => limit,
    };
    let reply = if op.kind == Kind::IncrBy { new } else { old };
    (Some(reply), new as u64)
}

/// Redis's `checkUnsignedBitfieldOverflow`: `Ok` when `value + incr` fits a `bits`-wide
/// unsigned field, otherwise the value to store instead (`None` under `FAIL`).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, how: Overflow) -> Result<(), Option<u64>> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let limit = |sat: u64| match how {
        Overflow::Wrap => {
            Some(value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0)))
        }
        Overflow::Sat => Some(sat),
        Overflow::Fail => None,
    };
    if value > max || (incr > 0 && incr > max_incr) {
        Err(limit(max))
    } else if incr < 0 && incr < min_incr {
        Err(limit(0))
    } else {
        Ok(())
    }
}

/// Redis's `checkSignedBitfieldOverflow`, with its C arithmetic (the increments it
/// compares against are computed with wrapping, as C's integers wrap).
fn signed_overflow(value: i64, incr: i64, bits: u32, how: Overflow) -> Result<(), Option<i64>> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let limit = |sat: i64| match how {
        Overflow::Wrap => {
            let mut c = (value as u64).wrapping_add(incr as u64);
            if bits < 64 {
                let mask = u64::MAX << bits;
                if c & (1u64 << (bits - 1)) != 0 {
                    c |= mask;
                } else {
                    c &= !mask;
                }
            }
            Some(c as i64)
        }
        Overflow::Sat => Some(sat),
        Overflow::Fail => None,
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        Err(limit(max))
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        Err(limit(min))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_odd_offsets() {
        let mut b = vec![0u8; 10];
        write_bits(&mut b, 7, 5, 23);
        assert_eq!(&b[..2], &[0b0000_0001, 0b0111_0000]);
        assert_eq!(read_bits(&b, 7, 5), 23);
        write_bits(&mut b, 3, 64, u64::MAX - 5);
        assert_eq!(read_bits(&b, 3, 64), u64::MAX - 5);
        assert_eq!(read_bits(&b, 75, 10), 0, "past the end reads zeros");
        assert_eq!(sign_extend(0b1000, 4), -8);
        assert_eq!(sign_extend(0b0111, 4), 7);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
    }

    #[test]
    fn overflow_rules() {
        use Overflow::*;
        assert_eq!(unsigned_overflow(250, 10, 8, Wrap), Err(Some(4)));
        assert_eq!(unsigned_overflow(250, 10, 8, Sat), Err(Some(255)));
        assert_eq!(unsigned_overflow(5, -10, 8, Sat), Err(Some(0)));
        assert_eq!(unsigned_overflow(5, -10, 8, Wrap), Err(Some(251)));
        assert_eq!(unsigned_overflow(5, -10, 8, Fail), Err(None));
        assert_eq!(unsigned_overflow(5, -5, 8, Fail), Ok(()));
        assert_eq!(signed_overflow(120, 10, 8, Wrap), Err(Some(-126)));
        assert_eq!(signed_overflow(-120, -10, 8, Sat), Err(Some(-128)));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Wrap), Err(Some(i64::MIN)));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Sat), Err(Some(i64::MIN)));
        assert_eq!(signed_overflow(i64::MIN, 0, 64, Fail), Ok(()));
        // Redis's C arithmetic: -2^63 into an i8 counts as overflowing upwards.
        assert_eq!(signed_overflow(i64::MIN, 0, 8, Sat), Err(Some(127)));
    }

    #[test]
    fn types() {
        assert_eq!(field_type(b"i64").ok(), Some((true, 64)));
        assert_eq!(field_type(b"u63").ok(), Some((false, 63)));
        for bad in [&b"u64"[..], b"i65", b"i0", b"I8", b"u", b"", b"i-1", b"i08"] {
            assert!(field_type(bad).is_err(), "{bad:?}");
        }
    }
}

//! How a vector set is written into a snapshot (and into Pion's `DUMP` payload of
//! one) and read back: its parameters, every element with its vector as stored
//! (quantised codes stay codes) and attributes, then the graph's links.

use super::{Element, Stored, VQuant, VectorSetValue};
use crate::util::codec::{put_bytes, put_u32, put_u64, Malformed, Reader};

/// A vector set's parameters and elements, vectors as stored (codes stay codes).
pub fn encode(v: &VectorSetValue, out: &mut Vec<u8>) {
    put_u32(out, v.dim() as u32);
    out.push(match v.quant() {
        VQuant::NoQuant => 0,
        VQuant::Q8 => 1,
        VQuant::Bin => 2,
    });
    put_u32(out, v.m() as u32);
    put_u32(out, v.projection().map_or(0, |p| p.input as u32));
    put_u32(out, v.len() as u32);
    for (label, e) in v.elements() {
        put_u64(out, label);
        put_bytes(out, &e.name);
        put_u32(out, e.norm.to_bits());
        match &e.attr {
            Some(a) => {
                out.push(1);
                put_bytes(out, a);
            }
            None => out.push(0),
        }
        match &*v.vector(label, e) {
            Stored::F32(x) => x.iter().for_each(|c| put_u32(out, c.to_bits())),
            Stored::Q8 { codes, range } => {
                put_u32(out, range.to_bits());
                let codes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                put_bytes(out, &codes);
            }
            Stored::Bin(bits) => bits.iter().for_each(|w| put_u64(out, *w)),
        }
    }
    put_bytes(out, &v.graph_bytes());
}

/// Reads a vector set written by [`encode`], checking its parameters and elements.
pub fn decode(r: &mut Reader<'_>) -> Result<VectorSetValue, Malformed> {
    let dim = r.u32()? as usize;
    let quant = match r.u8()? {
        0 => VQuant::NoQuant,
        1 => VQuant::Q8,
        2 => VQuant::Bin,
        _ => return Err(Malformed("unknown vector quantization")),
    };
    let m = r.u32()? as usize;
    let input = r.u32()? as usize;
    if dim == 0
        || dim > 65536
        || input > 65536
        || input * dim > super::MAX_PROJECTION_CELLS
        || !(4..=4096).contains(&m)
    {
        return Err(Malformed("bad vector set parameters"));
    }
    let n = r.count(17)?;
    let mut v = VectorSetValue::restore(dim, quant, m, (input > 0).then_some(input));
    let f32_at = |r: &mut Reader<'_>| r.u32().map(f32::from_bits);
    for _ in 0..n {
        let label = r.u64()?;
        let name = r.bytes()?.to_vec();
        let norm = f32_at(r)?;
        let attr = match r.u8()? {
            0 => None,
            1 => Some(r.bytes()?.to_vec()),
            _ => return Err(Malformed("bad attribute flag")),
        };
        let vector = match quant {
            VQuant::NoQuant => Stored::F32((0..dim).map(|_| f32_at(r)).collect::<Result<_, _>>()?),
            VQuant::Q8 => {
                let range = f32_at(r)?;
                let codes = r.bytes()?.iter().map(|&c| c as i8).collect();
                Stored::Q8 { codes, range }
            }
            VQuant::Bin => Stored::Bin(
                (0..dim.div_ceil(64))
                    .map(|_| r.u64())
                    .collect::<Result<_, _>>()?,
            ),
        };
        let e = Element {
            name,
            vector,
            norm,
            attr,
        };
        if !v.restore_element_at(label, e) {
            return Err(Malformed("bad vector set element"));
        }
    }
    v.restore_graph(r.bytes()?);
    Ok(v)
}

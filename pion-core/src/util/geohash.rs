//! The geohash arithmetic behind the geo commands, as Redis defines it.
//!
//! A point is stored as a sorted-set score: its longitude and latitude, each cut
//! into 2^26 steps of the Web Mercator ranges (longitude −180..180, latitude
//! −85.05112878..85.05112878), interleaved bit by bit (latitude in the even bits,
//! longitude in the odd ones) into a 52-bit integer. Decoding gives the centre of the
//! cell. Searches cover the shape with the cell holding the centre and its eight
//! neighbours at a precision chosen from the radius, then test each candidate's
//! distance (Redis's haversine on a sphere of radius 6372797.560856 m). Every step
//! here follows Redis's order of floating-point operations, so scores, coordinates
//! and distances agree with redis-server to the last bit.

/// The finest precision: 26 bits per coordinate, 52 in all.
pub const STEP_MAX: u8 = 26;
/// The smallest longitude a point may have.
pub const LONG_MIN: f64 = -180.0;
/// The largest longitude a point may have.
pub const LONG_MAX: f64 = 180.0;
/// The smallest latitude a point may have (Web Mercator's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// The largest latitude a point may have.
pub const LAT_MAX: f64 = 85.05112878;
/// The earth's radius Redis's distances use, in metres.
pub const EARTH_RADIUS: f64 = 6372797.560856;
/// Half the earth's circumference in Web Mercator, in metres.
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A range of one coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoordRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// The longitude range of stored points.
pub const LONG_RANGE: CoordRange = CoordRange {
    min: LONG_MIN,
    max: LONG_MAX,
};
/// The latitude range of stored points.
pub const LAT_RANGE: CoordRange = CoordRange {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A geohash cell: its interleaved bits and the bits per coordinate. A cell with
/// both zero stands for none (a neighbour left out of a search).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cell {
    /// The interleaved bits.
    pub bits: u64,
    /// Bits per coordinate.
    pub step: u8,
}

impl Cell {
    /// Whether this stands for no cell.
    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The score interval `[min, max)` of the points inside this cell.
    pub fn score_range(self) -> (u64, u64) {
        let shift = 52 - 2 * u32::from(self.step);
        (self.bits << shift, (self.bits.wrapping_add(1)) << shift)
    }
}

/// A cell's extent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    /// Its longitudes.
    pub lon: CoordRange,
    /// Its latitudes.
    pub lat: CoordRange,
}

fn deg_rad(v: f64) -> f64 {
    v * D_R
}

fn rad_deg(v: f64) -> f64 {
    v / D_R
}

/// Spreads the 32 bits of `v` over the even bits of a 64-bit word.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bits of `v` into 32 bits.
fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// A double turned into an unsigned 64-bit integer as C's cast does on x86-64
/// (negative values wrap; values past the range do what its instructions do).
pub fn score_bits(score: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    // x86-64's truncation gives the "indefinite" integer 1 << 63 out of range.
    let signed = |v: f64| {
        if v > -TWO63 && v < TWO63 {
            v as i64 as u64
        } else {
            1 << 63
        }
    };
    if score >= TWO63 {
        signed(score - TWO63) ^ (1 << 63)
    } else {
        signed(score)
    }
}

/// Encodes a point at `step` bits per coordinate within the given ranges; `None`
/// outside them (or outside the stored points' limits).
pub fn encode(
    lon_range: CoordRange,
    lat_range: CoordRange,
    lon: f64,
    lat: f64,
    step: u8,
) -> Option<Cell> {
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let mut lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min);
    let mut lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min);
    let scale = (1u64 << step) as f64;
    lat_offset *= scale;
    lon_offset *= scale;
    let bits = spread(lat_offset as u32) | (spread(lon_offset as u32) << 1);
    Some(Cell { bits, step })
}

/// The 52-bit score of a point, as `GEOADD` stores it.
pub fn encode_score(lon: f64, lat: f64) -> Option<u64> {
    encode(LONG_RANGE, LAT_RANGE, lon, lat, STEP_MAX).map(|c| c.bits)
}

/// The extent of a cell within the given ranges.
pub fn decode(lon_range: CoordRange, lat_range: CoordRange, cell: Cell) -> Area {
    let lat_bits = squash(cell.bits);
    let lon_bits = squash(cell.bits >> 1);
    let div = (1u64 << cell.step) as f64;
    let lat_scale = lat_range.max - lat_range.min;
    let lon_scale = lon_range.max - lon_range.min;
    let at = |min: f64, scale: f64, i: u32| min + (f64::from(i) / div) * scale;
    Area {
        lat: CoordRange {
            min: at(lat_range.min, lat_scale, lat_bits),
            max: at(lat_range.min, lat_scale, lat_bits.wrapping_add(1)),
        },
        lon: CoordRange {
            min: at(lon_range.min, lon_scale, lon_bits),
            max: at(lon_range.min, lon_scale, lon_bits.wrapping_add(1)),
        },
    }
}

/// The longitude and latitude of a stored score: the centre of its cell, held to the
/// stored points' limits.
pub fn decode_score(score: f64) -> (f64, f64) {
    let cell = Cell {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    let a = decode(LONG_RANGE, LAT_RANGE, cell);
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 11-character base32 geohash `GEOHASH` replies for a stored score: the point
/// re-encoded with the standard latitude range (−90..90), the eleventh character
/// always `0` (52 bits fill ten).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let std_lat = CoordRange {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(LONG_RANGE, std_lat, lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (j, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (j + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

/// The distance along latitude alone, in metres.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance between two points, in metres.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    // Same longitude: the cheaper latitude distance, as Redis computes it.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// The area a search covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A circle of this radius (in the unit).
    Radius(f64),
    /// A box this wide and high (in the unit), centred on the point.
    Box(f64, f64),
}

/// A search: centre, shape and the unit's size in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// Centre longitude.
    pub lon: f64,
    /// Centre latitude.
    pub lat: f64,
    /// The shape.
    pub shape: Shape,
    /// Metres per unit.
    pub conversion: f64,
}

impl Search {
    /// The distance from the centre to a point in metres, when the point is inside
    /// the shape.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            Shape::Box(w, h) => {
                let (w, h) = (w * self.conversion, h * self.conversion);
                if lat_distance(lat, self.lat) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// The bounding box: min longitude, min latitude, max longitude, max latitude.
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = match self.shape {
            Shape::Radius(r) => (r * self.conversion, r * self.conversion),
            Shape::Box(w, h) => (self.conversion * (h / 2.0), self.conversion * (w / 2.0)),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS);
        let long_delta_top = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat + lat_delta).cos());
        let long_delta_bottom = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat - lat_delta).cos());
        let delta = if self.lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order (the centre's, then north, south, east,
    /// west, north-east, north-west, south-east, south-west); zero cells are skipped.
    pub fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        } * self.conversion;
        let mut step = estimate_step(radius, self.lat);
        let at = |step: u8| {
            let cell = encode(LONG_RANGE, LAT_RANGE, self.lon, self.lat, step).unwrap_or_default();
            (cell, neighbours(cell), decode(LONG_RANGE, LAT_RANGE, cell))
        };
        let (mut cell, mut n, mut area) = at(step);
        let [north, south, east, west, ..] = n;
        let d = |c: Cell| decode(LONG_RANGE, LAT_RANGE, c);
        let decrease = d(north).lat.max < max_lat
            || d(south).lat.min > min_lat
            || d(east).lon.max < max_lon
            || d(west).lon.min > min_lon;
        if step > 1 && decrease {
            step -= 1;
            (cell, n, area) = at(step);
        }
        // n: north, south, east, west, north-east, north-west, south-east, south-west.
        if step >= 2 {
            let zero =
                |n: &mut [Cell; 8], idx: &[usize]| idx.iter().for_each(|&i| n[i] = Cell::default());
            if area.lat.min < min_lat {
                zero(&mut n, &[1, 7, 6]);
            }
            if area.lat.max > max_lat {
                zero(&mut n, &[0, 4, 5]);
            }
            if area.lon.min < min_lon {
                zero(&mut n, &[3, 7, 5]);
            }
            if area.lon.max > max_lon {
                zero(&mut n, &[2, 6, 4]);
            }
        }
        [cell, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]
    }
}

/// The precision whose cells, with their neighbours, cover a radius at a latitude.
fn estimate_step(mut range: f64, lat: f64) -> u8 {
    if range == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const EVEN: u64 = 0x5555_5555_5555_5555;

/// Moves a cell east (`d > 0`) or west along longitude, wrapping around.
fn move_x(cell: Cell, d: i8) -> Cell {
    let width = 64 - 2 * u32::from(cell.step);
    let mut x = cell.bits & ODD;
    let y = cell.bits & EVEN;
    let zz = EVEN.checked_shr(width).unwrap_or(0);
    if d > 0 {
        x = x.wrapping_add(zz.wrapping_add(1));
    } else {
        x |= zz;
        x = x.wrapping_sub(zz.wrapping_add(1));
    }
    x &= ODD.checked_shr(width).unwrap_or(0);
    Cell {
        bits: x | y,
        step: cell.step,
    }
}

/// Moves a cell north (`d > 0`) or south along latitude, wrapping around.
fn move_y(cell: Cell, d: i8) -> Cell {
    let width = 64 - 2 * u32::from(cell.step);
    let x = cell.bits & ODD;
    let mut y = cell.bits & EVEN;
    let zz = ODD.checked_shr(width).unwrap_or(0);
    if d > 0 {
        y = y.wrapping_add(zz.wrapping_add(1));
    } else {
        y |= zz;
        y = y.wrapping_sub(zz.wrapping_add(1));
    }
    y &= EVEN.checked_shr(width).unwrap_or(0);
    Cell {
        bits: x | y,
        step: cell.step,
    }
}

/// The eight neighbours: north, south, east, west, north-east, north-west,
/// south-east, south-west.
fn neighbours(c: Cell) -> [Cell; 8] {
    [
        move_y(c, 1),
        move_y(c, -1),
        move_x(c, 1),
        move_x(c, -1),
        move_y(move_x(c, 1), 1),
        move_y(move_x(c, -1), 1),
        move_y(move_x(c, 1), -1),
        move_y(move_x(c, -1), -1),
    ]
}

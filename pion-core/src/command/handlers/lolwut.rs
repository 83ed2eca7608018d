//! `LOLWUT`: the server's version, and with `VERSION 5` or `VERSION 6` a generated
//! picture, as Redis 7 answers (its default is the version line). Version 5 draws a
//! homage to Georg Nees's *Schotter* (squares falling into disorder row by row) in
//! Braille dots; version 6 a city skyline at night in block characters. Both are drawn
//! from random, so no two calls give the same picture.

use rand::Rng;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{int, is_kw};
use crate::command::{CommandSpec, Group};
use crate::error::OpResult;
use crate::reply::Reply;

/// `LOLWUT`.
pub static COMMANDS: &[CommandSpec] =
    &[
        CommandSpec::new("lolwut", -1, READONLY | FAST, Group::Server, lolwut)
            .doc("Displays computer art and the Redis version", "5.0.0"),
    ];

fn lolwut(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (version, args) = if argv.len() >= 3 && is_kw(&argv[1], "version") {
        (Some(int(&argv[2])?), &argv[3..])
    } else {
        (None, &argv[1..])
    };
    let tail = format!("Redis ver. {}\n", crate::REDIS_VERSION);
    let text = match version {
        Some(5) => {
            let cols = setting(args, 0, 66, 1, 1000)?;
            let per_row = setting(args, 1, 8, 1, 200)?;
            let per_col = setting(args, 2, 12, 1, 200)?;
            let picture = schotter(cols as usize, per_row as usize, per_col as usize);
            format!("{picture}\nGeorg Nees - schotter, plotter on paper, 1968. {tail}")
        }
        Some(6) => {
            let cols = setting(args, 0, 80, 1, 1000)?;
            let rows = setting(args, 1, 20, 1, 1000)?;
            let picture = skyline(cols as usize, rows as usize);
            format!("{picture}\nA city that never sleeps, drawn from random. {tail}")
        }
        _ => tail,
    };
    Ok(Reply::Verbatim("txt", text.into_bytes()))
}

/// Argument `i` as an integer clamped to `low..=high`, `default` when absent.
fn setting(args: &[Vec<u8>], i: usize, default: i64, low: i64, high: i64) -> OpResult<i64> {
    Ok(args
        .get(i)
        .map(|a| int(a))
        .transpose()?
        .unwrap_or(default)
        .clamp(low, high))
}

/// A canvas of pixels drawn as Braille characters, two pixels wide and four high each.
struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<bool>,
}

impl Canvas {
    fn new(width: usize, height: usize) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![false; width * height],
        }
    }

    fn set(&mut self, x: i64, y: i64) {
        if (0..self.width as i64).contains(&x) && (0..self.height as i64).contains(&y) {
            self.pixels[y as usize * self.width + x as usize] = true;
        }
    }

    /// A straight line between two points (Bresenham's).
    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64)) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y);
            if x == x1 && y == y1 {
                return;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn render(&self) -> String {
        // The bit of each of a character's eight dots, by (column, row) in its cell.
        const DOTS: [[u32; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        let mut out = String::new();
        for cy in 0..self.height.div_ceil(4) {
            for cx in 0..self.width.div_ceil(2) {
                let mut bits = 0;
                for (dx, column) in DOTS.iter().enumerate() {
                    for (dy, bit) in column.iter().enumerate() {
                        let (x, y) = (cx * 2 + dx, cy * 4 + dy);
                        if x < self.width && y < self.height && self.pixels[y * self.width + x] {
                            bits |= bit;
                        }
                    }
                }
                out.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
            }
            out.push('\n');
        }
        out
    }
}

/// `per_row` × `per_col` squares in `cols` characters' width: the first row in order,
/// each next row turned and shifted a little further at random.
fn schotter(cols: usize, per_row: usize, per_col: usize) -> String {
    let width = cols * 2;
    let side = (width / (per_row + 2)).max(1);
    let mut canvas = Canvas::new(width, side * (per_col + 2));
    let mut rng = rand::thread_rng();
    for row in 0..per_col {
        let disorder = row as f64 / per_col as f64;
        for col in 0..per_row {
            let half = side as f64 / 2.0;
            let cx = (side * (col + 1)) as f64 + half + rng.gen_range(-1.0..=1.0) * disorder * half;
            let cy = (side * (row + 1)) as f64 + half + rng.gen_range(-1.0..=1.0) * disorder * half;
            let angle = rng.gen_range(-1.0..=1.0) * disorder * std::f64::consts::FRAC_PI_4;
            let corners: Vec<(i64, i64)> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
                .iter()
                .map(|&(dx, dy): &(f64, f64)| {
                    let (x, y) = (dx * half, dy * half);
                    let (s, c) = angle.sin_cos();
                    (
                        (cx + x * c - y * s).round() as i64,
                        (cy + x * s + y * c).round() as i64,
                    )
                })
                .collect();
            for i in 0..4 {
                canvas.line(corners[i], corners[(i + 1) % 4]);
            }
        }
    }
    canvas.render()
}

/// A skyline `cols` characters wide and `rows` high: buildings of random heights and
/// widths, their windows lit at random, a few stars above.
fn skyline(cols: usize, rows: usize) -> String {
    let mut grid = vec![vec![' '; cols]; rows];
    let mut rng = rand::thread_rng();
    for row in grid.iter_mut().take(rows / 3) {
        for cell in row.iter_mut() {
            if rng.gen_ratio(1, 40) {
                *cell = '.';
            }
        }
    }
    let mut x = 0;
    while x < cols {
        let width = rng.gen_range(3..=8).min(cols - x);
        let height = rng.gen_range(rows / 4..=rows * 3 / 4).max(1);
        for (y, row) in grid.iter_mut().enumerate().skip(rows - height) {
            for (i, cell) in row.iter_mut().enumerate().skip(x).take(width) {
                let edge = i == x || i == x + width - 1 || y == rows - height;
                *cell = if edge {
                    '█'
                } else if rng.gen_ratio(1, 3) {
                    '▒'
                } else {
                    '▓'
                };
            }
        }
        x += width + usize::from(rng.gen_ratio(1, 3));
    }
    let mut out = String::new();
    for row in grid {
        out.extend(row);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_have_the_asked_size() {
        let s = schotter(66, 8, 12);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() == 66));
        // Squares of 13 pixels (132 / 10 per side) in 14 rows of them: 182 pixels,
        // 46 rows of characters; some dots are set.
        assert_eq!(lines.len(), 46);
        assert!(s.chars().any(|c| c != '\u{2800}' && c != '\n'));
        let k = skyline(80, 20);
        assert_eq!(k.lines().count(), 20);
        assert!(k.lines().all(|l| l.chars().count() == 80));
        assert!(k.contains('█'));
    }

    #[test]
    fn a_line_sets_both_ends_and_braille_maps_dots() {
        let mut c = Canvas::new(2, 4);
        c.line((0, 0), (1, 3));
        assert!(c.pixels[0] && c.pixels[3 * 2 + 1]);
        let mut one = Canvas::new(2, 4);
        one.set(1, 3);
        assert_eq!(one.render(), "\u{2880}\n");
    }
}

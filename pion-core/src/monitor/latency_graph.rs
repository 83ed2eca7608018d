//! `LATENCY GRAPH`'s picture of one event's samples: a four-row chart, one column per
//! sample, scaled between the lowest and the highest sample, with each column's age
//! (`15s`, `3m`, `2h`, `1d`) written vertically under it; eighty columns per chart, a
//! longer history drawn as several charts one under the other.

/// Rows of one chart.
const ROWS: usize = 4;
/// Columns of one chart.
const COLUMNS: usize = 80;
/// The top of a column within its row, lowest to highest; the rows under the top are
/// drawn with `|`.
const LEVELS: &[u8] = b"_o#";

/// The text `LATENCY GRAPH` answers for `event` with `samples` (Unix seconds,
/// milliseconds; oldest first, at least one), its all-time high `max_ms`, at
/// `now_s`.
pub fn render(event: &str, samples: &[(i64, u64)], max_ms: u64, now_s: i64) -> String {
    let high = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.1).min().unwrap_or(0);
    let mut out = format!(
        "{event} - high {high} ms, low {low} ms (all time high {max_ms} ms)\n{}\n",
        "-".repeat(COLUMNS)
    );
    for chunk in samples.chunks(COLUMNS) {
        let tops: Vec<usize> = chunk.iter().map(|s| level(s.1, low, high)).collect();
        for row in (0..ROWS).rev() {
            let line: String = tops
                .iter()
                .map(|&top| match (top / LEVELS.len()).cmp(&row) {
                    std::cmp::Ordering::Equal => char::from(LEVELS[top % LEVELS.len()]),
                    std::cmp::Ordering::Greater => '|',
                    std::cmp::Ordering::Less => ' ',
                })
                .collect();
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
        let labels: Vec<Vec<u8>> = chunk
            .iter()
            .map(|s| age((now_s - s.0).max(0)).into_bytes())
            .collect();
        let height = labels.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..height {
            let line: String = labels
                .iter()
                .map(|l| l.get(i).map_or(' ', |&b| char::from(b)))
                .collect();
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// A sample's height in the chart: `0` (the lowest sample) to `ROWS * LEVELS - 1`
/// (the highest), rounded to the nearest step.
fn level(ms: u64, low: u64, high: u64) -> usize {
    let steps = ROWS * LEVELS.len();
    if high == low {
        return 0;
    }
    let share = (ms - low) as f64 / (high - low) as f64;
    ((share * steps as f64).round() as usize).min(steps - 1)
}

/// How long ago, in the largest unit that keeps it at least one.
fn age(seconds: i64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_sleeps_draw_the_documented_picture() {
        // DEBUG SLEEP .1 .2 .3 .5 .4 a few seconds apart, graphed at second 100.
        let samples = [(85, 101), (86, 200), (88, 300), (92, 500), (94, 400)];
        let got = render("command", &samples, 500, 100);
        let want = "command - high 500 ms, low 101 ms (all time high 500 ms)\n".to_string()
            + &"-".repeat(80)
            + "\n   #_\n  _||\n _|||\n_||||\n\n11186\n542ss\nsss  \n";
        assert_eq!(got, want);
    }

    #[test]
    fn ages_use_the_largest_unit_and_long_histories_wrap() {
        assert_eq!(age(59), "59s");
        assert_eq!(age(60), "1m");
        assert_eq!(age(7200), "2h");
        assert_eq!(age(3 * 86_400), "3d");
        let samples: Vec<(i64, u64)> = (0..100).map(|i| (i, 10)).collect();
        let got = render("fast-command", &samples, 10, 1000);
        // Two charts: 80 columns, then 20; equal samples sit on the bottom row.
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines[5], "_".repeat(80));
        assert!(lines.iter().any(|l| *l == "_".repeat(20)));
        assert!(got.lines().all(|l| l.len() <= 80));
    }
}

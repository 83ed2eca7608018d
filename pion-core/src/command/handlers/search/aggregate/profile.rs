//! `FT.PROFILE … AGGREGATE`: each stage of a compiled pipeline wrapped so its pulls
//! are counted and timed, then reported as RediSearch reports its result processors
//! (each pull counted, less the last when it found the end; each stage's own time,
//! without what it waited for upstream).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::pipeline::{Env, Row, Stage, StageError, State};

/// One stage's pulls and the time they took (its upstream's included).
#[derive(Default)]
struct Clock {
    calls: AtomicU64,
    nanos: AtomicU64,
}

/// A stage whose pulls are counted.
struct Profiled {
    inner: Box<dyn Stage>,
    clock: Arc<Clock>,
}

impl Stage for Profiled {
    fn next(&mut self, env: &Env<'_>, st: &mut State) -> Result<Option<Row>, StageError> {
        self.clock.calls.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let row = self.inner.next(env, st);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.clock.nanos.fetch_add(nanos, Ordering::Relaxed);
        row
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        self.inner.upstream()
    }

    fn profile_name(&self) -> String {
        self.inner.profile_name()
    }

    fn part_of_sort(&self) -> bool {
        self.inner.part_of_sort()
    }
}

/// Stands in for a stage while it is being wrapped.
struct Vacant;

impl Stage for Vacant {
    fn next(&mut self, _: &Env<'_>, _: &mut State) -> Result<Option<Row>, StageError> {
        Ok(None)
    }

    fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
        None
    }

    fn profile_name(&self) -> String {
        String::new()
    }
}

/// A wrapped stage's line, kept while the pipeline runs.
pub(in crate::command::handlers::search) struct StageLine {
    name: String,
    part_of_sort: bool,
    clock: Arc<Clock>,
}

/// One line of `Result processors profile`.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::command::handlers::search) struct ProcessorLine {
    /// `Type`.
    pub name: String,
    /// `Time`, in milliseconds: the stage's own.
    pub time_ms: f64,
    /// `Counter`.
    pub counter: u64,
}

/// Wraps every stage from the root up; the lines come root first.
pub(in crate::command::handlers::search) fn instrument(
    mut stage: Box<dyn Stage>,
) -> (Box<dyn Stage>, Vec<StageLine>) {
    let mut lines = Vec::new();
    if let Some(up) = stage.upstream() {
        let inner = std::mem::replace(up, Box::new(Vacant));
        let (wrapped, below) = instrument(inner);
        *up = wrapped;
        lines = below;
    }
    let clock = Arc::new(Clock::default());
    lines.push(StageLine {
        name: stage.profile_name(),
        part_of_sort: stage.part_of_sort(),
        clock: Arc::clone(&clock),
    });
    (
        Box::new(Profiled {
            inner: stage,
            clock,
        }),
        lines,
    )
}

/// Whether the last page of the pipeline (its `LIMIT` without an offset folded into
/// a sort) stops the reply once full, as RediSearch's does: then the reply reads
/// that many rows and no more.
pub(in crate::command::handlers::search) fn page_stops_reply(lines: &[StageLine]) -> bool {
    (0..lines.len()).any(|i| lines[i].name == "Pager/Limiter" && !folds_into_sort(lines, i))
}

/// Whether line `i` is a page RediSearch's sorter before it applies.
fn folds_into_sort(lines: &[StageLine], i: usize) -> bool {
    lines[i].part_of_sort && i > 0 && lines[i - 1].name == "Sorter"
}

/// The lines as `FT.PROFILE` shows them (a stage without a name is not shown).
pub(in crate::command::handlers::search) fn processor_lines(
    lines: &[StageLine],
) -> Vec<ProcessorLine> {
    let mut out: Vec<ProcessorLine> = Vec::new();
    let mut below_ms = 0.0;
    for (i, line) in lines.iter().enumerate() {
        let calls = line.clock.calls.load(Ordering::Relaxed);
        let total_ms = line.clock.nanos.load(Ordering::Relaxed) as f64 / 1e6;
        // A count answers once, with the count.
        let counter = if line.name == "Counter" {
            calls
        } else {
            calls.saturating_sub(1)
        };
        let folds = folds_into_sort(lines, i);
        if line.name.is_empty() {
            // Not a step of RediSearch's: its time counts in the next line's.
            continue;
        }
        match out.last_mut() {
            Some(sorter) if folds => {
                sorter.time_ms += total_ms - below_ms;
                sorter.counter = counter;
            }
            _ => out.push(ProcessorLine {
                name: line.name.clone(),
                time_ms: (total_ms - below_ms).max(0.0),
                counter,
            }),
        }
        below_ms = total_ms;
    }
    out
}

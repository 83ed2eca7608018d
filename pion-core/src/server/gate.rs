//! The execution gate: what makes a transaction (`EXEC`) or a script run as one step
//! on a multi-threaded server.
//!
//! Every command passes the gate in shared mode through the slot of the thread that
//! runs it; a command that must see no other command run meanwhile (flag
//! [`EXCLUSIVE`](crate::command::flags::EXCLUSIVE)) takes every slot in exclusive
//! mode. The slots are separate cache lines, so ordinary commands on different worker
//! threads never touch a shared counter: passing the gate costs one uncontended lock.
//! Inside the exclusive section, the commands of the transaction or script lock their
//! own shards as usual; nothing else holds or waits for a shard then, so no lock order
//! is at stake.
//!
//! A connection that runs a batch of pipelined commands passes its slot once for the
//! whole batch ([`Gate::begin_batch`]): the commands of the batch then enter
//! without touching the lock. The thread lets the slot go whenever it must wait for
//! others: before it takes the gate exclusively itself and before it serves blocked
//! clients ([`Gate::pause_batch`]); the next command takes the slot again.
//!
//! The gate also carries the busy-script state: once a script has run past
//! `busy-reply-threshold`, the others stop waiting and answer `-BUSY`, and the commands
//! allowed while busy (`SCRIPT KILL`, `FUNCTION KILL`) run without passing the gate.
//! The thread that runs the script serves its own other clients meanwhile through the
//! busy pump its event loop installs ([`set_busy_pump`]), which the script's
//! instruction hook calls ([`pump_while_busy`]), as Redis processes events while a
//! script is blocked.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use std::sync::Arc;

use parking_lot::{ArcRwLockReadGuard, RawRwLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use crate::clients::gate_slot::{BACKGROUND_SLOT, EMBEDDED_SLOT, SLOTS, WORKER_SLOTS};

/// How long a waiting command sleeps between looks at the busy state.
const BUSY_POLL: Duration = Duration::from_millis(20);

/// Pads each slot's lock to its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct CacheLine;

/// One slot: shared so that a batch's passage can outlive a borrow of the gate.
#[derive(Default)]
struct Slot(Arc<RwLock<CacheLine>>);

/// The gate (one per engine).
pub struct Gate {
    slots: Box<[Slot]>,
    busy: BusyState,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            busy: BusyState::default(),
        }
    }
}

/// Shared passage through one slot: held while an ordinary command runs.
pub struct Shared<'a> {
    _guard: RwLockReadGuard<'a, CacheLine>,
}

/// A batch of one connection's commands on this thread (see [`Gate::batch`]).
pub struct BatchScope<'a> {
    gate: &'a Gate,
}

impl Drop for BatchScope<'_> {
    fn drop(&mut self) {
        self.gate.end_batch();
    }
}

/// Exclusive passage: every slot, held while a transaction or script runs.
pub struct Exclusive<'a> {
    _guards: Vec<RwLockWriteGuard<'a, CacheLine>>,
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        EXCLUSIVE_HERE.with(|h| h.set(false));
    }
}

/// The batch a connection runs on this thread: which gate and slot, and the
/// passage, once a command of the batch has taken it.
struct Batch {
    gate: usize,
    slot: usize,
    passage: Option<ArcRwLockReadGuard<RawRwLock, CacheLine>>,
}

thread_local! {
    /// Whether this thread holds the gate exclusively.
    static EXCLUSIVE_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The batch this thread runs, if any.
    static BATCH: RefCell<Option<Batch>> = const { RefCell::new(None) };
    /// What serves this thread's other clients while a script it runs is busy.
    static BUSY_PUMP: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// Whether the calling thread holds the gate exclusively (it runs a transaction, a
/// script or another exclusive command).
pub fn exclusive_here() -> bool {
    EXCLUSIVE_HERE.with(|h| h.get())
}

/// Installs, for the calling thread, what serves its other clients while a script
/// that this thread runs is past the busy threshold (a server's worker thread installs
/// one; without one, its other clients wait for the script).
pub fn set_busy_pump(pump: Box<dyn FnMut()>) {
    BUSY_PUMP.with(|p| *p.borrow_mut() = Some(pump));
}

/// Called by a running script's instruction hook: lets the thread's busy pump serve
/// the other clients. Does nothing on a thread without a pump, and never re-enters
/// the pump (the commands it serves cannot run a script).
pub fn pump_while_busy() {
    BUSY_PUMP.with(|p| {
        if let Ok(mut pump) = p.try_borrow_mut() {
            if let Some(pump) = pump.as_mut() {
                pump();
            }
        }
    });
}

/// What a command met at the gate.
pub enum Entry<'a> {
    /// It may run.
    Shared(Shared<'a>),
    /// It may run: the batch it belongs to holds the passage.
    Batched,
    /// A script has been running longer than the busy threshold: answer `-BUSY`.
    Busy,
}

impl Gate {
    /// Passes the gate through `slot` in shared mode, waiting while a transaction or
    /// script runs. Gives up with [`Entry::Busy`] once a running script is past the
    /// busy threshold (`threshold_ms`, 0 = never).
    pub fn enter(&self, slot: usize, threshold_ms: u64) -> Entry<'_> {
        // A command on the thread that holds the gate exclusively is one its busy pump
        // serves while its script runs: it must not wait for itself.
        if exclusive_here() {
            return Entry::Busy;
        }
        if self.enter_batched(slot) {
            return Entry::Batched;
        }
        let lock = &self.slots[slot % SLOTS].0;
        if let Some(g) = lock.try_read() {
            return Entry::Shared(Shared { _guard: g });
        }
        loop {
            if let Some(g) = lock.try_read_for(BUSY_POLL) {
                return Entry::Shared(Shared { _guard: g });
            }
            if self.busy.is_busy(threshold_ms) {
                return Entry::Busy;
            }
        }
    }

    /// Takes every slot, in order, once no other command runs, unless a script is, or
    /// becomes, busy while waiting for them (`None`: answer `-BUSY`; a threshold of 0
    /// never gives up). Never waits on this thread's own exclusive section (a command
    /// the busy pump serves).
    pub fn exclusive_unless_busy(&self, threshold_ms: u64) -> Option<Exclusive<'_>> {
        if exclusive_here() {
            return None;
        }
        // This thread's own batch must not hold a slot it is about to wait for.
        self.pause_batch();
        let mut guards = Vec::with_capacity(SLOTS);
        for slot in self.slots.iter() {
            loop {
                if let Some(g) = slot.0.try_write_for(BUSY_POLL) {
                    guards.push(g);
                    break;
                }
                if self.busy.is_busy(threshold_ms) {
                    return None;
                }
            }
        }
        EXCLUSIVE_HERE.with(|h| h.set(true));
        Some(Exclusive { _guards: guards })
    }

    /// Starts a batch of commands this thread runs for one connection through
    /// `slot`: they pass the gate once between them (see the module comment). Ends
    /// with [`end_batch`](Self::end_batch). Nothing is batched on a thread that holds
    /// the gate exclusively (a busy script's pump).
    pub fn begin_batch(&self, slot: usize) {
        if exclusive_here() {
            return;
        }
        let batch = Batch {
            gate: self.address(),
            slot,
            passage: None,
        };
        BATCH.with(|b| *b.borrow_mut() = Some(batch));
    }

    /// [`begin_batch`](Self::begin_batch), ended when the returned scope is dropped
    /// (a panic that unwinds through the batch ends it too).
    pub fn batch(&self, slot: usize) -> BatchScope<'_> {
        self.begin_batch(slot);
        BatchScope { gate: self }
    }

    /// Ends this thread's batch: its passage is let go.
    pub fn end_batch(&self) {
        BATCH.with(|b| {
            let mut b = b.borrow_mut();
            if b.as_ref().is_some_and(|batch| batch.gate == self.address()) {
                *b = None;
            }
        });
    }

    /// Lets this thread's batch passage go until the batch's next command: before
    /// the thread waits on other threads that may be waiting for the gate (serving
    /// blocked clients, taking the gate exclusively).
    pub fn pause_batch(&self) {
        BATCH.with(|b| {
            if let Some(batch) = b.borrow_mut().as_mut() {
                if batch.gate == self.address() {
                    batch.passage = None;
                }
            }
        });
    }

    /// Whether a command through `slot` may run on its batch's passage (taken now if
    /// the batch has none; `false` when it is not free at once: the command then
    /// waits at the gate as any other).
    fn enter_batched(&self, slot: usize) -> bool {
        BATCH.with(|b| {
            let mut b = b.borrow_mut();
            let Some(batch) = b.as_mut() else {
                return false;
            };
            if batch.gate != self.address() || batch.slot != slot {
                return false;
            }
            if batch.passage.is_none() {
                batch.passage = self.slots[slot % SLOTS].0.try_read_arc();
            }
            batch.passage.is_some()
        })
    }

    /// This gate's identity, for the thread-local batch.
    fn address(&self) -> usize {
        self as *const Gate as usize
    }

    /// Passage for background work that changes or captures the keyspace (active
    /// expiry, a snapshot's cut), so it never lands inside a transaction or script.
    /// `None` (no need to wait) when this thread itself runs the exclusive section,
    /// as `SAVE` inside `MULTI` does.
    pub fn enter_background(&self) -> Option<Shared<'_>> {
        if exclusive_here() {
            return None;
        }
        Some(Shared {
            _guard: self.slots[BACKGROUND_SLOT].0.read(),
        })
    }

    /// The busy-script state.
    pub fn busy(&self) -> &BusyState {
        &self.busy
    }
}

/// Whether a script runs, since when, and of which kind (what `-BUSY` says). Whether
/// it may still be killed is the scripting engine's (`scripting::busy`).
#[derive(Default)]
pub struct BusyState {
    /// Start of the running script (Unix ms), 0 when none runs.
    started_ms: AtomicI64,
    /// The running code is a function (`FCALL`) rather than an `EVAL` script.
    function: AtomicBool,
}

impl BusyState {
    /// Marks the start of a script (or function) run.
    pub fn begin_script(&self, function: bool) {
        self.function.store(function, Ordering::SeqCst);
        self.started_ms
            .store(crate::util::clock::system_unix_ms(), Ordering::SeqCst);
    }

    /// Marks the end of the running script.
    pub fn end_script(&self) {
        self.started_ms.store(0, Ordering::SeqCst);
    }

    /// Whether a script runs and has run longer than `threshold_ms` (0 = never busy).
    pub fn is_busy(&self, threshold_ms: u64) -> bool {
        let started = self.started_ms.load(Ordering::SeqCst);
        threshold_ms > 0
            && started > 0
            && crate::util::clock::system_unix_ms().saturating_sub(started) >= threshold_ms as i64
    }

    /// Whether a script (or function) runs now, busy or not.
    pub fn script_running(&self) -> bool {
        self.started_ms.load(Ordering::SeqCst) > 0
    }

    /// The `-BUSY` error other clients get while a script is busy: it names the kill
    /// command that applies (`SCRIPT KILL` for `EVAL`, `FUNCTION KILL` for `FCALL`).
    pub fn refusal(&self) -> &'static str {
        if self.function.load(Ordering::SeqCst) {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or \
             SHUTDOWN NOSAVE."
        } else {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or \
             SHUTDOWN NOSAVE."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn exclusive_excludes_every_slot() {
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let x = gate.exclusive_unless_busy(0).expect("no script runs");
        let mut threads = Vec::new();
        for slot in [0, 5, BACKGROUND_SLOT] {
            let (gate, inside) = (Arc::clone(&gate), Arc::clone(&inside));
            threads.push(std::thread::spawn(move || {
                let Entry::Shared(_g) = gate.enter(slot, 0) else {
                    panic!("never busy without a script");
                };
                inside.fetch_add(1, Ordering::SeqCst);
            }));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(inside.load(Ordering::SeqCst), 0);
        drop(x);
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(inside.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_batch_holds_its_slot_until_it_ends() {
        let gate = Arc::new(Gate::default());
        gate.begin_batch(2);
        assert!(matches!(gate.enter(2, 0), Entry::Batched));
        assert!(matches!(gate.enter(2, 0), Entry::Batched));
        // Another slot is not the batch's: an ordinary passage.
        assert!(matches!(gate.enter(3, 0), Entry::Shared(_)));
        // Another gate on this thread is not batched either.
        let other_gate = Gate::default();
        assert!(matches!(other_gate.enter(2, 0), Entry::Shared(_)));
        // An exclusive command elsewhere waits for the batch to end.
        let taken = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (gate, taken) = (Arc::clone(&gate), Arc::clone(&taken));
            std::thread::spawn(move || {
                let _x = gate.exclusive_unless_busy(0).expect("no script runs");
                taken.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !taken.load(Ordering::SeqCst),
            "the batch still holds slot 2"
        );
        gate.end_batch();
        waiter.join().expect("thread");
        assert!(taken.load(Ordering::SeqCst));
    }

    #[test]
    fn a_batch_ends_when_its_scope_unwinds() {
        let gate = Gate::default();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _batch = gate.batch(4);
            assert!(matches!(gate.enter(4, 0), Entry::Batched));
            panic!("a bug while the batch runs");
        }));
        assert!(unwound.is_err());
        assert!(gate.slots[4].0.try_write().is_some(), "the slot was let go");
        assert!(matches!(gate.enter(4, 0), Entry::Shared(_)));
    }

    #[test]
    fn a_batch_lets_its_slot_go_for_its_own_exclusive_command() {
        let gate = Gate::default();
        gate.begin_batch(1);
        assert!(matches!(gate.enter(1, 0), Entry::Batched));
        // The batch's own EXEC takes every slot, its own included, without waiting
        // for itself.
        let x = gate
            .exclusive_unless_busy(0)
            .expect("no deadlock on its own slot");
        drop(x);
        // The next command of the batch takes the passage again.
        assert!(matches!(gate.enter(1, 0), Entry::Batched));
        gate.pause_batch();
        assert!(
            gate.slots[1].0.try_write().is_some(),
            "paused: the slot is free"
        );
        gate.end_batch();
        assert!(matches!(gate.enter(1, 0), Entry::Shared(_)));
    }

    #[test]
    fn background_work_waits_unless_this_thread_is_exclusive() {
        let gate = Arc::new(Gate::default());
        let x = gate.exclusive_unless_busy(0).expect("no script runs");
        // The exclusive thread itself (SAVE inside MULTI) passes without waiting.
        assert!(gate.enter_background().is_none());
        let other = Arc::clone(&gate);
        let waited = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            let g = other.enter_background();
            assert!(g.is_some());
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(x);
        assert!(waited.join().expect("thread") >= Duration::from_millis(40));
        assert!(gate.enter_background().is_some());
    }

    #[test]
    fn busy_script_turns_waiters_away() {
        let gate = Gate::default();
        let _x = gate.exclusive_unless_busy(0).expect("no script runs");
        gate.busy().begin_script(false);
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(gate.enter(1, 1), Entry::Busy));
        assert!(gate.busy().script_running());
        assert!(gate.busy().refusal().contains("SCRIPT KILL"));
        gate.busy().end_script();
        assert!(!gate.busy().script_running());
        assert!(!gate.busy().is_busy(1));
    }

    #[test]
    fn the_exclusive_thread_never_waits_for_itself() {
        // A command the busy pump serves runs on the thread that holds the gate:
        // it is refused at once instead of waiting for its own script.
        let gate = Gate::default();
        let _x = gate.exclusive_unless_busy(0).expect("no script runs");
        gate.busy().begin_script(true);
        let start = std::time::Instant::now();
        assert!(matches!(gate.enter(3, 1000), Entry::Busy));
        assert!(gate.exclusive_unless_busy(1000).is_none());
        assert!(start.elapsed() < BUSY_POLL);
        assert!(gate.busy().refusal().contains("FUNCTION KILL"));
        gate.busy().end_script();
    }

    #[test]
    fn exclusive_gives_up_once_a_script_is_busy() {
        let gate = Arc::new(Gate::default());
        let x = gate.exclusive_unless_busy(0).expect("no script runs");
        gate.busy().begin_script(false);
        let other = Arc::clone(&gate);
        let waiter = std::thread::spawn(move || other.exclusive_unless_busy(30).is_none());
        assert!(waiter.join().expect("thread"), "refused once busy");
        gate.busy().end_script();
        drop(x);
        assert!(gate.exclusive_unless_busy(30).is_some());
    }

    #[test]
    fn the_busy_pump_runs_on_its_own_thread_only() {
        use std::rc::Rc;
        let calls = Rc::new(std::cell::Cell::new(0));
        let counted = Rc::clone(&calls);
        set_busy_pump(Box::new(move || counted.set(counted.get() + 1)));
        pump_while_busy();
        pump_while_busy();
        assert_eq!(calls.get(), 2);
        let elsewhere = std::thread::spawn(pump_while_busy);
        elsewhere.join().expect("no pump there");
        assert_eq!(calls.get(), 2);
    }
}

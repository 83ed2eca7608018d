"""The generation worker: one thread owns the model.

MLX streams belong to the thread that made them, and a model serves one sequence at a
time here, so a single thread loads the model and runs every request, in the order
requests arrived (a FIFO queue: no request waits behind one that came later). The web
side submits a :class:`Job` and reads :class:`Event`\\ s back; setting
``Job.cancelled`` (a client that went away) stops the job between two prefill chunks
or two tokens, and the cache keeps what was computed.

What the model does per request is a :class:`Generator` (prefill a chunk, pick the
next token): tests replace it to script the tokens a model emits, or to make a prefill
slow, while the cache and the wire formats stay real.
"""

import dataclasses
import queue
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

import mlx.core as mx

__all__ = ["Sampling", "Job", "Event", "Generator", "Worker"]


@dataclasses.dataclass
class Sampling:
    """Sampling parameters, as the APIs name them; ``temperature`` 0 is greedy."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    max_tokens: int = 512
    stop: List[str] = dataclasses.field(default_factory=list)
    seed: Optional[int] = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    #: At most this many tokens inside a thinking block (Anthropic's
    #: ``thinking.budget_tokens``): at the budget the block is closed with the model's
    #: end-of-thinking markup, and the reply goes on as text. ``None``: no budget.
    thinking_budget: Optional[int] = None


@dataclasses.dataclass
class Event:
    """What the worker reports: ``kind`` is ``started`` (``cached``, ``source``),
    ``text`` (``text``), ``done`` (``reason``: ``stop``, ``length``, ``cancelled``;
    ``stop_sequence``; ``completion_tokens``) or ``error`` (``message``)."""

    kind: str
    text: str = ""
    cached: int = 0
    source: str = ""
    reason: str = ""
    stop_sequence: Optional[str] = None
    completion_tokens: int = 0
    message: str = ""


@dataclasses.dataclass
class Job:
    """One request: the prompt's token ids, its sampling, where events go
    (``emit``, called from the worker thread) and, for the cache, ``rerender``:
    given the reply's text, the token ids of the conversation with that reply as the
    next request would send it, raising when it cannot be rendered (None: keep
    everything the cache holds)."""

    prompt: List[int]
    sampling: Sampling
    emit: Callable[[Event], None]
    rerender: Optional[Callable[[str], List[int]]] = None
    #: The rendered prompt ends inside a thinking block (templates that open one).
    thinking_open: bool = False
    cancelled: threading.Event = dataclasses.field(default_factory=threading.Event)
    stats: Dict[str, Any] = dataclasses.field(default_factory=dict)


class Generator:
    """How the model advances: :meth:`prefill` runs a chunk of prompt tokens into the
    cache, :meth:`sample` picks a token from log-probabilities. Subclass to script."""

    def prefill(self, model: Any, tokens: List[int], cache: List[Any]) -> None:
        """Runs ``tokens`` through ``model``, updating ``cache``."""
        model(mx.array(tokens)[None], cache=cache)
        mx.eval([c.state for c in cache])

    def make_sampler(self, sampling: Sampling) -> Callable[[mx.array], mx.array]:
        """mlx-lm's sampler for ``sampling`` (argmax when the temperature is 0)."""
        from mlx_lm.sample_utils import make_sampler

        top_p = sampling.top_p if 0.0 < sampling.top_p < 1.0 else 0.0
        return make_sampler(sampling.temperature, top_p=top_p, min_p=sampling.min_p, top_k=sampling.top_k)

    def sample(self, logprobs: mx.array, sampler: Callable[[mx.array], mx.array]) -> int:
        """The next token from ``logprobs`` (``[1, vocab]``)."""
        tok = sampler(logprobs)
        return int(tok.item())

    def begin(self, job: Job) -> None:
        """Called when a job starts (scripted generators pick their script here)."""


def _processors(sampling: Sampling, max_tokens: int) -> List[Any]:
    from mlx_lm.sample_utils import make_logits_processors

    kw: Dict[str, Any] = {}
    if sampling.presence_penalty:
        kw.update(presence_penalty=sampling.presence_penalty, presence_context_size=max_tokens)
    if sampling.frequency_penalty:
        kw.update(frequency_penalty=sampling.frequency_penalty, frequency_context_size=max_tokens)
    if sampling.repetition_penalty and sampling.repetition_penalty != 1.0:
        kw.update(repetition_penalty=sampling.repetition_penalty, repetition_context_size=max_tokens)
    return make_logits_processors(**kw) if kw else []


class _StopText:
    """Holds back text that may be the start of a stop sequence; finds the first."""

    def __init__(self, stops: Sequence[str]):
        self.stops = [s for s in stops if s]
        self.sent = 0

    def step(self, text: str) -> "tuple[str, Optional[str]]":
        """The text that can go out now and the stop sequence found (if any)."""
        if not self.stops:
            out, self.sent = text[self.sent :], len(text)
            return out, None
        longest = max(len(s) for s in self.stops)
        start = max(0, self.sent - longest)
        first = None
        for s in self.stops:
            at = text.find(s, start)
            if at >= 0 and (first is None or at < first[0]):
                first = (at, s)
        if first is not None:
            out = text[self.sent : first[0]]
            self.sent = first[0]
            return out, first[1]
        hold = 0
        for s in self.stops:
            for k in range(min(len(s) - 1, len(text) - self.sent), 0, -1):
                if text.endswith(s[:k]):
                    hold = max(hold, k)
                    break
        end = len(text) - hold
        out = text[self.sent : end]
        self.sent = max(self.sent, end)
        return out, None

    def rest(self, text: str) -> str:
        """Everything not yet sent (the reply ended without a stop sequence)."""
        out, self.sent = text[self.sent :], len(text)
        return out


class Worker:
    """The thread that owns the model. ``load`` (called on that thread) returns
    ``(model, tokenizer, cache)`` with ``cache`` a :class:`pion.serve.cache.PromptCache`;
    ``generator`` defaults to :class:`Generator`; ``prefill_step`` is the prefill chunk
    (a multiple of the cache's block size); ``kv_bits`` quantises K/V after a prefill."""

    def __init__(self, load: Callable[[], Any], generator: Optional[Generator] = None,
                 prefill_step: int = 512, kv_bits: Optional[int] = None):
        self._load = load
        self.generator = generator or Generator()
        self.prefill_step = prefill_step
        self.kv_bits = kv_bits
        self.jobs: "queue.Queue[Optional[Job]]" = queue.Queue()
        self.ready = threading.Event()
        self.load_error: Optional[BaseException] = None
        self.model = self.tokenizer = self.cache = None
        self.stats = {"requests": 0, "cancelled": 0, "errors": 0, "prefilled_tokens": 0, "generated_tokens": 0}
        self.last: Dict[str, Any] = {}
        self.busy = False
        self._thread = threading.Thread(target=self._main, name="pion-serve-model", daemon=True)

    def start(self) -> None:
        """Starts the thread and waits for the model; re-raises a load failure."""
        self._thread.start()
        self.ready.wait()
        if self.load_error is not None:
            raise self.load_error

    def stop(self, timeout: float = 30.0) -> None:
        """Ends the thread after the job in progress and closes the prompt store."""
        if self._thread.is_alive():
            self.jobs.put(None)
            self._thread.join(timeout)

    def submit(self, job: Job) -> int:
        """Queues ``job``; returns how many jobs were ahead of it."""
        ahead = self.jobs.qsize() + (1 if self.busy else 0)
        self.jobs.put(job)
        return ahead

    @property
    def queued(self) -> int:
        """Jobs waiting (not counting the one running)."""
        return self.jobs.qsize()

    def _main(self) -> None:
        try:
            self.model, self.tokenizer, self.cache = self._load()
        except BaseException as e:  # reported by start()
            self.load_error = e
            self.ready.set()
            return
        self.ready.set()
        while True:
            job = self.jobs.get()
            if job is None:
                self.cache.close()
                return
            if job.cancelled.is_set():
                self.stats["cancelled"] += 1
                job.emit(Event("done", reason="cancelled"))
                continue
            self.busy = True
            try:
                self._run(job)
            except Exception as e:
                self.stats["errors"] += 1
                traceback.print_exc(file=sys.stderr)
                job.emit(Event("error", message=f"{type(e).__name__}: {e}"))
            finally:
                self.busy = False

    def _cuts(self, start: int, end: int) -> List[int]:
        """Where prefill chunks end between ``start`` and ``end``: every
        ``prefill_step`` tokens and, for recurrent models, every block boundary."""
        pion = self.cache.pion
        cuts = set(range((start // self.prefill_step + 1) * self.prefill_step, end, self.prefill_step))
        if pion.recurrent:
            bt = pion.block_tokens
            cuts |= set(range((start // bt + 1) * bt, end, bt))
        cuts.add(end)
        return sorted(c for c in cuts if c > start)

    def _run(self, job: Job) -> None:
        t0 = time.perf_counter()
        model, gen = self.model, self.generator
        self.stats["requests"] += 1
        gen.begin(job)
        live = self.cache.begin(job.prompt)
        job.emit(Event("started", cached=live.reused, source=live.source))
        prompt = job.prompt
        try:
            at = live.reused
            for end in self._cuts(at, len(prompt) - 1):
                if job.cancelled.is_set():
                    break
                chunk = prompt[at:end]
                gen.prefill(model, chunk, live.caches)
                live.advance(chunk)
                at = end
            if self.kv_bits is not None:
                live.quantize(self.kv_bits)
            reason, stop_seq, n_gen, text = self._decode(job, live, at == len(prompt) - 1)
        except BaseException:
            self.cache.discard(live)
            raise
        self.last = {
            "prompt_tokens": len(prompt),
            "cached_tokens": live.reused,
            "prefilled_tokens": min(len(live.tokens), len(prompt)) - live.reused,
            "completion_tokens": n_gen,
            "source": live.source,
            "finish": reason,
            "seconds": round(time.perf_counter() - t0, 4),
        }
        # Counters last, so that a reader who sees them also sees ``last``.
        self.stats["prefilled_tokens"] += self.last["prefilled_tokens"]
        self.stats["generated_tokens"] += n_gen
        if reason == "cancelled":
            self.stats["cancelled"] += 1
        job.stats.update(self.last)
        # The reply is complete: the client has it before the cache is updated (the
        # next job waits for that, in order).
        job.emit(Event("done", reason=reason, stop_sequence=stop_seq, completion_tokens=n_gen))
        keep, after = len(live.tokens), {}
        if job.rerender is not None and reason != "cancelled":
            from .cache import common_prefix

            # The prompt itself is always kept (a retry, or another tool sending the
            # same request, starts from it), and the reply as far as the conversation
            # re-rendered with it agrees with what the model processed. The re-render
            # may differ inside the prompt (a generation prompt that opens a thinking
            # block the re-rendered reply has none of) or fail (a template that
            # refuses to render the reply).
            keep = min(len(live.tokens), len(prompt))
            try:
                keep = max(keep, common_prefix(live.tokens, job.rerender(text)))
            except Exception as e:
                after["rerender_error"] = f"{type(e).__name__}: {e}"
        try:
            self.cache.finish(live, keep)
        except BaseException:
            self.cache.discard(live)
            raise
        # A new dict, so that /health (another thread) never reads one being changed.
        self.last = dict(self.last, kept_tokens=keep, **after)

    def _decode(self, job: Job, live: Any, prefilled: bool):
        """The decode loop; returns (reason, stop sequence, tokens, reply text)."""
        if not prefilled or job.cancelled.is_set():
            return "cancelled", None, 0, ""
        model, tok, gen, s = self.model, self.tokenizer, self.generator, job.sampling
        if s.seed is not None:
            mx.random.seed(s.seed)
        sampler = gen.make_sampler(s)
        processors = _processors(s, max(s.max_tokens, 1))
        detok = tok.detokenizer
        stops = _StopText(s.stop)
        eos = set(tok.eos_token_ids)
        y = job.prompt[-1]
        history: List[int] = []
        n_gen, reason, stop_seq = 0, "length", None
        think_start = tuple(getattr(tok, "think_start_tokens", None) or ())
        think_end = tuple(getattr(tok, "think_end_tokens", None) or ())
        thinking, thought, forced = job.thinking_open, 0, []
        while n_gen < s.max_tokens:
            if job.cancelled.is_set():
                reason = "cancelled"
                break
            logits = model(mx.array([[y]]), cache=live.caches)[:, -1, :]
            live.advance([y])
            if processors:
                hist = mx.array(history, dtype=mx.int32)
                for p in processors:
                    logits = p(hist, logits)
            logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
            y = gen.sample(logprobs, sampler)
            if not forced and thinking and think_end and s.thinking_budget is not None \
                    and thought >= s.thinking_budget:
                # The thinking budget is spent: the block closes here.
                forced = list(think_end)
            if forced:
                y = forced.pop(0)
            n_gen += 1
            if y in eos:
                reason = "stop"
                break
            history.append(y)
            if thinking:
                thought += 1
            if think_start and tuple(history[-len(think_start):]) == think_start:
                thinking = True
            elif think_end and tuple(history[-len(think_end):]) == think_end:
                thinking = False
            detok.add_token(y)
            out, stop_seq = stops.step(detok.text)
            if out:
                job.emit(Event("text", text=out))
            if stop_seq is not None:
                reason = "stop"
                break
        detok.finalize()
        text = detok.text
        if stop_seq is None:
            out = stops.rest(text)
            if out:
                job.emit(Event("text", text=out))
        else:
            text = text[: stops.sent]
        return reason, stop_seq, n_gen, text

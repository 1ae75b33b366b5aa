"""The manager's feeds in a child process of their own (``kmedic-feeds``).

At fleet scale the two feeds decode tens of thousands of records a second (docs/bench.md, "the
real manager at fleet scale": 0.4 s of CPU a second); in the manager's process they hold the
interpreter lock the cycle needs, and a cycle's work took three to five times its CPU. Here a
child process (``python -m manager.monitor.feed_process``) tails and decodes both topics in a
``FeedPair`` of its own, and the manager asks it for a copy (``take``) or the feeds' status
over a pipe: one byte asked, one pickle answered, its numpy columns sent beside it as raw
buffers (pickle protocol 5) that the manager reads straight into the arrays' memory.

The child runs at the manager's CPU priority. Lowered, it kept the cycle waiting for its
copy: the thread that answers needs the child's interpreter lock, which a decoding thread at
nice 10 holds through a whole record and on a busy host gets the CPU to give back only late
(0.2-2.0 s of a cycle's wall time for a copy of 0.05-0.1 s of CPU, at fleet scale, with the
decoding threads alone at nice 10; docs/bench.md).

The child ends when its stdin closes, so it never outlives the manager however the manager
ends. A child that has exited, or that does not answer within ``answer_timeout_s``, is
replaced (at most every ``RESPAWN_EVERY_S``); until the new one answers, ``take`` returns the
last copy taken (its records carry their own times, so they age as they would) and ``status``
says the feeds are not caught up, naming what happened.

Topic ids (kmedic.replica_columns: ``TOPIC_IDS``) are per process: a copy comes with the child's
table of names, and its keys are translated into the manager's ids as it is adopted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import replace
from typing import IO, Any

import numpy as np

from kmedic.heap import hand_back_freed_memory
from kmedic.logging import get_logger, setup_logging
from kmedic.replica_columns import TOPIC_IDS
from kmedic.thread_names import name_this_thread
from manager.monitor.feed_pair import FeedCopy, FeedPair, FeedSpec
from manager.monitor.feeds import FeedStatus

log = get_logger(__name__)

TAKE = b"T"
STATUS = b"S"
_LENGTH = struct.Struct(">Q")
_HEAD = struct.Struct(">QI")  # an answer's pickle length, its buffers' count
ANSWER_TIMEOUT_S = 20.0
RESPAWN_EVERY_S = 5.0
PROCESS_NAME = "kmedic-feeds"


class FeedProcessError(Exception):
    """The child did not answer as it should (gone, silent, or answered garbage)."""


class ProcessFeeds:
    """The manager's side: ``take`` and ``status`` as ``FeedPair`` gives them, answered by the
    child."""

    def __init__(
        self,
        spec: FeedSpec,
        *,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
        command: list[str] | None = None,
    ) -> None:
        self._spec = spec
        self._timeout_s = answer_timeout_s
        self._command = command or [sys.executable, "-m", __name__]
        self._lock = threading.Lock()  # one question at a time
        self._child: subprocess.Popen[bytes] | None = None
        self._spawned_at = float("-inf")
        self._last = FeedCopy.empty()
        self._last_status: list[FeedStatus] = [
            FeedStatus(spec.stats_topic, 0, 0, 0, False, None),
            FeedStatus(spec.loads_topic, 0, 0, 0, False, None),
        ]
        self._trouble: str | None = None  # what happened to the last child, until one answers
        self._replaced_because: str | None = None  # until its successor has caught up
        self.spawned = 0

    def start(self) -> ProcessFeeds:
        with self._lock:
            self._spawn()
        return self

    def stop(self) -> None:
        with self._lock:
            self._end_child(wait_s=15.0)

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None else None

    def take(self) -> FeedCopy:
        answer = self._ask(TAKE)
        if answer is None:
            return self._last
        names, copy = answer
        self._last = adopted(names, copy)
        return self._last

    def status(self) -> list[FeedStatus]:
        answer: list[FeedStatus] | None = self._ask(STATUS)
        if answer is None:
            return [
                FeedStatus(s.topic, s.keys, s.records, s.bad_records, False, self._trouble)
                for s in self._last_status
            ]
        self._last_status = answer
        if all(s.caught_up for s in answer):
            self._replaced_because = None
        elif self._replaced_because is not None:  # a new child catching up: say why
            return [
                s if s.last_error else replace(s, last_error=self._replaced_because) for s in answer
            ]
        return list(answer)

    def _ask(self, question: bytes) -> Any:
        with self._lock:
            child = self._child
            if child is None or child.poll() is not None:
                if child is not None and self._trouble is None:
                    self._trouble = f"the feed process exited (code {child.returncode})"
                    log.warning("feed_process_exited", code=child.returncode)
                if time.monotonic() - self._spawned_at >= RESPAWN_EVERY_S:
                    self._end_child(wait_s=0)
                    self._replaced_because = self._trouble
                    self._spawn()
                return None
            try:
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write(question)
                child.stdin.flush()
                answer = _read_answer(child.stdout, self._timeout_s)
            except (OSError, EOFError, FeedProcessError, pickle.UnpicklingError) as exc:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=1.0)  # a pipe that closed: the child has exited
                if child.returncode is not None:
                    self._trouble = f"the feed process exited (code {child.returncode})"
                else:
                    self._trouble = f"the feed process did not answer: {exc}"
                log.warning(
                    "feed_process_unanswered", error=self._trouble, cause=str(exc), pid=child.pid
                )
                self._end_child(wait_s=0)
                return None
            self._trouble = None
            return answer

    def _spawn(self) -> None:
        self._spawned_at = time.monotonic()
        self.spawned += 1
        child = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert child.stdin is not None
        root = logging.getLogger()
        handler_json = _renders_json(root)
        setup = pickle.dumps((self._spec, logging.getLevelName(root.level), handler_json))
        try:
            child.stdin.write(_LENGTH.pack(len(setup)) + setup)
            child.stdin.flush()
        except OSError as exc:
            log.warning("feed_process_unstarted", error=str(exc))
        self._child = child
        log.info("feed_process_started", pid=child.pid)

    def _end_child(self, *, wait_s: float) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        with contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()  # the child's end: it stops its consumers and exits
        if wait_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=wait_s)
        if child.poll() is None:
            child.kill()
            child.wait()
        with contextlib.suppress(OSError):
            assert child.stdout is not None
            child.stdout.close()


def _renders_json(root: logging.Logger) -> bool | None:
    """Whether the manager's log lines are JSON (the child's then are too); None: unknown."""
    for handler in root.handlers:
        renderer = getattr(getattr(handler, "formatter", None), "processors", None)
        if renderer:
            return type(renderer[-1]).__name__ == "JSONRenderer"
    return None


def _read_answer(stream: IO[bytes], timeout_s: float) -> Any:
    """One answer: its pickle's and its buffers' lengths, the pickle, each buffer read into
    memory of its own that the unpickled arrays then use (no second copy)."""
    deadline = time.monotonic() + timeout_s
    fd = stream.fileno()
    head = _read_into(fd, bytearray(_HEAD.size), deadline)
    length, count = _HEAD.unpack(head)
    sizes = struct.unpack(f">{count}Q", _read_into(fd, bytearray(8 * count), deadline))
    meta = _read_into(fd, bytearray(length), deadline)
    buffers = [_read_into(fd, bytearray(size), deadline) for size in sizes]
    return pickle.loads(meta, buffers=buffers)


def _write_answer(out: IO[bytes], answer: Any) -> None:
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(answer, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    out.write(_HEAD.pack(len(meta), len(raws)))
    out.write(struct.pack(f">{len(raws)}Q", *(r.nbytes for r in raws)))
    out.write(meta)
    for raw in raws:
        out.write(raw)
    out.flush()


def _read_into(fd: int, buf: bytearray, deadline: float) -> bytearray:
    view = memoryview(buf)
    done = 0
    while done < len(buf):
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise FeedProcessError(f"no answer within the timeout ({done} of {len(buf)} bytes)")
        n = os.readv(fd, [view[done:]])
        if not n:
            raise FeedProcessError(f"the pipe closed after {done} of {len(buf)} bytes")
        done += n
    return buf


def adopted(names: list[str], copy: FeedCopy) -> FeedCopy:
    """A child's copy with its keys in this process's topic ids (``names[i]``: the child's
    topic id ``i``)."""
    ids = TOPIC_IDS.of(names)
    if np.array_equal(ids, np.arange(len(ids))):
        return copy  # the same ids in both processes: nothing to translate
    agents = {b: replace(v, replicas=v.replicas.rekeyed(ids)) for b, v in copy.agents.items()}
    return FeedCopy(agents, copy.loads.rekeyed(ids))


def _serve(spec: FeedSpec, inp: IO[bytes], out: IO[bytes]) -> None:
    pair = FeedPair(spec).start()
    try:
        while question := inp.read(1):
            answer: Any
            if question == TAKE:
                copy = pair.take()
                answer = (TOPIC_IDS.names(), copy)
            elif question == STATUS:
                answer = pair.status()
            else:
                raise SystemExit(f"kmedic-feeds: unknown question {question!r}")
            _write_answer(out, answer)
    finally:
        pair.stop()


def main() -> None:
    """The child: its setup, then answers until its stdin closes."""
    out = os.fdopen(os.dup(1), "wb")  # the answers' pipe
    os.dup2(2, 1)  # anything printed goes to the log, never into an answer
    inp = sys.stdin.buffer
    (length,) = _LENGTH.unpack(inp.read(_LENGTH.size) or b"\0" * 8)
    if not length:
        raise SystemExit("kmedic-feeds: started without its setup (it is started by a manager)")
    spec, level, json_logs = pickle.loads(inp.read(length))
    hand_back_freed_memory()  # kmedic.heap: a burst's blocks are not kept after it
    setup_logging(level, json=json_logs)
    name_this_thread(PROCESS_NAME)
    with contextlib.suppress(BrokenPipeError):  # the manager has gone
        _serve(spec, inp, out)


if __name__ == "__main__":
    main()

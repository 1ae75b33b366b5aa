"""A role's long-lived threads carry their names into the operating system, so `top -H` says
which one spends the CPU (the fleet bench reads the feeds' CPU by them)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kmedic.thread_names import named_thread


def test_the_os_knows_the_threads_name_cut_to_15_bytes() -> None:
    seen: list[str] = []
    ready = threading.Event()

    def body() -> None:
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip())
        ready.set()

    thread = named_thread(body, "feed-kmedic.brokerstats")
    thread.start()
    assert ready.wait(10), "the thread never ran"
    thread.join(10)
    assert thread.name == "feed-kmedic.brokerstats" and thread.daemon
    assert seen == ["feed-kmedic.bro"]
    assert Path(f"/proc/{os.getpid()}/comm").read_text().strip() != "feed-kmedic.bro"  # only it

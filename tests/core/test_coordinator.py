"""Calls a background thread hands to the coordinator: run on the coordinator's thread, in order,
their results and exceptions handed back; once closed, a queued or new call raises in its thread."""

from __future__ import annotations

import threading
import time

import pytest

from hubsurvey.core.coordinator import Coordinated, CoordinatorGone, OnCoordinator


class Recorder:
    def __init__(self) -> None:
        self.threads: list[str] = []
        self.values: list[int] = []

    def add(self, value: int) -> int:
        self.threads.append(threading.current_thread().name)
        self.values.append(value)
        return value * 2

    def fail(self) -> None:
        raise ValueError("bad row")


def test_calls_from_a_thread_run_on_the_coordinator_in_order_with_results_and_errors():
    coordinator, target = OnCoordinator(), Recorder()
    store = Coordinated(target, coordinator)
    got: list[object] = []

    def background() -> None:
        got.extend(store.add(i) for i in range(3))
        try:
            store.fail()
        except ValueError as e:
            got.append(str(e))

    thread = threading.Thread(target=background, name="background")
    thread.start()
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        coordinator.run_pending(0.05)
    thread.join(1)
    assert got == [0, 2, 4, "bad row"]
    assert target.values == [0, 1, 2]
    assert set(target.threads) == {threading.current_thread().name} != {"background"}


def test_a_call_waiting_when_the_coordinator_closes_raises_in_its_thread_and_later_calls_too():
    coordinator, target = OnCoordinator(), Recorder()
    store = Coordinated(target, coordinator)
    raised: list[BaseException] = []

    def background() -> None:
        for _ in range(2):
            try:
                store.add(1)
            except CoordinatorGone as e:
                raised.append(e)

    thread = threading.Thread(target=background)
    thread.start()
    time.sleep(0.2)  # its first call is queued, never run
    coordinator.close()
    thread.join(5)
    assert not thread.is_alive() and len(raised) == 2 and target.values == []
    assert coordinator.run_pending(0.01) == 0


def test_only_methods_are_reachable_from_another_thread():
    store = Coordinated(Recorder(), OnCoordinator())
    with pytest.raises(AttributeError, match="only the methods"):
        _ = store.values

"""One look for the length of a command: the cyclic collector is paused while it is open
(a warm plan at 5,000 images spent a fifth of its time in collections that freed nothing)
and resumes as it was when the last look closes (issue 27)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from kura.dataset.onelook import current_look, one_look


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:  # as it was before the test, whatever the test left
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_in_a_look_and_resumes_after(collector_enabled: None) -> None:
    with one_look():
        assert not gc.isenabled()
        with one_look():  # an enclosing look is reused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert current_look() is None


def test_the_collector_resumes_after_a_look_that_raised(collector_enabled: None) -> None:
    with pytest.raises(RuntimeError), one_look():
        raise RuntimeError("inspection failed")
    assert gc.isenabled()


def test_a_collector_disabled_before_the_look_stays_disabled(collector_enabled: None) -> None:
    gc.disable()
    with one_look():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_looks_in_two_threads_resume_the_collector_only_when_both_closed(
    collector_enabled: None,
) -> None:
    opened, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with one_look():
            opened.set()
            release.wait(10)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(10)
    with one_look():
        assert current_look() is not None
    assert not gc.isenabled(), "the other thread's look is still open"
    release.set()
    thread.join(10)
    assert seen == [False]
    assert gc.isenabled()

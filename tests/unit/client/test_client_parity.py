"""The sync and async clients are one API: every public method of one is on the other with the same
parameters and return type (async iterators for iterators), so a change to one that forgets the other
fails here. Their bodies share the request and reply logic in client/calls.py."""

from __future__ import annotations

import inspect
import typing

from judge_service.client import AsyncJudgeClient, JudgeClient

# The two differ only where Python does: how they close, and the sleep they wait with (injected by tests).
SPELLED_APART = {"close": "aclose", "__enter__": "__aenter__", "__exit__": "__aexit__"}
SLEEP = ("sleep", "Callable[[float], None]", "Callable[[float], Awaitable[None]]")


# Sync spellings and their async twins, in annotations.
ASYNC_TWINS = (
    ("Iterator", "AsyncIterator"),
    ("JudgeClient", "AsyncJudgeClient"),
    ("httpx.BaseTransport", "httpx.AsyncBaseTransport"),
    ("httpx.Client", "httpx.AsyncClient"),
)


def asyncified(annotation: object) -> str:
    text = str(annotation)
    for sync, twin in ASYNC_TWINS:
        text = text.replace(sync, twin).replace(f"Async{twin}", twin)
    return text


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") or name in {"__init__", *SPELLED_APART, *SPELLED_APART.values()}
    }


def test_the_two_clients_have_the_same_methods() -> None:
    sync = public_methods(JudgeClient)
    async_ = public_methods(AsyncJudgeClient)
    assert {SPELLED_APART.get(name, name) for name in sync} == set(async_)


def test_each_method_takes_the_same_parameters_and_returns_the_same_type() -> None:
    sync = public_methods(JudgeClient)
    async_ = public_methods(AsyncJudgeClient)
    for name, signature in sync.items():
        if name in SPELLED_APART:
            continue
        other = async_[name]
        assert list(signature.parameters) == list(other.parameters), name
        for parameter, twin in zip(signature.parameters.values(), other.parameters.values(), strict=True):
            if parameter.name == SLEEP[0]:
                assert (str(parameter.annotation), str(twin.annotation)) == SLEEP[1:]
                continue
            assert (parameter.kind, parameter.default, asyncified(parameter.annotation)) == (
                twin.kind,
                twin.default,
                str(twin.annotation),
            ), f"{name}({parameter.name})"
        assert asyncified(signature.return_annotation) == str(other.return_annotation), name


def test_async_methods_are_coroutines_or_async_iterators() -> None:
    for name, member in inspect.getmembers(AsyncJudgeClient, inspect.isfunction):
        if name.startswith("_") and name not in ("__aenter__", "__aexit__"):
            continue
        if name == "__init__":
            continue
        assert inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member), name
        hints = typing.get_type_hints(member)
        assert "return" in hints, name

"""Schemathesis hooks for deploy/api-check.sh (loaded through SCHEMATHESIS_HOOKS).

Capping `wait`: the OpenAPI file keeps the contract's range for `wait` (0..300 seconds), so
schemathesis generates waits of up to five minutes; against an intent that exists (the stateful
phase follows Location headers to real ids) each would hold its request open that long, and
POST /v1/intents/{id}/cancel waits 10 s when `wait` is absent. Generated values cannot be bounded
from the command line, so `before_call` (which runs in every phase: examples, coverage, fuzzing,
stateful) lowers every in-range wait above 1 s to 1 s, and gives cancel `wait=1` when it has
none, just before each request is sent. Values outside 0..300 and values that are not numbers
are left alone: they are the negative cases, answered 400 at once.

Served types: a generated type name is almost never one a worker serves, so nearly every
submission would end 404 and the operations that follow a submission (read, wait, answer,
confirm, deny, cancel) would only meet unknown ids. So every other submission is sent to a type
the Hairdressers worker serves (API_CHECK_TYPES, default SendMessage,OrderSoup,SendPayment), with
its generated parameters: most fail resolution or validation in the worker, some succeed, and the
stateful phase follows their ids.

Counting: `after_call` and `after_network_error` count the requests sent for test cases; the
count is written at exit to the file named by API_CHECK_COUNT_FILE, when it is set.
"""

import atexit
import math
import os
import threading

import schemathesis

MAX_WAIT = 1

_lock = threading.Lock()
_sent = 0


def _capped(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
    else:
        return value
    if math.isfinite(number) and MAX_WAIT < number <= 300:
        return MAX_WAIT
    return value


def _cap_wait(case):
    is_cancel = case.method.upper() == "POST" and case.operation.path.endswith("/cancel")
    query = case.query
    if query is None:
        if is_cancel:
            case.query = {"wait": MAX_WAIT}
        return
    if not isinstance(query, dict):
        return
    if "wait" in query:
        value = query["wait"]
        query["wait"] = [_capped(item) for item in value] if isinstance(value, list) else _capped(value)
    elif is_cancel:
        query["wait"] = MAX_WAIT


_TYPES = [name for name in os.environ.get("API_CHECK_TYPES", "SendMessage,OrderSoup,SendPayment").split(",") if name]
_submissions = 0


def _serve_type(case):
    global _submissions
    if case.method.upper() != "POST" or case.operation.path != "/v1/intents/{typeOrId}" or not _TYPES:
        return
    with _lock:
        _submissions += 1
        turn = _submissions
    if turn % 2 == 0 and isinstance(case.path_parameters, dict):
        case.path_parameters["typeOrId"] = _TYPES[(turn // 2) % len(_TYPES)]


def _count():
    global _sent
    with _lock:
        _sent += 1


@atexit.register
def _write_count():
    path = os.environ.get("API_CHECK_COUNT_FILE")
    if path:
        with open(path, "w") as file:
            file.write(f"{_sent}\n")


if schemathesis.__version__.split(".")[0] == "3":
    # 3.x: before_call(context, case); after_call(context, case, response).
    @schemathesis.hook("before_call")
    def _before_call_v3(context, case):
        _cap_wait(case)
        _serve_type(case)

else:
    # 4.x: before_call(context, case, kwargs).
    @schemathesis.hook("before_call")
    def _before_call(context, case, kwargs):
        _cap_wait(case)
        _serve_type(case)

    @schemathesis.hook("after_network_error")
    def _after_network_error(context, case, request):
        _count()


@schemathesis.hook("after_call")
def _after_call(context, case, response):
    _count()

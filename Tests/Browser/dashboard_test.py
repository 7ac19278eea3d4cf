#!/usr/bin/env python3
"""The intent-gateway dashboard in a real browser (Debian's headless Chromium, through Selenium 4).

Against a fresh gateway (its broker virtual host holds no intents yet; a Hairdressers worker and the
status recorder run), it submits a known workload through the HTTP API, then checks that the dashboard
shows it: the counts by state and by type, the failures, the question of the intent that waits (and
answers it by clicking), a dead letter (and requeues it by clicking), one intent's page with its
history, and what a producer's token may see.

    dashboard_test.py --url http://127.0.0.1:8080 --token OPERATOR_TOKEN [--producer-token TOKEN]
                      [--dead-id ID | --amqp-url URL] [--screenshot dashboard.png]

--dead-id names a dead letter the caller published to the `intents.dead` exchange before the test
(a SendMessage envelope whose requeued run succeeds); without it, --amqp-url lets the test publish
one itself with `amqp-publish`; with neither, the dead-letter checks are skipped (and said so).

Standard library and selenium only. Every wait is a WebDriverWait (or an API long-poll) with a
generous timeout; no timing is asserted. Exits 0 when every check held, else prints those that did not
and exits 1.
"""

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import (
    JavascriptException,
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

STATES = ["queued", "scheduled", "inProgress", "needsInput", "cancelRequested", "success", "failure", "canceled"]
TERMINAL = {"success", "failure", "canceled"}
TIMEOUT = 60.0


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def check(self, held, words, seen=None):
        if held:
            self.passed += 1
            print(f"  ok    {words}", flush=True)
        else:
            detail = f" (seen: {seen})" if seen is not None else ""
            self.failed.append(words + detail)
            print(f"  FAIL  {words}{detail}", flush=True)
        return held


checks = Checks()


# ── the HTTP API ─────────────────────────────────────────────────────────────────────────────


class Api:
    def __init__(self, base, token):
        self.base = base.rstrip("/")
        self.token = token

    def call(self, method, path, body=None, timeout=TIMEOUT + 30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            value = json.loads(raw) if raw else None
        except ValueError:
            value = {"unreadable": raw[:200].decode(errors="replace")}
        return status, value

    def submit(self, type_name, id, parameters):
        return self.call("POST", f"/v1/intents/{type_name}?wait=30", {"id": id, "parameters": parameters})

    def status(self, id, wait=None):
        query = f"?wait={wait}" if wait is not None else ""
        return self.call("GET", f"/v1/intents/{urllib.parse.quote(id, safe='')}{query}")

    def stats(self):
        return self.call("GET", "/v1/stats")

    def settle(self, id, done, timeout=TIMEOUT):
        """Long-polls the intent until done(status) holds; returns the last status seen."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            asked = time.monotonic()
            code, value = self.status(id, wait=30)
            if code == 200:
                last = value
                if done(value):
                    return value
            else:
                last = {"http": code, "body": value}
            if time.monotonic() - asked < 0.2:
                # the long-poll answered at once (the store still shows the state before the change): a short pause
                time.sleep(0.25)
        return last


def ended(status):
    """Terminal, and not a dead letter waiting to be requeued."""
    return bool(status) and status.get("terminal") and (status.get("response") or {}).get("code") != "deadLettered"


def describe(status):
    if not isinstance(status, dict):
        return repr(status)
    response = status.get("response") or {}
    return f"{status.get('state')} {response.get('code', '')} {response.get('message', '')}".strip()


# ── the browser ──────────────────────────────────────────────────────────────────────────────


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


SNAPSHOT = r"""
const text = (node, selector) => {
  const found = selector ? node.querySelector(selector) : node;
  return found ? found.textContent.trim() : null;
};
const all = (selector, root) => Array.from((root || document).querySelectorAll(selector));
const visible = (selector) => { const n = document.querySelector(selector); return !!n && !n.closest('[hidden]'); };
return {
  counts: Object.fromEntries(arguments[0].map((s) => [s, text(document, '#count-' + s)])),
  byType: Object.fromEntries(all('#counts-by-type tr[data-type]').map((row) => [row.dataset.type,
    Object.fromEntries(all('td[data-state]', row).map((cell) => [cell.dataset.state, cell.textContent.trim()]))])),
  failures: all('#failures .failure').map((n) => ({id: n.dataset.id, type: text(n, '.type'), code: text(n, '.code'),
    message: text(n, '.message'), time: text(n, '.time')})),
  waiting: all('#waiting .waiting-intent').map((n) => ({id: n.dataset.id, text: text(n),
    prompts: all('.prompt', n).map((p) => p.textContent.trim()),
    options: all('button.option', n).map((b) => b.textContent.trim())})),
  dead: all('#dead .dead-letter').map((n) => ({id: n.dataset.id, result: text(n, '.result')})),
  deadNotice: visible('#dead .notice') ? text(document, '#dead .notice') : null,
  recent: all('#recent .recent-intent').map((n) => n.dataset.id),
  recentLinks: all('#recent .recent-intent a.intent-link').map((a) => a.getAttribute('href')),
  tokenForm: visible('#token-panel'),
  tokenMessage: text(document, '#token-message'),
  dashboard: visible('#dashboard'),
  live: text(document, '#live'),
  broker: text(document, '#health-broker'),
  recorder: text(document, '#health-recorder'),
  chartEvents: (document.getElementById('chart') || {dataset: {}}).dataset.events,
  chartIsCanvas: (document.getElementById('chart') || {}).tagName === 'CANVAS',
  storedToken: sessionStorage.getItem('intentqueue.token'),
};
"""

INTENT_SNAPSHOT = r"""
const panel = document.getElementById('intent');
if (!panel || panel.closest('[hidden]')) return null;
const text = (selector) => { const n = panel.querySelector(selector); return n ? n.textContent.trim() : null; };
return {
  id: panel.dataset.id,
  field: Object.fromEntries(Array.from(panel.querySelectorAll('[data-field]')).map((n) => [n.dataset.field, n.textContent.trim()])),
  view: text('pre.view'),
  times: Array.from(panel.querySelectorAll('tr[data-time]')).map((n) => n.dataset.time),
  parameters: text('pre.parameters'),
  turns: Array.from(panel.querySelectorAll('.history .turn')).map((n) => ({
    turn: n.dataset.turn,
    question: (n.querySelector('.question') || {}).textContent || '',
    answer: (n.querySelector('.answer') || {}).textContent || ''})),
};
"""


class Page:
    def __init__(self, driver):
        self.driver = driver

    def snapshot(self):
        return self.driver.execute_script(SNAPSHOT, STATES)

    def intent(self):
        return self.driver.execute_script(INTENT_SNAPSHOT)

    def wait(self, words, probe, timeout=TIMEOUT):
        """Waits until probe(driver) returns (True, seen); records the check either way; returns whether it held."""
        last = {"seen": None}

        def condition(driver):
            held, seen = probe(driver)
            last["seen"] = seen
            return held

        try:
            WebDriverWait(
                self.driver,
                timeout,
                poll_frequency=0.25,
                ignored_exceptions=(StaleElementReferenceException, NoSuchElementException, JavascriptException),
            ).until(condition)
            return checks.check(True, words)
        except TimeoutException:
            return checks.check(False, f"{words} (within {timeout:.0f} s)", last["seen"])

    def shows(self, words, probe, timeout=TIMEOUT):
        """Waits until probe(snapshot) returns (True, seen), the snapshot being the dashboard's as SNAPSHOT reads it."""
        return self.wait(words, lambda _: probe(self.snapshot()), timeout)

    def element(self, css, where=None, attribute=None, value=None):
        root = where or self.driver
        for node in root.find_elements(By.CSS_SELECTOR, css):
            if attribute is None or node.get_attribute(attribute) == value:
                return node
        return None

    def open(self, url):
        self.driver.get(url)


def expected_counts(baseline, delta):
    out = {state: int(baseline.get(state, 0)) + int(delta.get(state, 0)) for state in STATES}
    return {state: str(n) for state, n in out.items()}


def counts_probe(page, expected):
    def probe(_):
        snapshot = page.snapshot()
        return snapshot["counts"] == expected, snapshot["counts"]

    return probe


# ── the test ─────────────────────────────────────────────────────────────────────────────────


def publish_dead_letter(amqp_url, id, recipient):
    tool = shutil.which("amqp-publish")
    if not tool:
        return "amqp-publish is not installed"
    envelope = {"version": 1, "id": id, "type": "SendMessage", "parameters": {"recipients": [recipient], "content": "back from the dead"}}
    result = subprocess.run(
        [tool, f"--url={amqp_url}", "-e", "intents.dead", "-r", "SendMessage", "-p", "-C", "application/json", "-b", json.dumps(envelope)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return None if result.returncode == 0 else f"amqp-publish exited {result.returncode}: {result.stderr.strip()}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the gateway, e.g. http://127.0.0.1:8080")
    parser.add_argument("--token", required=True, help="an operator token")
    parser.add_argument("--producer-token", help="a producer token that submitted nothing (optional)")
    parser.add_argument("--dead-id", help="the id of a dead letter published before the test (a SendMessage that can succeed)")
    parser.add_argument("--amqp-url", help="without --dead-id: publish a dead letter with amqp-publish to this broker")
    parser.add_argument("--recipient", default="Alice Smith", help="a hairdresser the messages go to (default: Alice Smith)")
    parser.add_argument("--screenshot", default="dashboard.png", help="where the screenshot of the dashboard goes")
    args = parser.parse_args()

    base = args.url.rstrip("/")
    api = Api(base, args.token)
    prefix = f"dash-{secrets.token_hex(4)}"
    print(f"dashboard test: {base}, ids {prefix}-*", flush=True)

    # ── 0. the dead letter, before anything is counted ──
    dead_id = args.dead_id
    if not dead_id and args.amqp_url:
        dead_id = f"{prefix}-dead"
        problem = publish_dead_letter(args.amqp_url, dead_id, args.recipient)
        if not checks.check(problem is None, f"published dead letter {dead_id} to intents.dead", problem):
            dead_id = None
    if dead_id:
        print("0. the dead letter is recorded", flush=True)
        status = api.settle(dead_id, lambda s: (s.get("response") or {}).get("code") == "deadLettered", timeout=TIMEOUT)
        dead_ok = checks.check(
            bool(status) and (status.get("response") or {}).get("code") == "deadLettered",
            f"GET /v1/intents/{dead_id}: failure/deadLettered",
            describe(status),
        )
        if not dead_ok:
            dead_id = None
    else:
        print("0. no --dead-id and no --amqp-url: the dead-letter checks are skipped", flush=True)

    code, stats = api.stats()
    if not checks.check(code == 200 and isinstance(stats, dict), "GET /v1/stats answers", (code, stats)):
        stats = {}
    baseline = dict((stats or {}).get("byState") or {})
    baseline_types = (stats or {}).get("byType") or {}
    if any(baseline.values()):
        print(f"   before the workload: {baseline} (the expected counts start from there)", flush=True)

    # ── 1. the workload ──
    print("1. submit the workload through the API", flush=True)
    messages = [f"{prefix}-message-{n}" for n in range(1, 4)]
    soups = [f"{prefix}-soup-{n}" for n in range(1, 3)]
    jeff = f"{prefix}-jeff"
    for n, id in enumerate(messages, 1):
        code, status = api.submit("SendMessage", id, {"recipients": [args.recipient], "content": f"hello {n}"})
        checks.check(code == 200 and status.get("state") == "success", f"SendMessage {id} to {args.recipient}: success", (code, describe(status)))
    for id in soups:
        code, status = api.submit("OrderSoup", id, {"soup": "Minestrone", "quantity": 1})
        checks.check(code == 200 and status.get("state") == "failure", f"OrderSoup {id} (Minestrone): failure", (code, describe(status)))
    code, status = api.submit("SendMessage", jeff, {"recipients": ["Jeff"], "content": "Can you do 3pm?"})
    checks.check(code == 200 and status.get("state") == "needsInput", f"SendMessage {jeff} to Jeff: needsInput", (code, describe(status)))
    question = next(
        (r for r in (status or {}).get("resolutions") or [] if r.get("parameter") == "recipients" and r.get("outcome") == "disambiguation"),
        None,
    )
    checks.check(
        question is not None and question.get("index") == 0 and {"Jeff Baker", "Jeff Chen"} <= set(map(str, question.get("options") or [])),
        "its question: recipients[0] is Jeff Baker or Jeff Chen",
        question,
    )

    expected = expected_counts(baseline, {"success": 3, "failure": 2, "needsInput": 1})

    def typed(type_name, state, delta):
        return str(int((baseline_types.get(type_name) or {}).get(state, 0)) + delta)

    driver = browser()
    page = Page(driver)
    jeff_answered = False
    try:
        # ── 2. the counts ──
        print("2. the dashboard shows the counts", flush=True)
        page.open(f"{base}/#token={urllib.parse.quote(args.token, safe='')}")
        page.shows("the dashboard shows, not the token form", lambda s: (s["dashboard"] and not s["tokenForm"], s))
        checks.check("token=" not in driver.current_url, "the token is taken out of the address bar", driver.current_url)
        checks.check(page.snapshot()["storedToken"] == args.token, "the token is kept in sessionStorage")
        page.wait(f"#count-<state> shows {expected}", counts_probe(page, expected))

        want_types = {
            ("SendMessage", "success"): typed("SendMessage", "success", 3),
            ("SendMessage", "needsInput"): typed("SendMessage", "needsInput", 1),
            ("OrderSoup", "failure"): typed("OrderSoup", "failure", 2),
        }

        def by_type(_):
            table = page.snapshot()["byType"]
            seen = {f"{t}/{s}": (table.get(t) or {}).get(s) for (t, s) in want_types}
            return all((table.get(t) or {}).get(s) == n for (t, s), n in want_types.items()), seen

        page.wait(f"#counts-by-type: {', '.join(f'{t} {s} {n}' for (t, s), n in want_types.items())}", by_type)

        def failures(_):
            listed = page.snapshot()["failures"]
            ours = [f for f in listed if f["id"] in soups]
            held = len(ours) == 2 and all(f["type"] == "OrderSoup" and f["code"] not in (None, "", "—") and f["time"] for f in ours)
            return held, ours or listed

        page.wait("#failures lists the 2 OrderSoup failures, with type, code and time", failures)
        soup_failures = [f for f in page.snapshot()["failures"] if f["type"] == "OrderSoup"]
        checks.check(
            len(soup_failures) == 2 + int((baseline_types.get("OrderSoup") or {}).get("failure", 0)),
            "#failures lists as many OrderSoup failures as there are",
            len(soup_failures),
        )

        def recent(_):
            snapshot = page.snapshot()
            ids = snapshot["recent"]
            links = snapshot["recentLinks"]
            held = all(id in ids for id in messages + soups + [jeff]) and f"#/intents/{jeff}" in links
            return held, ids[:10]

        page.wait("#recent lists the workload, each a link to its page", recent)
        page.shows(
            "the header shows the broker and the recorder up",
            lambda s: (s["broker"] == "broker up" and s["recorder"] == "recorder up", (s["broker"], s["recorder"])),
        )
        page.shows("the live stream is connected", lambda s: (s["live"] == "live", s["live"]))
        page.shows(
            "#chart is a canvas counting the intents ended in the last 5 minutes",
            lambda s: (s["chartIsCanvas"] and int(s["chartEvents"] or 0) >= 5, s["chartEvents"]),
        )

        # ── 3. answer the question by clicking ──
        print("3. answer the Jeff question from #waiting", flush=True)

        def waiting(_):
            item = next((w for w in page.snapshot()["waiting"] if w["id"] == jeff), None)
            held = (
                item is not None
                and "Jeff Baker" in item["options"]
                and "Jeff Chen" in item["options"]
                and any("Jeff Baker" in p and "Jeff Chen" in p for p in item["prompts"])
            )
            return held, item

        if page.wait(f"#waiting shows {jeff} with its question in words and an option button per hairdresser", waiting):
            item = page.element("#waiting .waiting-intent", attribute="data-id", value=jeff)
            button = next((b for b in item.find_elements(By.CSS_SELECTOR, "button.option") if b.text.strip() == "Jeff Baker"), None)
            if checks.check(button is not None, "a button.option reads 'Jeff Baker'"):
                button.click()
                jeff_answered = True
        if jeff_answered:
            def disabled(_):
                node = page.element("#waiting .waiting-intent", attribute="data-id", value=jeff)
                return node is not None and all(not b.is_enabled() for b in node.find_elements(By.CSS_SELECTOR, "button")), None

            page.wait("the buttons are disabled once clicked", disabled)
            status = api.settle(jeff, ended)
            checks.check(bool(status) and status.get("state") == "success", f"GET /v1/intents/{jeff}: success after the click", describe(status))
            checks.check(
                "Jeff Baker" in json.dumps((status or {}).get("parameters")),
                "the answer went in as the whole list: recipients = [Jeff Baker]",
                (status or {}).get("parameters"),
            )

            def result(_):
                node = page.element("#waiting .waiting-intent", attribute="data-id", value=jeff)
                if node is None:
                    return True, "gone"
                words = node.find_element(By.CSS_SELECTOR, ".result").text
                return "success" in words, words

            page.wait("the answered intent shows its result state", result)
            expected = expected_counts(baseline, {"success": 4, "failure": 2})
            page.wait(f"#count-success shows {expected['success']} (and needsInput {expected['needsInput']})", counts_probe(page, expected))
        else:
            print("   (the answer checks are skipped: the question is not shown)", flush=True)

        # ── 4. requeue a dead letter by clicking ──
        if dead_id:
            print(f"4. requeue dead letter {dead_id} from #dead", flush=True)
            shown = page.shows(
                f"#dead shows .dead-letter[data-id={dead_id}]",
                lambda s: (any(d["id"] == dead_id for d in s["dead"]), s["dead"] or s["deadNotice"]),
            )
            if shown:
                item = page.element("#dead .dead-letter", attribute="data-id", value=dead_id)
                item.find_element(By.CSS_SELECTOR, "button.requeue").click()

                def requeued(_):
                    node = page.element("#dead .dead-letter", attribute="data-id", value=dead_id)
                    words = node.find_element(By.CSS_SELECTOR, ".result").text if node is not None else "gone"
                    return words == "requeued", words

                page.wait("it shows 'requeued'", requeued)
                status = api.settle(dead_id, ended)
                checks.check(
                    bool(status) and status.get("state") == "success",
                    f"GET /v1/intents/{dead_id}: the requeued intent ran: success",
                    describe(status),
                )
                page.shows("the requeued dead letter leaves #dead", lambda s: (all(d["id"] != dead_id for d in s["dead"]), s["dead"]))

        # ── 5. one intent's page ──
        print(f"5. the page of {jeff}", flush=True)
        page.open(f"{base}/#/intents/{urllib.parse.quote(jeff, safe='')}")

        def intent_page(_):
            shown = page.intent()
            if not shown or shown.get("id") != jeff:
                return False, shown
            turns = shown["turns"]
            held = (
                shown["field"].get("state") == "success"
                and shown["field"].get("type") == "SendMessage"
                and shown["field"].get("id") == jeff
                and len(turns) >= 1
                and "Which Jeff" in turns[0]["question"]
                and "Jeff Baker" in turns[0]["answer"]
                and set(shown["times"]) >= {"submitted", "queued", "started", "finished", "updated"}
            )
            return held, shown

        if jeff_answered:
            page.wait("#intent shows state success, its times, and the turn's question and answer", intent_page)
            shown = page.intent() or {}
            fields = shown.get("field") or {}
            checks.check("Jeff Baker" in (shown.get("view") or ""), "#intent shows the app's rendering in pre.view", shown.get("view"))
            checks.check(
                fields.get("response-code") == "success" and "Jeff Baker" in fields.get("response-message", ""),
                "#intent shows the response",
                fields,
            )
        checks.check(not page.snapshot()["tokenForm"], "the token survives the navigation (sessionStorage)")

        # the screenshot of the main dashboard
        page.open(f"{base}/#/")
        final = expected_counts(baseline, {"success": 3 + int(jeff_answered), "failure": 2, "needsInput": int(not jeff_answered)})
        if dead_id:
            final = expected_counts({s: int(v) for s, v in final.items()}, {"success": 1, "failure": -1})
        page.wait(f"back on the dashboard, the counts show {final}", counts_probe(page, final))
        directory = os.path.dirname(os.path.abspath(args.screenshot))
        os.makedirs(directory, exist_ok=True)
        checks.check(driver.save_screenshot(args.screenshot), f"screenshot saved to {args.screenshot}")

        # ── 6. a producer's token ──
        if args.producer_token:
            print("6. the dashboard with a producer's token", flush=True)
            producer = Api(base, args.producer_token)
            code, body = producer.status(jeff)
            checks.check(code == 404, f"the producer's GET /v1/intents/{jeff}: 404 (not its intent)", (code, body))
            code, producer_stats = producer.stats()
            producer_counts = expected_counts((producer_stats or {}).get("byState") or {}, {})
            checks.check(code == 200 and all(n == "0" for n in producer_counts.values()), "the producer's /v1/stats: nothing", producer_stats)
            driver.get("about:blank")
            page.open(f"{base}/#token={urllib.parse.quote(args.producer_token, safe='')}")
            page.wait("its counts are all 0", counts_probe(page, {state: "0" for state in STATES}))
            page.shows(
                "#dead says dead letters are for operators",
                lambda s: (s["deadNotice"] == "dead letters are for operators" and not s["dead"], (s["deadNotice"], s["dead"])),
            )
            page.shows(
                "it lists none of the operator's intents",
                lambda s: (not any(id.startswith(prefix) for id in s["recent"] + [w["id"] for w in s["waiting"]]), s["recent"][:5]),
            )

        # ── 7. a wrong token shows the token form, which takes a good one ──
        print("7. a refused token", flush=True)
        driver.get("about:blank")
        page.open(f"{base}/#token=not-a-token-{secrets.token_hex(4)}")
        page.shows(
            "a token the gateway refuses (401) shows the token form",
            lambda s: (s["tokenForm"] and not s["dashboard"] and "401" in (s["tokenMessage"] or ""), (s["tokenForm"], s["tokenMessage"])),
        )
        field = driver.find_element(By.ID, "token-input")
        field.send_keys(args.token)
        driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
        page.wait("the form's token opens the dashboard with the counts", counts_probe(page, final))
    except WebDriverException as error:
        checks.check(False, f"the browser: {error.msg if hasattr(error, 'msg') else error}")
    finally:
        try:
            expected_refusals = ("status of 401", "status of 403")  # the refused token, and a producer asking for dead letters
            problems = [
                entry
                for entry in driver.get_log("browser")
                if entry.get("level") == "SEVERE" and not any(words in entry.get("message", "") for words in expected_refusals)
            ]
            checks.check(not problems, "no errors in the browser console", [p.get("message") for p in problems][:5])
        except WebDriverException:
            pass
        driver.quit()

    print(f"dashboard test: {checks.passed} checks passed, {len(checks.failed)} failed", flush=True)
    if checks.failed:
        print("what did not hold:")
        for words in checks.failed:
            print(f"  - {words}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

/// The dashboard the gateway serves at `/`: plain HTML, CSS and JavaScript, no build step, nothing fetched from elsewhere.
///
/// The page reads its token from the URL fragment (`/#token=…`, then kept in the tab's
/// sessionStorage) or asks for it, sends it as `Authorization: Bearer` on every call, follows
/// `GET /v1/events` with `fetch` streaming, and shows every text from the API as text, never as markup.
enum DashboardAssets {
    /// `GET /`.
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
          <meta charset="utf-8">
          <meta name="viewport" content="width=device-width, initial-scale=1">
          <title>IntentQueue</title>
          <link rel="icon" href="data:,">
          <link rel="stylesheet" href="dashboard.css">
        </head>
        <body>
          <header class="top">
            <h1><a href="#/">IntentQueue</a></h1>
            <span class="subtitle">intent-gateway</span>
            <div id="health" class="health" aria-label="health">
              <span id="health-gateway" class="pill pill-wait">gateway …</span>
              <span id="health-broker" class="pill pill-wait">broker …</span>
              <span id="health-recorder" class="pill pill-wait">recorder …</span>
              <span id="live" class="pill pill-wait">live …</span>
            </div>
            <button id="change-token" type="button" class="quiet" hidden>Change token</button>
          </header>

          <section id="token-panel" class="token-panel" hidden>
            <form id="token-form" class="panel">
              <h2>Sign in</h2>
              <p>Enter a gateway token: a producer sees its own intents, an operator everyone's.</p>
              <label for="token-input">Token</label>
              <div class="row">
                <input id="token-input" name="token" type="password" autocomplete="off" spellcheck="false">
                <button type="submit">Open</button>
              </div>
              <p id="token-message" class="panel-error"></p>
              <p class="muted">The token stays in this tab only (sessionStorage). You can also open <code>/#token=…</code>.</p>
            </form>
          </section>

          <div id="app" hidden>
            <main id="dashboard">
              <section id="counts" class="panel wide">
                <h2>Intents by state <span class="muted">total <span id="count-total">…</span></span></h2>
                <div class="count-cards">
                  <div class="count-card" data-state="queued"><span class="label">queued</span><span id="count-queued" class="n">…</span></div>
                  <div class="count-card" data-state="scheduled">
                    <span class="label">scheduled</span><span id="count-scheduled" class="n">…</span>
                  </div>
                  <div class="count-card" data-state="inProgress">
                    <span class="label">in progress</span><span id="count-inProgress" class="n">…</span>
                  </div>
                  <div class="count-card" data-state="needsInput">
                    <span class="label">needs input</span><span id="count-needsInput" class="n">…</span>
                  </div>
                  <div class="count-card" data-state="cancelRequested">
                    <span class="label">cancel requested</span><span id="count-cancelRequested" class="n">…</span>
                  </div>
                  <div class="count-card" data-state="success"><span class="label">success</span><span id="count-success" class="n">…</span></div>
                  <div class="count-card" data-state="failure"><span class="label">failure</span><span id="count-failure" class="n">…</span></div>
                  <div class="count-card" data-state="canceled"><span class="label">canceled</span><span id="count-canceled" class="n">…</span></div>
                </div>
                <table id="counts-by-type" class="grid">
                  <thead>
                    <tr>
                      <th scope="col">type</th>
                      <th scope="col" data-state="queued">queued</th>
                      <th scope="col" data-state="scheduled">scheduled</th>
                      <th scope="col" data-state="inProgress">in progress</th>
                      <th scope="col" data-state="needsInput">needs input</th>
                      <th scope="col" data-state="cancelRequested">cancel requested</th>
                      <th scope="col" data-state="success">success</th>
                      <th scope="col" data-state="failure">failure</th>
                      <th scope="col" data-state="canceled">canceled</th>
                      <th scope="col" data-state="total">total</th>
                    </tr>
                  </thead>
                  <tbody></tbody>
                </table>
                <p class="empty muted" hidden>No intents yet.</p>
                <p class="panel-error" hidden></p>
              </section>

              <section id="chart-panel" class="panel wide">
                <h2>Throughput and latency <span class="muted">last 5 minutes, from the live stream</span></h2>
                <canvas id="chart" role="img" aria-label="Intents ended per 10 seconds, and their p50 latency, over the last 5 minutes"></canvas>
              </section>

              <section id="waiting" class="panel">
                <h2>Waiting for an answer <span id="waiting-count" class="badge">0</span></h2>
                <div id="waiting-list" class="stack"></div>
                <p class="empty muted" hidden>No intent is waiting for an answer.</p>
                <p class="panel-error" hidden></p>
              </section>

              <section id="failures" class="panel">
                <h2>Recent failures</h2>
                <ul id="failures-list" class="stack plain"></ul>
                <p class="empty muted" hidden>No failures.</p>
                <p class="panel-error" hidden></p>
              </section>

              <section id="dead" class="panel">
                <h2>Dead letters</h2>
                <p class="notice" hidden></p>
                <ul id="dead-list" class="stack plain"></ul>
                <p class="empty muted" hidden>No dead letters.</p>
                <p class="panel-error" hidden></p>
              </section>

              <section id="recent" class="panel">
                <h2>Recently updated</h2>
                <div class="scroll">
                  <table class="grid">
                    <thead>
                      <tr>
                        <th scope="col">id</th><th scope="col">type</th><th scope="col">state</th>
                        <th scope="col">owner</th><th scope="col">updated</th>
                      </tr>
                    </thead>
                    <tbody id="recent-list"></tbody>
                  </table>
                </div>
                <p class="empty muted" hidden>No intents yet.</p>
                <p class="panel-error" hidden></p>
              </section>
            </main>

            <main id="intent-page" hidden>
              <p><a href="#/" class="back">← Dashboard</a></p>
              <section id="intent" class="panel wide"></section>
            </main>
          </div>
          <script src="dashboard.js"></script>
        </body>
        </html>
        """#

    /// `GET /dashboard.css`.
    static let css = #"""
        :root {
          --bg: #f3f4f6;
          --panel: #ffffff;
          --ink: #111827;
          --muted: #6b7280;
          --line: #e5e7eb;
          --accent: #2563eb;
          --success: #15803d;
          --failure: #b91c1c;
          --waiting: #b45309;
          --neutral: #4b5563;
          --radius: 8px;
          font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
          font-size: 15px;
          line-height: 1.45;
          color: var(--ink);
          background: var(--bg);
        }

        * { box-sizing: border-box; }
        [hidden] { display: none !important; }
        body { margin: 0; }
        a { color: var(--accent); text-decoration: none; }
        a:hover { text-decoration: underline; }
        code, pre, .id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
        .muted { color: var(--muted); }

        header.top {
          display: flex;
          align-items: center;
          gap: 16px;
          flex-wrap: wrap;
          padding: 12px 24px;
          background: #111827;
          color: #f9fafb;
        }
        header.top h1 { margin: 0; font-size: 1.35rem; letter-spacing: 0.01em; }
        header.top h1 a { color: inherit; }
        header.top .subtitle { color: #9ca3af; }
        .health { display: flex; gap: 8px; flex-wrap: wrap; margin-left: auto; }

        .pill {
          display: inline-block;
          padding: 2px 10px;
          border-radius: 999px;
          font-size: 0.82rem;
          font-weight: 600;
          background: #374151;
          color: #e5e7eb;
        }
        .pill-up { background: #166534; color: #dcfce7; }
        .pill-down { background: #991b1b; color: #fee2e2; }
        .pill-wait { background: #374151; color: #d1d5db; }

        button {
          font: inherit;
          padding: 5px 12px;
          border: 1px solid #cbd5e1;
          border-radius: 6px;
          background: #f8fafc;
          color: var(--ink);
          cursor: pointer;
        }
        button:hover:not(:disabled) { background: #e0e7ff; border-color: #a5b4fc; }
        button:disabled { opacity: 0.55; cursor: default; }
        button.quiet { background: transparent; color: #e5e7eb; border-color: #4b5563; }
        button.quiet:hover { background: #1f2937; }
        button.confirm { border-color: #86efac; background: #f0fdf4; }
        button.deny, button.requeue { border-color: #fdba74; background: #fff7ed; }
        input[type="text"], input[type="password"] {
          font: inherit;
          padding: 5px 8px;
          border: 1px solid #cbd5e1;
          border-radius: 6px;
          min-width: 12em;
        }

        main {
          display: grid;
          grid-template-columns: repeat(2, minmax(0, 1fr));
          gap: 16px;
          padding: 16px 24px 32px;
          max-width: 1500px;
          margin: 0 auto;
        }
        #intent-page { display: block; }
        .panel {
          background: var(--panel);
          border: 1px solid var(--line);
          border-radius: var(--radius);
          padding: 14px 18px;
          min-width: 0;
        }
        .panel.wide { grid-column: 1 / -1; }
        .panel h2 { margin: 0 0 12px; font-size: 1.05rem; }
        .panel h2 .muted { font-weight: normal; font-size: 0.9rem; margin-left: 6px; }
        .panel-error { color: var(--failure); }
        .notice { padding: 8px 12px; border-radius: 6px; background: #f3f4f6; color: var(--neutral); }
        .badge {
          display: inline-block;
          min-width: 1.6em;
          padding: 0 6px;
          border-radius: 999px;
          background: #fef3c7;
          color: var(--waiting);
          text-align: center;
        }

        .count-cards { display: grid; grid-template-columns: repeat(7, minmax(0, 1fr)); gap: 10px; margin-bottom: 14px; }
        .count-card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; display: flex; flex-direction: column; }
        .count-card .label { font-size: 0.8rem; color: var(--muted); }
        .count-card .n { font-size: 1.7rem; font-weight: 700; font-variant-numeric: tabular-nums; }
        .count-card[data-state="success"] .n { color: var(--success); }
        .count-card[data-state="failure"] .n { color: var(--failure); }
        .count-card[data-state="needsInput"] .n { color: var(--waiting); }
        .count-card.zero .n { color: #9ca3af; }

        table.grid { width: 100%; border-collapse: collapse; font-size: 0.92rem; }
        table.grid th, table.grid td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; }
        table.grid thead th { color: var(--muted); font-weight: 600; font-size: 0.82rem; }
        table.grid td.num, table.grid th[data-state] { text-align: right; font-variant-numeric: tabular-nums; }
        table.grid td.zero { color: #d1d5db; }
        table.grid td.total { font-weight: 600; }
        #counts-by-type.is-empty { display: none; }
        .scroll { max-height: 520px; overflow: auto; }

        #chart { display: block; width: 100%; height: 260px; }

        .stack { display: flex; flex-direction: column; gap: 10px; }
        ul.plain { list-style: none; margin: 0; padding: 0; }
        .waiting-intent, .failure, .dead-letter {
          border: 1px solid var(--line);
          border-left: 4px solid var(--waiting);
          border-radius: 6px;
          padding: 8px 12px;
        }
        .failure { border-left-color: var(--failure); }
        .dead-letter { border-left-color: var(--neutral); }
        .line { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
        .line .type { font-weight: 600; }
        .line .time { margin-left: auto; color: var(--muted); font-size: 0.85rem; }
        .failure .code { color: var(--failure); }
        .message { color: #374151; margin: 2px 0; overflow-wrap: anywhere; }
        .question { margin-top: 6px; }
        .question .prompt { margin: 0 0 6px; font-weight: 600; }
        .question .supporting { margin: -4px 0 6px; font-size: 0.85rem; }
        .actions { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
        .result { margin: 6px 0 0; font-size: 0.9rem; min-height: 1em; }
        .result.ok { color: var(--success); font-weight: 600; }
        .result.error { color: var(--failure); }

        pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
        pre.view {
          margin: 6px 0;
          padding: 10px 14px;
          background: #fffbeb;
          border: 1px solid #fde68a;
          border-radius: 6px;
          font-size: 0.95rem;
        }
        #intent pre.view { font-size: 1.15rem; padding: 14px 18px; }
        pre.json { padding: 8px 12px; background: #f9fafb; border: 1px solid var(--line); border-radius: 6px; }

        .state {
          display: inline-block;
          padding: 0 8px;
          border-radius: 999px;
          font-size: 0.8rem;
          font-weight: 600;
          background: #e5e7eb;
          color: var(--neutral);
        }
        .state-success { background: #dcfce7; color: var(--success); }
        .state-failure { background: #fee2e2; color: var(--failure); }
        .state-needsInput { background: #fef3c7; color: var(--waiting); }
        .state-inProgress, .state-queued, .state-scheduled { background: #dbeafe; color: #1d4ed8; }
        .state-canceled, .state-cancelRequested { background: #e5e7eb; color: var(--neutral); }

        .intent-head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
        .intent-head h2 { margin: 0; font-size: 1.3rem; }
        .intent-head .id { font-weight: normal; }
        .block { margin-top: 16px; }
        .block h3 { margin: 0 0 6px; font-size: 0.95rem; color: var(--neutral); }
        .columns { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; }
        dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
        dl.fields dt { color: var(--muted); }
        dl.fields dd { margin: 0; overflow-wrap: anywhere; }
        table.times, table.resolutions { border-collapse: collapse; font-size: 0.92rem; }
        table.times th, table.times td, table.resolutions th, table.resolutions td {
          padding: 3px 10px 3px 0;
          text-align: left;
          vertical-align: top;
        }
        table.times th, table.resolutions thead th { color: var(--muted); font-weight: normal; }
        ol.history { margin: 0; padding-left: 0; list-style: none; display: flex; flex-direction: column; gap: 10px; }
        .turn { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
        .turn-title { font-weight: 600; margin-bottom: 4px; }
        .turn ul { margin: 4px 0; padding-left: 20px; }
        .turn .answer-words { font-weight: 600; }
        .turn .label { color: var(--muted); }

        .token-panel { display: flex; justify-content: center; padding: 48px 16px; }
        .token-panel form { width: min(520px, 100%); }
        .token-panel .row { display: flex; gap: 8px; }
        .token-panel input { flex: 1; }

        @media (max-width: 900px) {
          main { grid-template-columns: minmax(0, 1fr); padding: 12px; }
          .count-cards { grid-template-columns: repeat(4, minmax(0, 1fr)); }
          .columns { grid-template-columns: minmax(0, 1fr); }
        }
        """#

    /// `GET /dashboard.js`.
    static let javascript = #"""
        'use strict';
        // The IntentQueue dashboard: plain ES2020, no framework. Every text from the API goes in through
        // textContent (or a text node), never as markup.
        (() => {
          const STATES = ['queued', 'scheduled', 'inProgress', 'needsInput', 'cancelRequested', 'success', 'failure', 'canceled'];
          const TERMINAL = new Set(['success', 'failure', 'canceled']);
          const QUESTIONS = new Set(['disambiguation', 'needsValue', 'confirmationRequired']);
          const PANELS = ['counts', 'waiting', 'failures', 'dead', 'recent'];
          const TOKEN_KEY = 'intentqueue.token';
          const REFRESH_GAP_MS = 300;
          const FALLBACK_MS = 5000;
          const KEEP_DONE_MS = 10000;
          const WINDOW_S = 300;
          const BUCKET_S = 10;
          const THROUGHPUT_COLOUR = '#2563eb';
          const LATENCY_COLOUR = '#ea580c';

          const app = {
            token: null,
            generation: 0, // bumped by every start and stop: async work of an older generation renders nothing
            liveAbort: null,
            intentAbort: null,
            pending: new Set(),
            refreshTimer: null,
            lastRefresh: 0,
            inFlight: false,
            route: { name: 'dashboard' },
            intent: null, // the status shown on the intent page
            catchUp: null, // the latest event the intent page's status should reach
            catchingUp: false,
            finished: new Map(), // `${id}|${state}` → {at, latency}: terminal events, for the chart
            started: new Map(), // id → at of its inProgress event, for a terminal event without startedAt
            known: { waiting: new Set(), failures: new Set(), dead: new Set() },
            seeded: false,
          };

          // ── small helpers ──────────────────────────────────────────────────────────────────────────

          const $ = (selector, root = document) => root.querySelector(selector);
          const enc = encodeURIComponent;
          const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

          /** An element; string children become text nodes. */
          function h(tag, attributes, ...children) {
            const node = document.createElement(tag);
            for (const [key, value] of Object.entries(attributes || {})) {
              if (value === undefined || value === null || value === false) continue;
              if (key === 'class') node.className = value;
              else if (key === 'text') node.textContent = value;
              else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
              else node.setAttribute(key, value === true ? '' : String(value));
            }
            for (const child of children.flat(Infinity)) {
              if (child === null || child === undefined || child === false) continue;
              node.append(child instanceof Node ? child : String(child));
            }
            return node;
          }

          /** A value as words: strings as they are, lists joined, entities by their name. */
          function text(value) {
            if (value === null || value === undefined) return '';
            if (typeof value === 'string') return value;
            if (typeof value === 'number' || typeof value === 'boolean') return String(value);
            if (Array.isArray(value)) return value.map(text).join(', ');
            if (typeof value === 'object') {
              for (const key of ['title', 'name', 'displayString', 'value']) {
                if (typeof value[key] === 'string') return value[key];
              }
              return JSON.stringify(value);
            }
            return String(value);
          }

          const orDash = (value) => (value === null || value === undefined || value === '' ? '—' : text(value));
          const json = (value) => JSON.stringify(value, null, 2);

          /** "A", "A or B", "A, B or C". */
          function spokenList(names) {
            if (names.length <= 1) return names[0] || '';
            return `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
          }

          const hasIndex = (resolution) => Number.isInteger(resolution.index);
          const parameterLabel = (r) => (hasIndex(r) ? `${r.parameter}[${r.index}]` : r.parameter);

          function optionTitle(resolution, i) {
            const title = Array.isArray(resolution.optionTitles) ? resolution.optionTitles[i] : null;
            return typeof title === 'string' && title !== '' ? title : text(resolution.options[i]);
          }

          /** What the user is asked, in words: the prompt when there is one, else one made up. */
          function questionText(resolution) {
            const full = resolution.prompt && resolution.prompt.full;
            if (typeof full === 'string' && full !== '') return full;
            const options = Array.isArray(resolution.options) ? resolution.options : [];
            switch (resolution.outcome) {
              case 'disambiguation':
                return `Which ${resolution.parameter}: ${spokenList(options.map((_, i) => optionTitle(resolution, i)))}?`;
              case 'needsValue':
                return `What is the ${resolution.parameter}?`;
              case 'confirmationRequired':
                if (resolution.parameter === 'intent') return 'Confirm this intent?';
                return resolution.value === undefined || resolution.value === null
                  ? `Confirm ${resolution.parameter}?`
                  : `Confirm ${resolution.parameter} ${text(resolution.value)}?`;
              default:
                return `${parameterLabel(resolution)}: ${resolution.outcome}`;
            }
          }

          function localTime(t) {
            return typeof t === 'number' ? new Date(t * 1000).toLocaleString() : '—';
          }

          function relative(t) {
            if (typeof t !== 'number') return '';
            const seconds = Date.now() / 1000 - t;
            const a = Math.abs(seconds);
            if (a < 1.5) return 'just now';
            let amount;
            if (a < 90) amount = `${Math.round(a)} s`;
            else if (a < 5400) amount = `${Math.round(a / 60)} min`;
            else if (a < 129600) amount = `${Math.round(a / 3600)} h`;
            else amount = `${Math.round(a / 86400)} d`;
            return seconds >= 0 ? `${amount} ago` : `in ${amount}`;
          }

          /** A relative time, kept current by the ticker, with the local time as its tooltip. */
          function timeAgo(t) {
            if (typeof t !== 'number') return h('span', { class: 'muted' }, '—');
            return h('time', { datetime: new Date(t * 1000).toISOString(), title: localTime(t), 'data-t': t }, relative(t));
          }

          function statePill(state) {
            return h('span', { class: `state state-${String(state).replace(/[^A-Za-z]/g, '')}`, 'data-state': state }, state);
          }

          function intentLink(id, label) {
            return h('a', { class: 'intent-link', href: `#/intents/${enc(id)}` }, label === undefined ? id : label);
          }

          // ── the API ────────────────────────────────────────────────────────────────────────────────

          class ApiError extends Error {
            constructor(status, code, message) {
              super(message);
              this.status = status;
              this.code = code;
            }
          }

          function headers(extra) {
            return Object.assign({ Authorization: `Bearer ${app.token}` }, extra);
          }

          async function errorOf(response) {
            let data = null;
            try {
              data = JSON.parse(await response.text());
            } catch (_) {
              data = null;
            }
            const message = data && typeof data.error === 'string' ? data.error : `${response.status} ${response.statusText}`;
            return new ApiError(response.status, data && data.code, message);
          }

          async function api(path, options = {}) {
            const generation = app.generation;
            const init = { method: options.method || 'GET', headers: headers({ Accept: 'application/json' }), cache: 'no-store' };
            if (options.body !== undefined) {
              init.headers['Content-Type'] = 'application/json';
              init.body = JSON.stringify(options.body);
            }
            let response;
            try {
              response = await fetch(path, init);
            } catch (error) {
              throw new ApiError(0, 'network', 'the gateway did not answer');
            }
            if (!response.ok) {
              const error = await errorOf(response);
              if (response.status === 401 && generation === app.generation) tokenRefused();
              throw error;
            }
            const body = await response.text();
            try {
              return body ? JSON.parse(body) : null;
            } catch (_) {
              throw new ApiError(response.status, 'invalid', 'the gateway answered something that is not JSON');
            }
          }

          /**
           * Reads a text/event-stream with fetch (EventSource cannot send the token): `event:` and `data:`
           * lines, a blank line ends an event, lines starting with ':' are comments. Returns when the server
           * ends the stream.
           */
          async function stream(path, signal, onOpen, onEvent) {
            const generation = app.generation;
            const response = await fetch(path, { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal });
            if (!response.ok) {
              const error = await errorOf(response);
              if (response.status === 401 && generation === app.generation) tokenRefused();
              throw error;
            }
            if (!response.body) throw new ApiError(0, 'stream', 'this browser cannot read a stream');
            onOpen();
            const reader = response.body.getReader();
            const decoder = new TextDecoder();
            let buffer = '';
            let afterCR = false;
            let type = '';
            let data = [];
            const line = (l) => {
              if (l === '') {
                if (data.length > 0) onEvent(type || 'message', data.join('\n'));
                type = '';
                data = [];
                return;
              }
              if (l.startsWith(':')) return;
              const colon = l.indexOf(':');
              const field = colon < 0 ? l : l.slice(0, colon);
              let value = colon < 0 ? '' : l.slice(colon + 1);
              if (value.startsWith(' ')) value = value.slice(1);
              if (field === 'event') type = value;
              else if (field === 'data') data.push(value);
            };
            try {
              for (;;) {
                const { value, done } = await reader.read();
                if (done) break;
                let chunk = decoder.decode(value, { stream: true });
                if (afterCR && chunk.startsWith('\n')) chunk = chunk.slice(1);
                afterCR = chunk.endsWith('\r');
                buffer += chunk;
                const lines = buffer.split(/\r\n|\r|\n/);
                buffer = lines.pop();
                for (const l of lines) line(l);
              }
            } finally {
              reader.cancel().catch(() => {});
            }
          }

          // ── token ──────────────────────────────────────────────────────────────────────────────────

          /** Takes `token=…` out of the fragment (and the address bar) into sessionStorage. */
          function takeTokenFromFragment() {
            const match = /(^|[#&?])token=([^&]*)/.exec(location.hash);
            if (!match) return false;
            let token = match[2];
            try {
              token = decodeURIComponent(token);
            } catch (_) {
              // keep it as it was written
            }
            let rest = location.hash.slice(0, match.index + match[1].length) + location.hash.slice(match.index + match[0].length);
            rest = rest.replace(/[&?]+$/, '').replace(/^#[&?]+/, '#');
            if (rest === '' || rest === '#') rest = '#/';
            history.replaceState(null, '', location.pathname + location.search + rest);
            if (token === '') return false;
            sessionStorage.setItem(TOKEN_KEY, token);
            return true;
          }

          function showTokenForm(message) {
            $('#token-panel').hidden = false;
            $('#app').hidden = true;
            $('#change-token').hidden = true;
            $('#token-message').textContent = message || '';
            const input = $('#token-input');
            input.value = '';
            input.focus();
          }

          function stop() {
            app.generation += 1;
            if (app.liveAbort) app.liveAbort.abort();
            if (app.intentAbort) app.intentAbort.abort();
            app.liveAbort = null;
            app.intentAbort = null;
            clearTimeout(app.refreshTimer);
            app.refreshTimer = null;
            app.pending.clear();
            app.inFlight = false;
          }

          function tokenRefused() {
            stop();
            app.token = null;
            sessionStorage.removeItem(TOKEN_KEY);
            setLive('down', 'not signed in');
            showTokenForm('The gateway refused that token (401). Enter a valid one.');
          }

          // ── start, routing ─────────────────────────────────────────────────────────────────────────

          function start() {
            stop();
            app.token = sessionStorage.getItem(TOKEN_KEY);
            if (!app.token) {
              setLive('down', 'not signed in');
              showTokenForm('');
              return;
            }
            $('#token-panel').hidden = true;
            $('#app').hidden = false;
            $('#change-token').hidden = false;
            app.finished.clear();
            app.started.clear();
            app.seeded = false;
            for (const set of Object.values(app.known)) set.clear();
            for (const list of ['#waiting-list', '#failures-list', '#dead-list', '#recent-list', '#counts-by-type tbody']) {
              $(list).replaceChildren();
            }
            for (const state of STATES) $(`#count-${state}`).textContent = '…';
            $('#count-total').textContent = '…';
            const generation = app.generation;
            liveLoop(generation);
            seedChart(generation);
            route();
          }

          function parseRoute() {
            const match = /^#\/intents\/(.+)$/.exec(location.hash);
            if (!match) return { name: 'dashboard' };
            let id = match[1];
            try {
              id = decodeURIComponent(id);
            } catch (_) {
              // an id written without encoding
            }
            return { name: 'intent', id };
          }

          function route() {
            app.route = parseRoute();
            if (!app.token) return;
            const onIntent = app.route.name === 'intent';
            $('#dashboard').hidden = onIntent;
            $('#intent-page').hidden = !onIntent;
            if (onIntent) {
              showIntent(app.route.id, app.generation);
            } else {
              stopFollowing();
              app.intent = null;
              scheduleRefresh(PANELS);
              drawChart();
            }
          }

          // ── live stream and refreshes ──────────────────────────────────────────────────────────────

          function setLive(kind, words) {
            const live = $('#live');
            live.className = `pill pill-${kind}`;
            live.textContent = words;
          }

          async function liveLoop(generation) {
            let backoff = 1000;
            while (generation === app.generation) {
              const controller = new AbortController();
              app.liveAbort = controller;
              const opened = Date.now();
              let events = 0;
              setLive('wait', 'live: connecting…');
              try {
                await stream(
                  'v1/events',
                  controller.signal,
                  () => {
                    if (generation === app.generation) setLive('up', 'live');
                  },
                  (type, data) => {
                    if (generation !== app.generation || type !== 'status') return;
                    events += 1;
                    let event;
                    try {
                      event = JSON.parse(data);
                    } catch (_) {
                      return;
                    }
                    onLiveEvent(event);
                  }
                );
              } catch (error) {
                if (generation !== app.generation || error.status === 401) return;
              }
              if (generation !== app.generation) return;
              if (events > 0 || Date.now() - opened > 30000) backoff = 1000;
              setLive('down', `live: reconnecting in ${Math.round(backoff / 1000)} s`);
              await sleep(backoff);
              backoff = Math.min(backoff * 2, 30000);
              scheduleRefresh(PANELS); // whatever happened while the stream was down
            }
          }

          function onLiveEvent(event) {
            if (!event || typeof event !== 'object' || typeof event.id !== 'string' || event.refused) return;
            if (event.state === 'inProgress' && typeof event.at === 'number') {
              app.started.set(event.id, event.at);
              if (app.started.size > 20000) app.started.delete(app.started.keys().next().value);
            }
            if (TERMINAL.has(event.state) && typeof event.at === 'number') {
              const startedAt = typeof event.startedAt === 'number' ? event.startedAt : app.started.get(event.id);
              app.started.delete(event.id);
              addFinished(event.id, event.state, event.at, startedAt);
              drawChart();
            }
            const panels = new Set(['counts', 'recent']);
            if (event.state === 'needsInput' || app.known.waiting.has(event.id)) panels.add('waiting');
            if (event.state === 'failure' || app.known.failures.has(event.id)) panels.add('failures');
            const code = event.response && event.response.code;
            if (code === 'deadLettered' || app.known.dead.has(event.id)) panels.add('dead');
            scheduleRefresh(panels);
          }

          /** Refreshes these panels soon: at most one refresh every 300 ms, whatever the rate of events. */
          function scheduleRefresh(panels) {
            for (const panel of panels) app.pending.add(panel);
            if (app.refreshTimer || !app.token) return;
            const wait = Math.max(0, app.lastRefresh + REFRESH_GAP_MS - Date.now());
            app.refreshTimer = setTimeout(runRefresh, wait);
          }

          async function runRefresh() {
            app.refreshTimer = null;
            if (app.route.name !== 'dashboard' || !app.token) return; // kept pending until the dashboard shows again
            if (app.inFlight) {
              app.refreshTimer = setTimeout(runRefresh, REFRESH_GAP_MS);
              return;
            }
            const panels = [...app.pending];
            app.pending.clear();
            if (panels.length === 0) return;
            const generation = app.generation;
            app.lastRefresh = Date.now();
            app.inFlight = true;
            try {
              await Promise.all(
                panels.map((panel) =>
                  REFRESH[panel](generation).then(
                    () => generation === app.generation && panelError(panel, null),
                    (error) => generation === app.generation && panelError(panel, error)
                  )
                )
              );
            } finally {
              if (generation === app.generation) app.inFlight = false;
            }
          }

          function panelError(panel, error) {
            const node = $(`#${panel} .panel-error`);
            if (!node) return;
            node.hidden = !error;
            node.textContent = error ? `Could not load: ${error.message}` : '';
          }

          /**
           * Puts one element per item in `list`, in order, reusing the element already there for an item
           * whose signature has not changed, or one being acted on. Elements acted on (`data-done`) stay a
           * little while after their item left, so that what happened can be read.
           */
          function reconcile(list, items, keyOf, signatureOf, build) {
            const existing = new Map();
            for (const node of list.children) if (node.dataset.key !== undefined) existing.set(node.dataset.key, node);
            const wanted = [];
            const seen = new Set();
            for (const item of items) {
              const key = keyOf(item);
              if (seen.has(key)) continue;
              seen.add(key);
              const signature = signatureOf(item);
              let node = existing.get(key);
              if (!node || (node.dataset.sig !== signature && node.dataset.busy === undefined)) {
                node = build(item);
                node.dataset.key = key;
                node.dataset.sig = signature;
              }
              wanted.push(node);
            }
            const now = Date.now();
            for (const [key, node] of existing) {
              if (seen.has(key)) continue;
              if (node.dataset.busy !== undefined || (node.dataset.done !== undefined && now < Number(node.dataset.keepUntil))) wanted.push(node);
            }
            const current = [...list.children];
            if (current.length === wanted.length && current.every((node, i) => node === wanted[i])) return;
            for (const node of current) if (!wanted.includes(node)) node.remove();
            wanted.forEach((node, i) => {
              if (list.children[i] !== node) list.insertBefore(node, list.children[i] || null);
            });
          }

          function showEmpty(panel, empty, words) {
            const node = $(`#${panel} .empty`);
            node.hidden = !empty;
            if (words) node.textContent = words;
          }

          // ── panels ─────────────────────────────────────────────────────────────────────────────────

          const REFRESH = {
            async counts(generation) {
              const stats = await api('v1/stats');
              if (generation !== app.generation) return;
              const byState = (stats && stats.byState) || {};
              let sum = 0;
              for (const state of STATES) {
                const n = Number(byState[state]) || 0;
                sum += n;
                const node = $(`#count-${state}`);
                node.textContent = String(n);
                node.parentElement.classList.toggle('zero', n === 0);
              }
              $('#count-total').textContent = String(typeof stats.total === 'number' ? stats.total : sum);
              const byType = (stats && stats.byType) || {};
              const rows = Object.keys(byType)
                .sort()
                .map((type) => {
                  const states = byType[type] || {};
                  let total = 0;
                  const cells = STATES.map((state) => {
                    const n = Number(states[state]) || 0;
                    total += n;
                    return h('td', { 'data-state': state, class: n === 0 ? 'num zero' : 'num' }, String(n));
                  });
                  const sum = h('td', { class: 'num total', 'data-state': 'total' }, String(total));
                  return h('tr', { 'data-type': type }, h('th', { scope: 'row' }, type), cells, sum);
                });
              $('#counts-by-type tbody').replaceChildren(...rows);
              $('#counts-by-type').classList.toggle('is-empty', rows.length === 0);
              showEmpty('counts', rows.length === 0);
            },

            async waiting(generation) {
              const answer = await api('v1/intents?state=needsInput&limit=100');
              if (generation !== app.generation) return;
              const intents = (answer && answer.intents) || [];
              app.known.waiting = new Set(intents.map((s) => s.id));
              reconcile($('#waiting-list'), intents, (s) => s.id, (s) => `${s.turn}|${s.updatedAt}`, (s) => waitingIntent(s, 'waiting'));
              $('#waiting-count').textContent = String(intents.length);
              showEmpty('waiting', intents.length === 0);
            },

            async failures(generation) {
              const answer = await api('v1/intents?state=failure&limit=20');
              if (generation !== app.generation) return;
              const intents = (answer && answer.intents) || [];
              app.known.failures = new Set(intents.map((s) => s.id));
              reconcile($('#failures-list'), intents, (s) => s.id, (s) => String(s.updatedAt), failure);
              showEmpty('failures', intents.length === 0);
            },

            async dead(generation) {
              let answer;
              try {
                answer = await api('v1/dead?limit=50');
              } catch (error) {
                if (error.status !== 403) throw error;
                if (generation !== app.generation) return;
                app.known.dead.clear();
                $('#dead-list').replaceChildren();
                $('#dead .notice').hidden = false;
                $('#dead .notice').textContent = 'dead letters are for operators';
                showEmpty('dead', false);
                return;
              }
              if (generation !== app.generation) return;
              $('#dead .notice').hidden = true;
              const intents = (answer && answer.intents) || [];
              app.known.dead = new Set(intents.map((s) => s.id));
              reconcile($('#dead-list'), intents, (s) => s.id, (s) => String(s.updatedAt), deadLetter);
              showEmpty('dead', intents.length === 0);
            },

            async recent(generation) {
              const answer = await api('v1/intents?limit=50');
              if (generation !== app.generation) return;
              const intents = (answer && answer.intents) || [];
              const rows = intents.map((s) =>
                h(
                  'tr',
                  { class: 'recent-intent', 'data-id': s.id, 'data-state': s.state },
                  h('td', { class: 'id' }, intentLink(s.id)),
                  h('td', { class: 'type' }, s.type),
                  h('td', null, statePill(s.state)),
                  h('td', { class: 'owner' }, orDash(s.owner)),
                  h('td', { class: 'time' }, timeAgo(s.updatedAt))
                )
              );
              $('#recent-list').replaceChildren(...rows);
              showEmpty('recent', rows.length === 0);
            },
          };

          function failure(s) {
            const response = s.response || {};
            return h(
              'li',
              { class: 'failure', 'data-id': s.id },
              h(
                'div',
                { class: 'line' },
                h('span', { class: 'type' }, s.type),
                h('code', { class: 'code' }, orDash(response.code)),
                h('span', { class: 'time' }, timeAgo(s.finishedAt || s.updatedAt))
              ),
              h('div', { class: 'message' }, orDash(response.message)),
              h('div', { class: 'id muted' }, intentLink(s.id))
            );
          }

          function deadLetter(s) {
            const response = s.response || {};
            const panels = ['counts', 'dead', 'failures', 'recent'];
            const result = h('span', { class: 'result', 'aria-live': 'polite' });
            const item = h(
              'li',
              { class: 'dead-letter', 'data-id': s.id },
              h(
                'div',
                { class: 'line' },
                h('span', { class: 'type' }, s.type),
                intentLink(s.id),
                h('span', { class: 'time' }, timeAgo(s.updatedAt))
              ),
              h('div', { class: 'message' }, orDash(response.message)),
              h(
                'div',
                { class: 'actions' },
                h('button', { type: 'button', class: 'requeue', onclick: () => act(item, () => requeue(s.id, result), panels) }, 'Requeue'),
                result
              )
            );
            return item;
          }

          async function requeue(id, result) {
            try {
              await api(`v1/dead/${enc(id)}/requeue`, { method: 'POST' });
            } catch (error) {
              if (error.status === 404) error.message = 'no dead letter has that id any more';
              throw error;
            }
            result.textContent = 'requeued';
            result.classList.add('ok');
            return null;
          }

          /**
           * Disables the element's controls, runs `action` (which answers a status, or null), and shows
           * what came of it in the element's `.result`.
           */
          async function act(item, action, panels) {
            if (item.dataset.busy !== undefined) return;
            item.dataset.busy = '';
            const controls = item.querySelectorAll('button, input');
            for (const control of controls) control.disabled = true;
            const result = item.querySelector('.result');
            result.classList.remove('error');
            result.textContent = 'sending…';
            try {
              const status = await action();
              if (status && typeof status === 'object' && typeof status.state === 'string') {
                const message = status.response && status.response.message;
                result.replaceChildren('→ ', statePill(status.state), message ? ` ${text(message)}` : '');
                result.dataset.state = status.state;
              }
              item.dataset.done = '';
              item.dataset.keepUntil = String(Date.now() + KEEP_DONE_MS);
            } catch (error) {
              result.classList.add('error');
              result.textContent = `failed: ${error.message}`;
              if (error.status === 409 || error.status === 404) {
                item.dataset.done = '';
                item.dataset.keepUntil = String(Date.now() + KEEP_DONE_MS);
              } else {
                for (const control of controls) control.disabled = false;
              }
            } finally {
              delete item.dataset.busy;
            }
            scheduleRefresh(panels);
            if (app.route.name === 'intent' && app.intent) refetchIntent(app.intent.id, app.generation);
          }

          // ── questions and answers ──────────────────────────────────────────────────────────────────

          /** The list a resolution with an index belongs to, from the intent's parameters. */
          function currentList(status, parameter) {
            const value = status.parameters ? status.parameters[parameter] : undefined;
            if (Array.isArray(value)) return value.slice();
            if (typeof value === 'string') return value.split(',').map((part) => part.trim()).filter((part) => part !== '');
            if (value === undefined || value === null) return [];
            return [value];
          }

          /** Answers one parameter; a list parameter is answered whole, with the element at `index` replaced. */
          function answer(status, resolution, value) {
            let answered = value;
            if (hasIndex(resolution)) {
              const list = currentList(status, resolution.parameter);
              while (list.length < resolution.index) list.push('');
              list[resolution.index] = value;
              answered = list;
            }
            const body = { parameters: { [resolution.parameter]: answered } };
            return api(`v1/intents/${enc(status.id)}/answer?wait=30`, { method: 'POST', body });
          }

          function question(status, resolution, item, panels) {
            const block = h(
              'div',
              { class: 'question', 'data-parameter': resolution.parameter, 'data-outcome': resolution.outcome },
              h('p', { class: 'prompt' }, questionText(resolution))
            );
            const supporting = resolution.prompt && resolution.prompt.supporting;
            if (typeof supporting === 'string' && supporting !== '' && supporting !== questionText(resolution)) {
              block.append(h('p', { class: 'supporting muted' }, supporting));
            }
            const actions = h('div', { class: 'actions' });
            if (resolution.outcome === 'disambiguation') {
              const options = Array.isArray(resolution.options) ? resolution.options : [];
              options.forEach((option, i) => {
                actions.append(
                  h(
                    'button',
                    { type: 'button', class: 'option', 'data-index': i, onclick: () => act(item, () => answer(status, resolution, option), panels) },
                    optionTitle(resolution, i)
                  )
                );
              });
            } else if (resolution.outcome === 'confirmationRequired') {
              const path = (what) => `v1/intents/${enc(status.id)}/${what}?wait=30`;
              const post = (url) => api(url, { method: 'POST' });
              actions.append(
                h('button', { type: 'button', class: 'confirm', onclick: () => act(item, () => post(path('confirm')), panels) }, 'Confirm'),
                h('button', { type: 'button', class: 'deny', onclick: () => act(item, () => post(path('deny')), panels) }, 'Deny')
              );
            } else if (resolution.outcome === 'needsValue') {
              const label = parameterLabel(resolution);
              const input = h('input', { type: 'text', class: 'value-input', 'aria-label': label, placeholder: label });
              const send = () => {
                if (input.value.trim() === '') {
                  input.focus();
                  return;
                }
                act(item, () => answer(status, resolution, input.value), panels);
              };
              input.addEventListener('keydown', (event) => {
                if (event.key === 'Enter') send();
              });
              actions.append(input, h('button', { type: 'button', class: 'answer-value', onclick: send }, 'Answer'));
            }
            block.append(actions);
            return block;
          }

          /** An intent waiting for its answer: its question in words, and a control for each possible answer. */
          function waitingIntent(status, where) {
            const panels = ['counts', 'waiting', 'recent', 'failures'];
            const item = h('article', { class: 'waiting-intent', 'data-id': status.id, 'data-turn': status.turn === null ? '' : status.turn });
            item.append(
              h(
                'div',
                { class: 'line' },
                h('span', { class: 'type' }, status.type),
                intentLink(status.id),
                status.owner ? h('span', { class: 'owner muted' }, `by ${status.owner}`) : null,
                h('span', { class: 'time' }, 'asked ', timeAgo(status.updatedAt))
              )
            );
            if (where === 'waiting' && typeof status.view === 'string' && status.view !== '') item.append(h('pre', { class: 'view' }, status.view));
            const questions = (status.resolutions || []).filter((r) => r && QUESTIONS.has(r.outcome));
            if (questions.length === 0) item.append(h('p', { class: 'muted' }, 'It waits for an answer, but no question was recorded.'));
            for (const resolution of questions) item.append(question(status, resolution, item, panels));
            item.append(h('p', { class: 'result', 'aria-live': 'polite' }));
            return item;
          }

          // ── one intent's page ──────────────────────────────────────────────────────────────────────

          function stopFollowing() {
            if (app.intentAbort) app.intentAbort.abort();
            app.intentAbort = null;
            app.catchUp = null;
          }

          async function showIntent(id, generation) {
            stopFollowing();
            app.intent = null;
            const panel = $('#intent');
            panel.dataset.id = id;
            panel.replaceChildren(h('h2', null, id), h('p', { class: 'muted' }, 'loading…'));
            let status;
            try {
              status = await api(`v1/intents/${enc(id)}`);
            } catch (error) {
              if (generation !== app.generation || app.route.id !== id) return;
              const words = error.status === 404 ? `There is no intent ${id} that this token may see.` : `Could not load it: ${error.message}`;
              panel.replaceChildren(h('h2', null, id), h('p', { class: 'panel-error' }, words));
              return;
            }
            if (generation !== app.generation || app.route.id !== id) return;
            app.intent = status;
            renderIntent(status, status.terminal ? 'ended' : 'following');
            if (!status.terminal) follow(id, generation);
          }

          /** Follows the intent's event stream until it ends terminal, reconnecting with backoff. */
          async function follow(id, generation) {
            let backoff = 1000;
            const current = () => generation === app.generation && app.route.name === 'intent' && app.route.id === id;
            while (current()) {
              const controller = new AbortController();
              app.intentAbort = controller;
              let events = 0;
              try {
                await stream(
                  `v1/intents/${enc(id)}/events`,
                  controller.signal,
                  () => {},
                  (type, data) => {
                    if (!current()) return;
                    let value;
                    try {
                      value = JSON.parse(data);
                    } catch (_) {
                      return;
                    }
                    events += 1;
                    if (type === 'snapshot' && value && value.id === id) {
                      if (!app.intent || !(value.updatedAt < app.intent.updatedAt)) app.intent = value;
                    } else if (type === 'status' && value && value.id === id && !value.refused) {
                      app.intent = merge(app.intent, value);
                      app.catchUp = value;
                      catchUp(id, generation);
                    } else {
                      return;
                    }
                    renderIntent(app.intent, app.intent.terminal ? 'ended' : 'following');
                  }
                );
              } catch (error) {
                if (!current() || error.status === 401) return;
                if (error.status === 404) {
                  renderIntent(app.intent, 'gone');
                  return;
                }
              }
              if (!current()) return;
              if (app.intent && app.intent.terminal) {
                renderIntent(app.intent, 'ended');
                return;
              }
              if (events > 0) backoff = 1000;
              renderIntent(app.intent, `reconnecting in ${Math.round(backoff / 1000)} s`);
              await sleep(backoff);
              backoff = Math.min(backoff * 2, 30000);
            }
          }

          /** The status with one event applied (events carry no history: the store's copy is fetched after). */
          function merge(status, event) {
            if (!status) return status;
            if (typeof event.at === 'number' && event.at < status.updatedAt) return status;
            const s = Object.assign({}, status);
            s.state = event.state;
            s.terminal = TERMINAL.has(event.state);
            if ('response' in event) s.response = event.response;
            else if (!s.terminal) s.response = null;
            if ('resolutions' in event) s.resolutions = event.resolutions;
            if ('progress' in event) s.progress = event.progress;
            if (event.worker) s.worker = event.worker;
            if ('view' in event) s.view = event.view;
            if (typeof event.turn === 'number') s.turn = event.turn;
            if (typeof event.attempt === 'number') s.attempts = Math.max(s.attempts || 0, event.attempt);
            if (typeof event.startedAt === 'number') s.startedAt = event.startedAt;
            else if (event.state === 'inProgress' && typeof s.startedAt !== 'number') s.startedAt = event.at;
            if (typeof event.at === 'number') {
              s.updatedAt = event.at;
              if (s.terminal && typeof s.finishedAt !== 'number') s.finishedAt = event.at;
            }
            return s;
          }

          /** Fetches the stored status (with its history) until the store has caught up with the latest event. */
          async function catchUp(id, generation) {
            if (app.catchingUp) return;
            app.catchingUp = true;
            try {
              for (let attempt = 0; attempt < 40 && app.catchUp; attempt += 1) {
                const target = app.catchUp;
                let status;
                try {
                  status = await api(`v1/intents/${enc(id)}`);
                } catch (_) {
                  status = null;
                }
                if (generation !== app.generation || app.route.id !== id) return;
                const reached =
                  status &&
                  ((typeof target.at === 'number' && status.updatedAt >= target.at - 0.001) ||
                    (status.state === target.state && (typeof target.turn !== 'number' || status.turn === target.turn)));
                if (reached) {
                  if (app.catchUp === target) app.catchUp = null;
                  app.intent = status;
                  renderIntent(status, status.terminal ? 'ended' : 'following');
                  continue;
                }
                await sleep(attempt < 10 ? 300 : 1000);
              }
            } finally {
              app.catchingUp = false;
            }
          }

          async function refetchIntent(id, generation) {
            let status;
            try {
              status = await api(`v1/intents/${enc(id)}`);
            } catch (_) {
              return;
            }
            if (generation !== app.generation || app.route.name !== 'intent' || app.route.id !== id) return;
            if (app.intent && status.updatedAt < app.intent.updatedAt) return;
            app.intent = status;
            renderIntent(status, status.terminal ? 'ended' : 'following');
          }

          function field(name, label, value) {
            return [h('dt', null, label), h('dd', { 'data-field': name }, value instanceof Node ? value : orDash(value))];
          }

          function section(title, ...content) {
            return h('section', { class: 'block' }, h('h3', null, title), ...content);
          }

          function resolutionValue(r) {
            if (r.outcome === 'disambiguation') return (r.options || []).map((_, i) => optionTitle(r, i)).join(' | ');
            if (r.outcome === 'unsupported') return orDash(r.reason);
            if ('value' in r) return text(r.value);
            return '';
          }

          function resolutionsTable(resolutions) {
            return h(
              'table',
              { class: 'resolutions' },
              h('thead', null, h('tr', null, ['parameter', 'outcome', 'value / options / reason', 'asked'].map((title) => h('th', null, title)))),
              h(
                'tbody',
                null,
                resolutions.map((r) =>
                  h(
                    'tr',
                    { 'data-parameter': r.parameter, 'data-outcome': r.outcome },
                    h('td', null, h('code', null, parameterLabel(r))),
                    h('td', null, r.outcome),
                    h('td', null, resolutionValue(r)),
                    h('td', null, QUESTIONS.has(r.outcome) ? questionText(r) : '')
                  )
                )
              )
            );
          }

          function answerWords(answer) {
            if (!answer || typeof answer !== 'object') return text(answer);
            return Object.entries(answer)
              .map(([name, value]) => `${name} = ${text(value)}`)
              .join('; ');
          }

          function turnItem(turn) {
            const asked = (turn.question || []).filter((r) => r && QUESTIONS.has(r.outcome));
            const shown = asked.length > 0 ? asked : turn.question || [];
            const hasAnswer = turn.answer !== null && turn.answer !== undefined;
            return h(
              'li',
              { class: 'turn', 'data-turn': turn.turn },
              h('div', { class: 'turn-title' }, `Turn ${turn.turn}`),
              h(
                'div',
                { class: 'question' },
                h('span', { class: 'label' }, 'asked '),
                timeAgo(turn.askedAt),
                h('span', { class: 'muted' }, ` (${localTime(turn.askedAt)})`),
                h(
                  'ul',
                  null,
                  shown.map((r) =>
                    h(
                      'li',
                      null,
                      h('span', { class: 'prompt' }, questionText(r)),
                      r.outcome === 'disambiguation' ? h('span', { class: 'muted' }, ` — options: ${resolutionValue(r)}`) : null
                    )
                  )
                )
              ),
              h(
                'div',
                { class: 'answer' },
                hasAnswer
                  ? [
                      h('span', { class: 'label' }, 'answered '),
                      timeAgo(turn.answeredAt),
                      h('span', { class: 'muted' }, ` (${localTime(turn.answeredAt)})`),
                      h('div', { class: 'answer-words' }, answerWords(turn.answer)),
                    ]
                  : h('span', { class: 'muted' }, 'not answered yet')
              )
            );
          }

          function renderIntent(s, following) {
            if (!s) return;
            const panel = $('#intent');
            panel.dataset.id = s.id;
            panel.dataset.state = s.state;
            const times = [
              ['submitted', 'submittedAt'],
              ['queued', 'queuedAt'],
              ['due', 'dueAt'],
              ['started', 'startedAt'],
              ['finished', 'finishedAt'],
              ['updated', 'updatedAt'],
            ].map(([label, key]) =>
              h(
                'tr',
                { 'data-time': label },
                h('th', { scope: 'row' }, label),
                h('td', null, localTime(s[key])),
                h('td', { class: 'muted' }, relative(s[key]))
              )
            );
            const response = s.response;
            const progress = s.progress;
            const children = [
              h(
                'div',
                { class: 'intent-head' },
                h('h2', null, h('span', { class: 'type' }, s.type), ' ', h('span', { class: 'id' }, s.id)),
                statePill(s.state),
                h('span', { id: 'intent-follow', class: 'muted' }, following === 'following' ? 'following live' : following)
              ),
              section(
                'Rendered the way its app renders it',
                typeof s.view === 'string' && s.view !== ''
                  ? h('pre', { class: 'view' }, s.view)
                  : h('p', { class: 'muted' }, 'Its app renders nothing for it.')
              ),
            ];
            if (s.state === 'needsInput') children.push(section('Its question', waitingIntent(s, 'intent')));
            children.push(
              h(
                'div',
                { class: 'columns' },
                section(
                  'Intent',
                  h(
                    'dl',
                    { class: 'fields' },
                    field('id', 'id', s.id),
                    field('type', 'type', s.type),
                    field('state', 'state', s.state),
                    field('owner', 'owner', s.owner),
                    field('group', 'group', s.group),
                    field('attempts', 'attempts', s.attempts),
                    field('worker', 'worker', s.worker),
                    field('turn', 'turn', s.turn),
                    field('confirmed', 'confirmed', s.confirmed && s.confirmed.length ? s.confirmed.join(', ') : null),
                    progress
                      ? field(
                          'progress',
                          'progress',
                          [typeof progress.fraction === 'number' ? `${Math.round(progress.fraction * 100)} %` : '', text(progress.message)]
                            .join(' ')
                            .trim()
                        )
                      : null
                  )
                ),
                section('Times', h('table', { class: 'times' }, h('tbody', null, times)))
              ),
              section('Parameters', h('pre', { class: 'parameters json' }, s.parameters ? json(s.parameters) : '—')),
              section(
                'Response',
                response
                  ? h(
                      'div',
                      { class: 'response' },
                      h(
                        'dl',
                        { class: 'fields' },
                        field('response-code', 'code', response.code),
                        field('response-message', 'message', response.message)
                      ),
                      response.payload !== undefined && response.payload !== null
                        ? h('pre', { class: 'payload json' }, json(response.payload))
                        : null
                    )
                  : h('p', { class: 'muted' }, 'No response yet.')
              ),
              section('Resolutions', s.resolutions && s.resolutions.length ? resolutionsTable(s.resolutions) : h('p', { class: 'muted' }, 'None.')),
              section(
                'History',
                s.history && s.history.length
                  ? h('ol', { class: 'history' }, s.history.map(turnItem))
                  : h('p', { class: 'muted' }, 'No questions were asked.')
              )
            );
            panel.replaceChildren(...children);
          }

          // ── chart ──────────────────────────────────────────────────────────────────────────────────

          function addFinished(id, state, at, startedAt) {
            const latency = typeof startedAt === 'number' && at >= startedAt ? (at - startedAt) * 1000 : null;
            app.finished.set(`${id}|${state}`, { at, latency });
          }

          /** What finished in the last five minutes before the page opened, from the store. */
          async function seedChart(generation) {
            try {
              const answer = await api('v1/intents?limit=500');
              if (generation !== app.generation) return;
              const since = Date.now() / 1000 - WINDOW_S - BUCKET_S;
              for (const s of (answer && answer.intents) || []) {
                const key = `${s.id}|${s.state}`;
                if (!s.terminal || typeof s.finishedAt !== 'number' || s.finishedAt < since || app.finished.has(key)) continue;
                addFinished(s.id, s.state, s.finishedAt, s.startedAt);
              }
              app.seeded = true;
              drawChart();
            } catch (_) {
              // the live stream fills the chart anyway
            }
          }

          function niceStep(raw) {
            const power = Math.pow(10, Math.floor(Math.log10(raw)));
            const f = raw / power;
            return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
          }

          function axis(max, integer) {
            let step = niceStep(Math.max(max, integer ? 1 : 0.001) / 4);
            if (integer) step = Math.max(1, Math.round(step));
            const top = Math.max(step, Math.ceil(max / step) * step);
            return { step, top };
          }

          function formatMs(ms, step) {
            if (ms >= 1000 && step >= 100) return `${(ms / 1000).toFixed(step >= 1000 ? 0 : 1)} s`;
            const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
            return ms.toFixed(decimals);
          }

          function median(values) {
            const sorted = values.slice().sort((a, b) => a - b);
            return sorted[Math.ceil(sorted.length / 2) - 1];
          }

          function drawChart() {
            const canvas = $('#chart');
            if (!canvas || canvas.offsetParent === null) return;
            const width = canvas.clientWidth || 800;
            const height = canvas.clientHeight || 260;
            const ratio = window.devicePixelRatio || 1;
            if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
              canvas.width = Math.round(width * ratio);
              canvas.height = Math.round(height * ratio);
            }
            const ctx = canvas.getContext('2d');
            ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
            ctx.clearRect(0, 0, width, height);

            const n = WINDOW_S / BUCKET_S;
            const end = Math.ceil(Date.now() / 1000 / BUCKET_S) * BUCKET_S;
            const start = end - WINDOW_S;
            const counts = new Array(n).fill(0);
            const latencies = Array.from({ length: n }, () => []);
            let total = 0;
            for (const [key, e] of app.finished) {
              if (e.at < start - 60) {
                app.finished.delete(key);
                continue;
              }
              if (e.at < start || e.at >= end) continue;
              const i = Math.floor((e.at - start) / BUCKET_S);
              counts[i] += 1;
              total += 1;
              if (e.latency !== null) latencies[i].push(e.latency);
            }
            const p50 = latencies.map((list) => (list.length ? median(list) : null));
            const latencyPoints = p50.filter((v) => v !== null);
            canvas.dataset.events = String(total);
            canvas.dataset.latencyBuckets = String(latencyPoints.length);

            const left = 58;
            const right = 70;
            const top = 34;
            const bottom = 40;
            const pw = Math.max(10, width - left - right);
            const ph = Math.max(10, height - top - bottom);
            const countAxis = axis(Math.max(...counts), true);
            const latencyAxis = axis(latencyPoints.length ? Math.max(...latencyPoints) : 1, false);
            const x = (i) => left + (i / n) * pw;
            const yCount = (v) => top + ph - (v / countAxis.top) * ph;
            const yLatency = (v) => top + ph - (v / latencyAxis.top) * ph;

            ctx.font = '12px system-ui, -apple-system, "Segoe UI", sans-serif';
            ctx.lineWidth = 1;
            // grid and the throughput axis (left)
            ctx.textAlign = 'right';
            ctx.textBaseline = 'middle';
            for (let v = 0; v <= countAxis.top + 1e-9; v += countAxis.step) {
              const y = Math.round(yCount(v)) + 0.5;
              ctx.strokeStyle = '#e5e7eb';
              ctx.beginPath();
              ctx.moveTo(left, y);
              ctx.lineTo(left + pw, y);
              ctx.stroke();
              ctx.fillStyle = THROUGHPUT_COLOUR;
              ctx.fillText(String(Math.round(v)), left - 6, y);
            }
            // the latency axis (right)
            ctx.textAlign = 'left';
            ctx.fillStyle = LATENCY_COLOUR;
            for (let v = 0; v <= latencyAxis.top + 1e-9; v += latencyAxis.step) {
              ctx.fillText(formatMs(v, latencyAxis.step), left + pw + 6, yLatency(v));
            }
            // time axis
            ctx.fillStyle = '#4b5563';
            ctx.textAlign = 'center';
            ctx.textBaseline = 'top';
            for (let k = 0; k <= 5; k += 1) {
              const px = left + (k / 5) * pw;
              ctx.strokeStyle = '#9ca3af';
              ctx.beginPath();
              ctx.moveTo(px, top + ph);
              ctx.lineTo(px, top + ph + 4);
              ctx.stroke();
              ctx.fillText(k === 5 ? 'now' : `−${5 - k} min`, px, top + ph + 6);
            }
            ctx.fillText('time (10-second buckets)', left + pw / 2, top + ph + 22);
            ctx.strokeStyle = '#9ca3af';
            ctx.beginPath();
            ctx.moveTo(left + 0.5, top);
            ctx.lineTo(left + 0.5, top + ph + 0.5);
            ctx.lineTo(left + pw + 0.5, top + ph + 0.5);
            ctx.lineTo(left + pw + 0.5, top);
            ctx.stroke();
            // axis titles
            ctx.save();
            ctx.translate(14, top + ph / 2);
            ctx.rotate(-Math.PI / 2);
            ctx.textBaseline = 'middle';
            ctx.fillStyle = THROUGHPUT_COLOUR;
            ctx.fillText('intents / 10 s', 0, 0);
            ctx.restore();
            ctx.save();
            ctx.translate(width - 12, top + ph / 2);
            ctx.rotate(Math.PI / 2);
            ctx.textBaseline = 'middle';
            ctx.fillStyle = LATENCY_COLOUR;
            ctx.fillText('p50 latency (ms)', 0, 0);
            ctx.restore();
            // throughput bars
            ctx.fillStyle = THROUGHPUT_COLOUR;
            ctx.globalAlpha = 0.75;
            const barWidth = pw / n;
            counts.forEach((c, i) => {
              if (c === 0) return;
              const y = yCount(c);
              ctx.fillRect(x(i) + 1, y, Math.max(1, barWidth - 2), top + ph - y);
            });
            ctx.globalAlpha = 1;
            // latency line, broken where a bucket has no latency
            ctx.strokeStyle = LATENCY_COLOUR;
            ctx.fillStyle = LATENCY_COLOUR;
            ctx.lineWidth = 2;
            ctx.beginPath();
            let drawing = false;
            p50.forEach((v, i) => {
              if (v === null) {
                drawing = false;
                return;
              }
              const px = x(i) + barWidth / 2;
              if (drawing) ctx.lineTo(px, yLatency(v));
              else ctx.moveTo(px, yLatency(v));
              drawing = true;
            });
            ctx.stroke();
            p50.forEach((v, i) => {
              if (v === null) return;
              ctx.beginPath();
              ctx.arc(x(i) + barWidth / 2, yLatency(v), 3, 0, Math.PI * 2);
              ctx.fill();
            });
            ctx.lineWidth = 1;
            // legend
            ctx.textAlign = 'left';
            ctx.textBaseline = 'middle';
            ctx.fillStyle = THROUGHPUT_COLOUR;
            ctx.globalAlpha = 0.75;
            ctx.fillRect(left, 10, 14, 12);
            ctx.globalAlpha = 1;
            ctx.fillStyle = '#111827';
            const first = 'throughput: intents ended per 10 s';
            ctx.fillText(first, left + 20, 16);
            const second = left + 20 + ctx.measureText(first).width + 24;
            ctx.strokeStyle = LATENCY_COLOUR;
            ctx.lineWidth = 2;
            ctx.beginPath();
            ctx.moveTo(second, 16);
            ctx.lineTo(second + 16, 16);
            ctx.stroke();
            ctx.lineWidth = 1;
            ctx.fillStyle = LATENCY_COLOUR;
            ctx.beginPath();
            ctx.arc(second + 8, 16, 3, 0, Math.PI * 2);
            ctx.fill();
            ctx.fillStyle = '#111827';
            ctx.fillText('latency: p50 of end − start, ms', second + 22, 16);
            if (total === 0) {
              ctx.fillStyle = '#6b7280';
              ctx.textAlign = 'center';
              ctx.fillText('No intent ended in the last five minutes.', left + pw / 2, top + ph / 2);
            }
          }

          // ── header: health ─────────────────────────────────────────────────────────────────────────

          function setPill(id, kind, words) {
            const pill = $(id);
            pill.className = `pill pill-${kind}`;
            pill.textContent = words;
          }

          async function refreshHealth() {
            try {
              const response = await fetch('healthz', { cache: 'no-store' });
              let data = {};
              try {
                data = await response.json();
              } catch (_) {
                data = {};
              }
              setPill('#health-gateway', 'up', 'gateway up');
              for (const part of ['broker', 'recorder']) {
                const value = typeof data[part] === 'string' ? data[part] : 'unknown';
                setPill(`#health-${part}`, value === 'up' ? 'up' : value === 'down' ? 'down' : 'wait', `${part} ${value}`);
              }
            } catch (_) {
              setPill('#health-gateway', 'down', 'gateway unreachable');
              setPill('#health-broker', 'wait', 'broker ?');
              setPill('#health-recorder', 'wait', 'recorder ?');
            }
          }

          // ── boot ───────────────────────────────────────────────────────────────────────────────────

          function boot() {
            $('#token-form').addEventListener('submit', (event) => {
              event.preventDefault();
              const token = $('#token-input').value.trim();
              if (token === '') return;
              sessionStorage.setItem(TOKEN_KEY, token);
              if (!location.hash.startsWith('#/')) history.replaceState(null, '', `${location.pathname}${location.search}#/`);
              start();
            });
            $('#change-token').addEventListener('click', () => {
              stop();
              app.token = null;
              sessionStorage.removeItem(TOKEN_KEY);
              setLive('down', 'not signed in');
              showTokenForm('');
            });
            window.addEventListener('hashchange', () => {
              if (takeTokenFromFragment()) start();
              else route();
            });
            window.addEventListener('resize', drawChart);
            setInterval(() => {
              if (!app.token) return;
              if (app.route.name === 'dashboard') scheduleRefresh(PANELS);
              else if (app.intent && !app.intent.terminal) refetchIntent(app.intent.id, app.generation);
            }, FALLBACK_MS);
            setInterval(() => {
              for (const node of document.querySelectorAll('time[data-t]')) node.textContent = relative(Number(node.dataset.t));
            }, 5000);
            setInterval(() => {
              if (app.route.name === 'dashboard') drawChart();
            }, 2000);
            setInterval(refreshHealth, FALLBACK_MS);
            refreshHealth();
            takeTokenFromFragment();
            start();
          }

          if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
          else boot();
        })();
        """#
}

// The hookagent web inspector: one ES module, no framework, no build step.
//
// Everything that comes from the API (model and user text, tool arguments, ids) is put
// into the page as text nodes or textContent, never parsed as HTML; the page's CSP allows
// no inline script either. Contract: docs/service-api.md; guide: docs/inspector.md.

const API = new URL("../", import.meta.url); // the module is served at <root>/inspector/
const TOKEN_KEY = "hookagent-inspector.token";
const SECTION_TITLES = {
  tasks_context: "Tasks",
  permission_context: "Permissions",
  plan_mode_context: "Plan mode",
};
const ROLES = new Set(["user", "assistant", "system", "tool"]);
const TOOL_STATES = new Set(["requested", "streaming", "success", "error", "interrupted", "denied"]);

const ui = {
  token: null,
  user: null,
  session: null, // the open session id
  follow: null, // AbortController of the session's event stream
  watch: null, // {commandId, runId, controller, final}
  refreshTimer: null,
  generation: 0,
  noticeFrom: null, // "refresh": cleared by the next good refresh
  cursor: null,
};

const $ = (id) => document.getElementById(id);

// -- DOM: text only ----------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const json = (value) => JSON.stringify(value, null, 2);
const short = (text, n = 160) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

function notice(message, from = "action") {
  ui.noticeFrom = message ? from : null;
  const box = $("notice");
  box.textContent = message || "";
  box.hidden = !message;
}

function randomKey(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // works outside secure contexts
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// -- the API -----------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, type, message) {
    super(`${type}: ${message}`);
    this.status = status;
    this.type = type;
  }
}

async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const err = (body && body.error) || {};
  if (res.status === 401) signOut("The server refused the token: sign in again.");
  return new ApiError(res.status, err.type || `HTTP ${res.status}`, err.message || res.statusText);
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${ui.token}`, ...extra };
}

async function api(method, path, body) {
  const init = { method, headers: headers({ Accept: "application/json" }), cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(new URL(path, API), init);
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

const sessionPath = (sid, rest = "") => `v1/sessions/${encodeURIComponent(sid)}${rest}`;

// An SSE reader over fetch (EventSource cannot send the Authorization header).
async function* sse(path, signal, lastEventId) {
  const extra = { Accept: "text/event-stream" };
  if (lastEventId !== null) extra["Last-Event-ID"] = String(lastEventId);
  const res = await fetch(new URL(path, API), { headers: headers(extra), signal, cache: "no-store" });
  if (!res.ok) throw await errorOf(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { id: null, event: "message", data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        if (!m || (m[0] === "\r" && m.index === buffer.length - 1)) break; // maybe \r\n split
        const line = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        if (line === "") {
          if (event.data.length) yield { ...event, data: event.data.join("\n") };
          event = { id: null, event: "message", data: [] };
          continue;
        }
        if (line.startsWith(":")) continue; // a comment: keep-alive
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") event.data.push(val);
        else if (field === "event") event.event = val;
        else if (field === "id") event.id = val;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

const pause = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });

// Follows a stream until onEvent says "stop" or the signal aborts; a dropped connection is
// resumed after the last id seen (Last-Event-ID), with a growing pause.
async function follow(path, signal, onEvent) {
  let lastId = null;
  let delay = 250;
  while (!signal.aborted) {
    try {
      for await (const ev of sse(path, signal, lastId)) {
        if (ev.id !== null) lastId = ev.id;
        delay = 250;
        let data = null;
        try {
          data = JSON.parse(ev.data);
        } catch {
          data = ev.data;
        }
        if (onEvent(ev.event, data) === "stop") return;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status < 500) throw err;
    }
    await pause(delay, signal);
    delay = Math.min(delay * 2, 5000);
  }
}

// -- signing in --------------------------------------------------------------------------

async function signIn(token) {
  ui.token = token;
  try {
    const me = await api("GET", "v1/me");
    ui.user = me.user_id;
  } catch (err) {
    ui.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    notice(err.status === 401 ? "That token was refused." : `Sign-in failed: ${err.message}`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $("whoami").textContent = ui.user;
  document.body.dataset.auth = "signed-in";
  notice("");
  await loadSessions(true);
}

function signOut(message) {
  closeSession();
  ui.token = ui.user = null;
  sessionStorage.removeItem(TOKEN_KEY);
  document.body.dataset.auth = "signed-out";
  $("sessions").replaceChildren();
  $("token").value = "";
  notice(message || "");
}

// -- sessions ----------------------------------------------------------------------------

async function loadSessions(reset) {
  if (reset) {
    ui.cursor = null;
    $("sessions").replaceChildren();
  }
  const query = new URLSearchParams({ limit: "100" });
  if (ui.cursor) query.set("cursor", ui.cursor);
  const page = await api("GET", `v1/sessions?${query}`);
  for (const { session_id: sid } of page.sessions) {
    const button = el("button", { type: "button", onclick: () => openSession(sid) }, sid);
    $("sessions").append(el("li", { dataset: { sessionId: sid } }, button));
  }
  ui.cursor = page.next_cursor;
  $("more-sessions").hidden = !ui.cursor;
  markCurrentSession();
}

function markCurrentSession() {
  for (const li of $("sessions").children) {
    li.classList.toggle("current", li.dataset.sessionId === ui.session);
  }
}

function closeSession() {
  if (ui.follow) ui.follow.abort();
  if (ui.watch) ui.watch.controller.abort();
  ui.follow = ui.watch = ui.session = null;
  $("session-view").hidden = true;
  $("no-session").hidden = false;
}

async function openSession(sid) {
  closeSession();
  ui.session = sid;
  $("session").dataset.session = sid;
  $("session-title").textContent = sid;
  for (const id of ["conversation", "live-events", "pending", "runs", "sections"]) {
    $(id).replaceChildren();
  }
  setLive(null, "idle", "no run watched");
  $("session-view").hidden = false;
  $("no-session").hidden = true;
  markCurrentSession();
  const summary = await refresh();
  if (ui.session !== sid) return;
  followSession(sid, summary ? summary.last_seq : 0);
  const current = summary && summary.current;
  if (current && !["completed", "suspended", "interrupted", "failed", "rejected"].includes(current.status)) {
    watchRun(current.command_id);
  }
}

// The session's log stream: new events refresh the views; a run started elsewhere
// (another tab, the CLI) is watched when nothing else is.
function followSession(sid, afterSeq) {
  const controller = new AbortController();
  ui.follow = controller;
  const path = sessionPath(sid, `/events?after=${afterSeq}&follow=true`);
  follow(path, controller.signal, (name, data) => {
    if (ui.session !== sid) return "stop";
    if (name === "SESSION_RUN_STARTED" && data.run_id && (!ui.watch || ui.watch.final)) {
      watchRun(commandOf(data.run_id));
    }
    scheduleRefresh();
    return undefined;
  }).catch((err) => notice(`The session stream stopped: ${err.message}`));
}

const commandOf = (runId) => runId.slice(0, runId.lastIndexOf(".")) || runId;

function scheduleRefresh() {
  clearTimeout(ui.refreshTimer);
  ui.refreshTimer = setTimeout(() => refresh().catch((err) => notice(err.message)), 100);
}

// Re-reads the open session. Each part renders on its own (one failing read leaves the
// others current), and an older refresh finishing late never overwrites a newer one.
async function refresh() {
  const sid = ui.session;
  if (!sid) return null;
  const generation = ++ui.generation;
  const [summary, state, runs, pending] = await Promise.allSettled([
    api("GET", sessionPath(sid)),
    api("GET", sessionPath(sid, "/state")),
    api("GET", sessionPath(sid, "/runs")),
    api("GET", sessionPath(sid, "/interactions")),
  ]);
  if (ui.session !== sid || ui.generation !== generation) return null;
  const failed = [summary, state, runs, pending]
    .filter((r) => r.status === "rejected" && r.reason.status !== 404)
    .map((r) => r.reason.message);
  if (summary.status === "rejected" && summary.reason.status === 404) {
    $("session-summary").textContent = "A new session: send a message to start it.";
  } else if (summary.status === "fulfilled") {
    const s = summary.value;
    $("session-summary").textContent =
      `${s.messages} messages · ${s.pending} pending · log seq ${s.last_seq}` +
      (s.current ? ` · latest: ${s.current.kind} ${s.current.status}` : "");
    markListed(sid);
  }
  if (state.status === "fulfilled") {
    renderConversation(state.value.sections.context || []);
    renderSections(state.value.sections);
  }
  if (runs.status === "fulfilled") {
    renderRuns(runs.value.runs);
    if (!ui.watch || ui.watch.final) {
      const running = runs.value.runs.find((t) => t.status === "running" && t.run_id);
      $("interrupt").disabled = !running;
      $("interrupt").dataset.runId = running ? running.run_id : "";
    }
  }
  if (pending.status === "fulfilled") renderPending(pending.value.interactions);
  if (failed.length) notice(`Could not read the session: ${failed.join("; ")}`, "refresh");
  else if (ui.noticeFrom === "refresh") notice("");
  return summary.status === "fulfilled" ? summary.value : null;
}

function markListed(sid) {
  const known = [...$("sessions").children].some((li) => li.dataset.sessionId === sid);
  if (!known) {
    const button = el("button", { type: "button", onclick: () => openSession(sid) }, sid);
    $("sessions").prepend(el("li", { dataset: { sessionId: sid } }, button));
    markCurrentSession();
  }
}

// -- the conversation --------------------------------------------------------------------

function renderConversation(messages) {
  $("conversation").replaceChildren(...messages.map(renderMessage));
}

function renderMessage(msg) {
  const role = ROLES.has(msg.role) ? msg.role : "other";
  const meta = msg.metadata || {};
  const content = typeof msg.content === "string" ? [{ type: "text", text: msg.content }] : msg.content || [];
  return el(
    "li",
    { class: `msg role-${role}`, dataset: { role } },
    el("div", { class: "msg-head" }, msg.role, msg.name ? ` · ${msg.name}` : "",
      meta.generate_reason ? el("span", { class: "badge" }, meta.generate_reason) : null),
    content.map(renderBlock),
  );
}

function stateOf(value, fallback) {
  const s = value || fallback;
  return TOOL_STATES.has(s) ? s : "other";
}

function renderBlock(block) {
  switch (block.type) {
    case "text":
      return el("p", { class: "text" }, block.text);
    case "thinking":
      return el("details", { class: "thinking" }, el("summary", {}, "thinking"), el("p", { class: "text" }, block.thinking));
    case "tool_use": {
      const state = stateOf(block.state, "requested");
      return el("div", { class: "tool-call", dataset: { tool: block.name, toolUseId: block.id } },
        el("div", {}, "→ ", el("strong", {}, block.name), " ", el("span", { class: `badge state-${state}` }, block.state || "requested"),
          el("span", { class: "muted" }, ` ${block.id}`)),
        el("pre", { class: "args" }, json(block.input ?? {})));
    }
    case "tool_result": {
      const state = stateOf(block.state, "success");
      return el("div", { class: `tool-result state-${state}`, dataset: { tool: block.name, toolUseId: block.id, state } },
        el("div", {}, "← ", el("strong", {}, block.name), " ", el("span", { class: `badge state-${state}` }, block.state || "success")),
        (block.output || []).map(renderOutput));
    }
    default:
      return el("pre", { class: "block-other" }, json(block));
  }
}

function renderOutput(part) {
  if (part.type === "text") return el("pre", { class: "output" }, part.text);
  if (part.type === "image" || part.type === "data") {
    // By reference only: the URL is shown, never loaded.
    return el("p", { class: "muted" }, `${part.type}: ${part.name || ""} ${part.media_type || ""} ${part.url || ""}`);
  }
  return el("pre", { class: "output" }, json(part));
}

// -- sections, runs, pending interactions -------------------------------------------------

function renderSections(sections) {
  const boxes = Object.entries(SECTION_TITLES).map(([name, title]) =>
    el("details", { open: true, dataset: { section: name } }, el("summary", {}, title),
      el("pre", {}, name in sections ? json(sections[name]) : "(not set)")));
  const others = Object.keys(sections).filter((n) => n !== "context" && !(n in SECTION_TITLES)).sort();
  for (const name of others) {
    boxes.push(el("details", { dataset: { section: name } }, el("summary", {}, name), el("pre", {}, json(sections[name]))));
  }
  $("sections").replaceChildren(...boxes);
}

function renderRuns(runs) {
  $("runs").replaceChildren(...runs.slice().reverse().map((t) =>
    el("li", { dataset: { commandId: t.command_id, status: t.status } },
      el("button", { type: "button", title: "watch its events", onclick: () => watchRun(t.command_id) },
        `${t.kind} · ${t.status}`),
      " ", el("span", { class: "muted" }, t.command_id),
      t.generate_reason ? el("span", { class: "badge" }, t.generate_reason) : null,
      t.error_type ? el("span", { class: "badge state-error" }, `${t.error_type}: ${t.error || ""}`) : null,
      t.reply_text ? el("div", { class: "reply" }, short(t.reply_text)) : null)));
}

function renderPending(items) {
  $("no-pending").hidden = items.length > 0;
  $("pending").replaceChildren(...items.map((item) => {
    const reason = el("input", { type: "text", placeholder: "reason (optional)", "aria-label": "reason" });
    const answer = (body, buttons) => async () => {
      for (const b of buttons) b.disabled = true;
      try {
        const path = sessionPath(ui.session, `/interactions/${encodeURIComponent(item.tool_use_id)}`);
        const view = await api("POST", path, { answer: body(), idempotency_key: randomKey("ui-") });
        watchRun(view.command_id);
      } catch (err) {
        notice(`Could not answer: ${err.message}`);
        for (const b of buttons) b.disabled = false;
      }
    };
    const approve = el("button", { type: "button", class: "approve" }, "Approve");
    const always = el("button", { type: "button", class: "approve always", title: "approve, and allow this tool from now on" }, "Approve always");
    const reject = el("button", { type: "button", class: "reject" }, "Reject");
    const buttons = [approve, always, reject];
    approve.addEventListener("click", answer(() => ({ kind: "approve", remember: false }), buttons));
    always.addEventListener("click", answer(() => ({ kind: "approve", remember: true }), buttons));
    reject.addEventListener("click", answer(() => ({ kind: "reject", reason: reason.value || "rejected from the inspector" }), buttons));
    return el("li", { class: "ask", dataset: { requestId: item.tool_use_id, tool: item.tool } },
      el("p", { class: "prompt" }, item.prompt || `${item.tool}?`),
      el("div", { class: "muted" }, `${item.kind} · ${item.tool} · ${item.tool_use_id}`),
      el("pre", { class: "args" }, json(item.input ?? {})),
      el("div", { class: "actions" }, approve, always, reject, reason));
  }));
}

// -- the live run ------------------------------------------------------------------------

function setLive(runId, status, title) {
  $("live-run").dataset.status = status;
  $("live-run").dataset.runId = runId || "";
  $("live-status").textContent = status === "idle" ? "" : status;
  $("live-title").textContent = title;
  const running = status === "running" && Boolean(runId);
  $("interrupt").disabled = !running;
  $("interrupt").dataset.runId = running ? runId : "";
}

function describe(data) {
  const p = (data && data.payload) || {};
  const m = p.m;
  if (m && Array.isArray(m.content)) {
    const parts = m.content.map((b) =>
      b.type === "text" ? short(b.text, 80)
        : b.type === "tool_use" ? `→ ${b.name}(${short(JSON.stringify(b.input ?? {}), 60)})`
          : b.type === "tool_result" ? `← ${b.name} ${b.state || "success"}` : b.type);
    return `${m.role}: ${parts.join(" ")}`;
  }
  if (p.name) return p.name;
  return short(JSON.stringify(p), 100);
}

function appendEvent(li) {
  const list = $("live-events");
  const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  list.append(li);
  if (atEnd) list.scrollTop = list.scrollHeight; // follow the stream unless scrolled back
}

// Watches one command's run stream: SESSION_RUN_STARTED first, SESSION_TASK_FINAL last.
function watchRun(commandId) {
  if (ui.watch && ui.watch.commandId === commandId && !ui.watch.final) return;
  if (ui.watch) ui.watch.controller.abort();
  const watch = { commandId, runId: null, controller: new AbortController(), final: false };
  ui.watch = watch;
  $("live-events").replaceChildren();
  setLive(null, "waiting", commandId);
  follow(sessionPath(ui.session, `/runs/${encodeURIComponent(commandId)}/events`), watch.controller.signal, (name, data) => {
    if (ui.watch !== watch) return "stop";
    if (name === "SESSION_TASK_FINAL") {
      watch.final = true;
      setLive(watch.runId, data.status, `${data.kind} ${commandId}`);
      appendEvent(el("li", { dataset: { event: name } }, el("strong", {}, name), ` ${data.status}`,
        data.generate_reason ? ` (${data.generate_reason})` : ""));
      scheduleRefresh();
      return "stop";
    }
    if (name === "SESSION_RUN_STARTED") {
      watch.runId = data.run_id;
      setLive(data.run_id, "running", data.run_id);
    }
    appendEvent(el("li", { dataset: { event: name, seq: data.seq } },
      el("span", { class: "muted" }, `#${data.seq} `), el("strong", {}, name), ` ${describe(data)}`));
    return undefined;
  }).catch((err) => {
    if (ui.watch === watch) setLive(watch.runId, "error", `${commandId}: ${err.message}`);
  });
}

async function interrupt() {
  const button = $("interrupt");
  const expected = button.dataset.runId;
  if (!expected) return;
  button.disabled = true;
  try {
    await api("POST", sessionPath(ui.session, "/interrupt"), {
      expected_run_id: expected, idempotency_key: randomKey("ui-"),
    });
    $("live-status").textContent = "interrupting";
  } catch (err) {
    notice(err.type === "StaleRun" ? "Another run started meanwhile: nothing was interrupted."
      : err.type === "NotRunning" ? "The run had already ended." : `Interrupt failed: ${err.message}`);
    scheduleRefresh();
  }
}

async function send(event) {
  event.preventDefault();
  const input = $("input").value;
  if (!input.trim() || !ui.session) return;
  $("send").disabled = true;
  try {
    const view = await api("POST", sessionPath(ui.session, "/runs"), { input, idempotency_key: randomKey("ui-") });
    $("input").value = "";
    watchRun(view.command_id);
    scheduleRefresh();
  } catch (err) {
    notice(`Could not send: ${err.message}`);
  } finally {
    $("send").disabled = false;
  }
}

// -- wiring ------------------------------------------------------------------------------

function guard(fn) {
  return (...args) => Promise.resolve(fn(...args)).catch((err) => notice(err.message));
}

$("sign-in-form").addEventListener("submit", guard((event) => {
  event.preventDefault();
  return signIn($("token").value.trim());
}));
$("sign-out").addEventListener("click", () => signOut(""));
$("open-session-form").addEventListener("submit", guard((event) => {
  event.preventDefault();
  return openSession($("session-id").value.trim());
}));
$("refresh-sessions").addEventListener("click", guard(() => loadSessions(true)));
$("more-sessions").addEventListener("click", guard(() => loadSessions(false)));
$("composer").addEventListener("submit", guard(send));
$("input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("composer").requestSubmit();
});
$("interrupt").addEventListener("click", guard(interrupt));

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) guard(signIn)(saved);
document.body.dataset.ready = "true";

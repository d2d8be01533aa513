// srez view: the runs list, the leaderboard, the matrix and one run, in plain JavaScript.
//
// Everything the run wrote reaches the DOM as text (textContent), never as markup; the one
// exception is the assistant's Markdown, which the server renders and sanitises (nh3) first.
// Settings (divider position, Parsed/Raw, the last runs opened) live in this browser's storage.

const RECENT_KEY = "srez-view-recent";
const SETTINGS_KEY = "srez-view-settings";
const RECENT_MAX = 10;
let config = { hosted: true, live: false, terminal: false };
let closeCurrent = () => {};
let picked = []; // the finished runs ticked for Compare (two at most, the latest two kept)

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function settings() {
  try { return JSON.parse(localStorage.getItem(SETTINGS_KEY)) || {}; } catch { return {}; }
}
function saveSetting(key, value) {
  const all = settings(); all[key] = value; localStorage.setItem(SETTINGS_KEY, JSON.stringify(all));
}
function recent() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY)) || []; } catch { return []; }
}
function pushRecent(runId) {
  const list = [runId, ...recent().filter((id) => id !== runId)].slice(0, RECENT_MAX);
  localStorage.setItem(RECENT_KEY, JSON.stringify(list));
}

// ------------------------------------------------------------------ the credential
// The address srez view printed carries a token that is good once: the page trades it for a
// session secret, kept in this origin's storage and sent in a header on the page's own requests
// (never a cookie, which a browser would send to every port of this host). A WebSocket or a
// download carries no header: it opens with a ticket good once, for its one path.
const SECRET_KEY = "srez-view-secret";

async function signIn() {
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  if (token === null) return;
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
  const response = await fetch("/api/session", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  if (response.ok) localStorage.setItem(SECRET_KEY, (await response.json()).secret);
}

function api(url, options = {}) {
  const headers = { ...(options.headers || {}), Authorization: `Bearer ${localStorage.getItem(SECRET_KEY) || ""}` };
  return fetch(url, { ...options, headers, credentials: "omit" });
}

async function ticketed(path) {
  const response = await api("/api/ticket", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ path }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return `${path}?ticket=${encodeURIComponent(body.ticket)}`;
}

function socket(path, onOpen) {
  // A WebSocket on `path`, opened once its ticket is in: `onOpen(ws)` wires it up. The
  // returned object closes it, whether or not it opened yet.
  let ws = null; let closed = false;
  ticketed(path).then((url) => {
    if (closed) return;
    ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${url}`);
    onOpen(ws);
  }).catch((e) => show(el("p", { class: "error", id: "run-error", text: e.message })));
  return { close: () => { closed = true; if (ws) ws.close(); }, send: (data) => ws && ws.readyState === WebSocket.OPEN && ws.send(data) };
}

function downloadLink(path, text) {
  return el("a", { href: "#", class: "download", onclick: async (event) => {
    event.preventDefault();
    const link = el("a", { href: await ticketed(path), download: "" });
    document.body.append(link); link.click(); link.remove();
  } }, text);
}

async function getJSON(url) {
  const response = await api(url);
  if (response.status === 401) throw new Error("Not signed in: open the address srez view printed (each address opens once; start srez view again for a new one).");
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "-" : Number(value).toFixed(digits);
}
function yesNo(value) { return value === true ? "yes" : value === false ? "no" : "-"; }
function main() { return document.getElementById("main"); }
function show(...nodes) { main().replaceChildren(...nodes.filter((n) => n !== null && n !== undefined)); }
function here(name) {
  for (const a of document.querySelectorAll("#bar nav a")) a.classList.toggle("here", a.id === `nav-${name}`);
}

// ------------------------------------------------------------------ the runs list
const COLUMNS = [
  ["run_id", "run", false], ["task_id", "task", true], ["model", "model", true], ["agent", "agent", true],
  ["status", "status", true], ["reward", "reward", true], ["steps", "steps", true], ["finished_at", "finished", true],
];
const TABS = [["running", "Running"], ["exited", "Exited"], ["finished", "Finished"], ["all", "All"], ["recent", "Recent"]];

async function runsPage(params) {
  here("runs");
  const q = new URLSearchParams(params);
  const tab = q.get("tab") || "all";
  const api = new URLSearchParams(q);
  if (tab === "recent") { api.set("tab", "all"); api.set("ids", recent().join(",")); }
  let data;
  try { data = await getJSON(`/api/runs?${api}`); } catch (e) { show(el("p", { class: "error", text: e.message })); return; }
  const go = (changes) => {
    const next = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) { if (v === "" || v === null) next.delete(k); else next.set(k, v); }
    if (!("page" in changes)) next.delete("page");
    location.hash = `#/runs?${next}`;
  };
  const tabs = el("div", { class: "tabs", id: "tabs" }, TABS.map(([key, label]) => {
    const count = key === "recent" ? recent().length : data.counts[key];
    return el("button", { class: key === tab ? "on" : "", "data-tab": key, onclick: () => go({ tab: key }) },
      `${label} (${count ?? 0})`);
  }));
  const menu = (name, label) => el("select", { id: `filter-${name}`, onchange: (e) => go({ [name]: e.target.value }) },
    el("option", { value: "", text: `any ${label}` }),
    data.facets[name].map((v) => el("option", { value: v, selected: q.get(name) === v, text: v })));
  const status = el("select", { id: "filter-status", onchange: (e) => go({ status: e.target.value }) },
    ["", "running", "exited", "ok", "error", "resolved", "unresolved"].map((v) =>
      el("option", { value: v, selected: (q.get("status") || "") === v, text: v || "any status" })));
  const text = el("input", { id: "filter-text", type: "search", placeholder: "filter text…", value: q.get("q") || "" });
  text.addEventListener("keydown", (e) => { if (e.key === "Enter") go({ q: text.value }); });
  const sort = q.get("sort") || "finished_at";
  const order = q.get("order") || "desc";
  const head = el("tr", {}, el("th", { title: "tick two finished runs to compare them" }, "⇆"), COLUMNS.map(([key, label, sortable]) => el("th", {
    class: [sortable ? "sortable" : "", key === sort ? "sorted" : "", key === sort && order === "asc" ? "asc" : "",
      key === "reward" || key === "steps" ? "num" : ""].join(" ").trim(),
    onclick: sortable ? () => go({ sort: key, order: key === sort && order === "desc" ? "asc" : "desc" }) : null,
  }, label)));
  const compare = compareButton();
  const rows = data.rows.map((r) => el("tr", { class: "run-row", "data-run": r.run_id },
    el("td", {}, r.state === "finished" ? pickBox(r.run_id, compare) : null),
    el("td", {}, el("a", { href: `#/run/${encodeURIComponent(r.run_id)}`, text: r.run_id })),
    el("td", { text: r.task_id }), el("td", { text: r.model }), el("td", { text: r.agent }),
    el("td", { class: r.state === "finished" ? (r.resolved ? "resolved" : r.status === "error" ? "error-status" : "") : "muted",
      text: r.state === "finished" ? `${r.status}${r.resolved ? " · resolved" : ""}` : r.state }),
    el("td", { class: "num", text: fmt(r.reward) }), el("td", { class: "num", text: r.steps ?? "-" }),
    el("td", { class: "muted", text: r.finished_at || "" })));
  const pager = el("div", { class: "pager" },
    el("button", { id: "prev", disabled: data.page <= 1, onclick: () => go({ page: data.page - 1 }) }, "‹ prev"),
    el("span", { id: "page-info", text: `page ${data.page} of ${data.pages} · ${data.total} runs` }),
    el("button", { id: "next", disabled: data.page >= data.pages, onclick: () => go({ page: data.page + 1 }) }, "next ›"));
  show(tabs, el("div", { class: "filters" }, menu("task", "task"), menu("model", "model"), menu("agent", "agent"), status, text, compare),
    el("table", { id: "runs" }, el("thead", {}, head), el("tbody", {}, rows)), pager);
  if (config.live) {
    // live runs come and go: look again every two seconds, redrawing only when the list changed
    const seen = JSON.stringify(data);
    let timer = null;
    const poll = async () => {
      const now = await getJSON(`/api/runs?${api}`).catch(() => null);
      if (now && JSON.stringify(now) !== seen && document.activeElement !== text) await runsPage(params);
      else timer = setTimeout(poll, 2000);
    };
    timer = setTimeout(poll, 2000);
    const previous = closeCurrent;
    closeCurrent = () => { clearTimeout(timer); previous(); };
  }
}

// ------------------------------------------------------------------ two runs side by side
function compareButton() {
  const button = el("button", { id: "compare", onclick: () => {
    if (picked.length === 2) location.hash = `#/compare?${new URLSearchParams({ a: picked[0], b: picked[1] })}`;
  } });
  const draw = () => { button.disabled = picked.length !== 2; button.textContent = `Compare (${picked.length}/2)`; };
  button.redraw = draw;
  draw();
  return button;
}

function pickBox(runId, button) {
  const box = el("input", { type: "checkbox", class: "pick", "data-run": runId, checked: picked.includes(runId),
    title: "compare this run with another", onchange: () => {
      picked = picked.filter((id) => id !== runId);
      if (box.checked) picked = [...picked, runId].slice(-2);
      for (const other of document.querySelectorAll("input.pick")) other.checked = picked.includes(other.dataset.run);
      button.redraw();
    } });
  return box;
}

async function comparePage(params) {
  here("runs");
  const q = new URLSearchParams(params);
  const data = await getJSON(`/api/compare?${new URLSearchParams({ a: q.get("a") || "", b: q.get("b") || "" })}`);
  const [a, b] = data.runs;
  const pct = (v) => v === null || v === undefined ? "-" : `${v}`;
  const figures = [
    ["task", (r) => `${r.task_id}${r.difficulty ? ` (${r.difficulty})` : ""}`],
    ["model", (r) => r.model || "-"], ["backend", (r) => r.backend || "-"],
    ["reward", (r) => fmt(r.reward)], ["resolved", (r) => yesNo(r.resolved)], ["passed", (r) => yesNo(r.passed)],
    ["steps", (r) => `${pct(r.steps)}${r.max_steps ? ` of ${r.max_steps}` : ""}`],
    ["time", (r) => r.duration_s === null ? "-" : `${r.duration_s.toFixed(1)} s`],
    ["ended by", (r) => r.end_reason || "-"], ["tool calls", (r) => `${r.tool_calls}`],
    ["tokens in / out", (r) => r.usage ? `${r.usage.input} / ${r.usage.output}` : "-"],
    ["diff", (r) => `${r.diff.files} file(s), +${r.diff.added} -${r.diff.removed}`],
    ["similarity to the fix", (r) => r.similarity || "-"],
  ];
  const row = (label, cells, cls = "") => el("tr", { class: `${cls}${cells[0] !== cells[1] ? " differs" : ""}`.trim(), "data-row": label },
    el("th", { text: label }), cells.map((c) => el("td", {}, c)));
  const mark = { pass: "✓", fail: "✗" };
  const body = [
    ...figures.map(([label, get]) => row(label, [get(a), get(b)])),
    ...data.checks.map((c) => el("tr", { class: `check-row${c.states[0] !== c.states[1] ? " differs" : ""}`, "data-check": c.name },
      el("th", { text: `check ${c.name}` }),
      c.states.map((state, i) => el("td", {}, el("span", { class: state === "pass" ? "pass" : state === "fail" ? "fail" : "na", text: `${mark[state] || "–"} ${state}` }),
        c.reasons[i].length ? el("div", { class: "reasons muted" }, c.reasons[i].map((r) => el("div", { text: r }))) : null)))),
    ...data.files.map((f) => row(`file ${f.path}`, f.sides.map((s) => s || "untouched"), "file-row")),
  ];
  const headCell = (r) => el("th", {}, el("a", { href: `#/run/${encodeURIComponent(r.run_id)}`, text: r.agent || "?" }),
    el("div", { class: "muted", text: r.run_id }));
  show(el("h2", { text: "Two runs side by side" }),
    data.same_task ? null : el("p", { class: "error", id: "compare-note", text: "These runs are of different tasks." }),
    el("p", { class: "muted", text: "Rows that differ are marked; a run's name opens it." }),
    el("table", { id: "compare", class: "compare" }, el("thead", {}, el("tr", {}, el("th", {}), headCell(a), headCell(b))), el("tbody", {}, body)));
}

// ------------------------------------------------------------------ leaderboard and matrix
async function leaderboardPage() {
  here("leaderboard");
  const data = await getJSON("/api/leaderboard");
  if (!data.report) { show(el("p", { class: "muted", text: "No graded runs yet." })); return; }
  const report = data.report;
  const byLabel = Object.fromEntries(report.agents.map((a) => [a.model && a.model !== "none" ? `${a.agent} (${a.model})` : a.agent, a]));
  const ci = (agg, key, pct) => {
    const i = agg.ci && agg.ci[key];
    const v = pct ? `${(agg[key] * 100).toFixed(1)}%` : agg[key].toFixed(3);
    return i ? `${v} [${pct ? (i[0] * 100).toFixed(0) : i[0].toFixed(2)}, ${pct ? (i[1] * 100).toFixed(0) : i[1].toFixed(2)}]` : v;
  };
  const rows = report.leaderboard.map((label, i) => {
    const agg = byLabel[label].overall;
    const floor = report.floors.includes(label);
    return el("tr", { class: "board-row" }, el("td", { class: "num", text: i + 1 }),
      el("td", { text: floor ? `${label} (floor)` : label }), el("td", { class: "num", text: agg.n }),
      el("td", { text: ci(agg, "mean_reward", false) }), el("td", { text: ci(agg, "resolved_at_1", true) }),
      el("td", { text: ci(agg, "passed_at_1", true) }), el("td", { class: "num", text: agg.mean_steps.toFixed(1) }));
  });
  show(el("h2", { text: "Leaderboard" }),
    el("p", { class: "muted", text: `${data.runs} graded runs${data.unreadable ? ` (${data.unreadable} unreadable left out)` : ""} · 95 % intervals · a floor is a trivial agent: scores below it are noise` }),
    el("table", { id: "leaderboard" }, el("thead", {}, el("tr", {}, ["rank", "agent", "n", "reward", "resolved@1", "passed@1", "steps"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows)));
}

async function matrixPage() {
  here("matrix");
  const data = await getJSON("/api/matrix");
  const compare = compareButton();
  const head = el("tr", {}, el("th", { text: "task" }), data.agents.map((a) => el("th", { text: a })));
  const rows = data.tasks.map((task, i) => el("tr", { "data-task": task }, el("td", { text: task }), data.cells[i].map((cell) =>
    el("td", { class: cell ? (cell.resolved ? "resolved num" : "num") : "na num" },
      cell ? el("span", { class: "cell" }, pickBox(cell.run_id, compare),
        el("a", { href: `#/run/${encodeURIComponent(cell.run_id)}`, title: `${cell.runs} run(s)`, text: fmt(cell.reward, 2) })) : "·"))));
  show(el("h2", { text: "Task × agent" }),
    el("p", { class: "muted" }, "Each cell is the latest run of that pair; it opens the run. Tick two cells (two agents on one task) to ", compare, "."),
    el("table", { class: "matrix", id: "matrix" }, el("thead", {}, head), el("tbody", {}, rows)));
}

// ------------------------------------------------------------------ one run
function itemNode(item) {
  const node = el("div", { class: `item ${item.kind}`, "data-seq": item.seq, "data-kind": item.kind });
  const head = el("div", { class: "head" }, el("span", { class: "title", text: item.title }),
    item.status ? el("span", { class: `status status-${item.status.replace(/\s+/g, "-")}`, text: item.status }) : null,
    item.meta ? el("span", { class: "meta", text: item.meta }) : null);
  node.append(head);
  if (item.kind === "assistant" && item.html !== undefined) {
    const body = el("div", { class: "body md" });
    body.innerHTML = item.html; // rendered and sanitised by the server (nh3)
    node.append(body);
  } else if (item.kind === "thinking") {
    node.append(el("details", {}, el("summary", { text: "show thinking" }), el("div", { class: "body", text: item.body })));
  } else if (item.body) {
    const body = el("div", { class: "body" });
    const cut = item.limit !== null && item.body.length > item.limit;
    const render = (open) => {
      body.replaceChildren(open || !cut ? item.body : `${item.body.slice(0, item.limit)}… `);
      if (cut) body.append(el("button", { class: "more", onclick: () => render(!open) }, open ? "Show less" : `Show more (${item.body.length - item.limit} chars)`));
    };
    render(false);
    node.append(body);
  }
  if (item.cut) node.append(el("p", { class: "muted cut", text: `(${item.cut} more characters: download dialog.jsonl for the whole entry)` }));
  return node;
}

function diffNode(cards, raw) {
  if (raw !== null) return el("pre", { class: "raw", id: "raw-diff", text: raw || "(no changes)" });
  if (!cards.length) return el("p", { class: "muted", text: "No changes." });
  return el("div", {}, cards.map((c) => el("div", { class: "card", "data-path": c.path },
    el("div", { class: "path" }, el("span", { text: c.status }), el("span", { text: c.path }),
      el("span", { class: "green", text: `+${c.added}` }), el("span", { class: "red", text: `-${c.removed}` })),
    el("pre", { class: "diff" }, c.lines.map(([kind, text]) => el("span", { class: kind, text }))),
    c.lines_cut ? el("p", { class: "muted cut", text: `(${c.lines_cut} more lines in patch.diff)` }) : null)));
}

function changesNode(changes, runId, state) {
  const side = changes.sides.includes(state.side) ? state.side : "agent";
  const buttons = el("div", { class: "tabs" },
    changes.sides.map((s) => el("button", { class: s === side ? "on" : "", "data-side": s, onclick: () => { state.side = s; state.redraw(); } },
      { agent: "Agent", truth: "Truth", split: "Split" }[s])),
    el("button", { id: "toggle-raw", onclick: () => { state.raw = !state.raw; saveSetting("raw", state.raw); state.redraw(); } }, state.raw ? "Parsed" : "Raw"),
    downloadLink(`/api/runs/${encodeURIComponent(runId)}/download/patch.diff`, "download patch.diff"));
  const parts = [buttons];
  if (changes.patch_cut) parts.push(el("p", { class: "muted cut", id: "patch-cut", text: `The patch is longer than the view reads: ${changes.patch_cut} more bytes in patch.diff (the files below are its first ones).` }));
  if (changes.similarity) parts.push(el("p", { id: "similarity", class: changes.similarity.colour, text: changes.similarity.text }));
  const shown = side === "truth" ? changes.truth : changes.agent;
  const t = shown.totals;
  parts.push(el("ul", { class: "files", id: "files" }, shown.cards.map((c) => el("li", { text: `${c.status} ${c.path} +${c.added} -${c.removed}` }))),
    el("p", { class: "muted", text: `${t.files} file(s), +${t.added} -${t.removed}` }),
    shown.cards_cut ? el("p", { class: "muted cut", id: "cards-cut", text: `${shown.cards_cut} more file(s) not shown: download patch.diff` }) : null,
    state.raw && shown.raw_cut ? el("p", { class: "muted cut", text: `(the raw diff is cut: ${shown.raw_cut} more characters in patch.diff)` }) : null);
  if (side === "truth") parts.push(el("div", { class: "banner", text: "REFERENCE FIX (the task's ground truth, not the agent's work)" }));
  if (side === "split") {
    parts.push(el("table", { id: "split" }, el("tr", {}, el("th", { text: "agent" }), el("th", { text: "reference" })),
      changes.split.map(([path, a, r]) => el("tr", {}, el("td", {}, a ? diffNode([a], null) : el("span", { class: "muted", text: `(${path} untouched)` })),
        el("td", {}, r ? diffNode([r], null) : el("span", { class: "muted", text: `(${path} untouched)` }))))));
  } else {
    parts.push(diffNode(shown.cards, state.raw ? shown.raw : null));
  }
  return el("div", { id: "changes" }, parts);
}

function evaluationNode(ev, runId) {
  if (!ev.graded && !ev.error) return el("p", { class: "muted", id: "evaluation", text: "Not graded yet." });
  const checks = el("ul", { class: "checks" }, ev.checks.map((c) => el("li", { class: "check", "data-check": c.name },
    el("span", { class: c.state === "pass" ? "pass" : c.state === "fail" ? "fail" : "na", text: `${c.state === "pass" ? "✓" : c.state === "fail" ? "✗" : "–"} ${c.name}` }),
    c.reasons.length ? el("div", { class: "reasons" }, c.reasons.map((r) => el("div", { text: r }))) : null)));
  const parts = [el("p", { id: "reward", text: `reward ${fmt(ev.reward)} · resolved ${yesNo(ev.resolved)} · passed ${yesNo(ev.passed)}` }),
    el("p", { class: "muted", text: `steps ${ev.steps ?? "-"}${ev.max_steps ? ` of ${ev.max_steps}` : ""} · time ${ev.duration_s === null ? "-" : `${ev.duration_s.toFixed(1)} s`}${ev.end_reason ? ` · ended by ${ev.end_reason}` : ""}${ev.timed_out ? " (time limit)" : ""}` }),
    checks];
  if (ev.components.length) parts.push(el("p", { class: "muted", text: ev.components.map((c) => `${c.name} ${c.value.toFixed(2)}${c.weight === null ? "" : ` ×${c.weight}`}`).join(" · ") }));
  if (ev.note) parts.push(el("p", { class: "muted", text: ev.note }));
  if (ev.error) {
    const log = el("pre", { class: "raw", hidden: true, text: ev.error_log || "(no log)" });
    parts.push(el("p", { class: "error", text: ev.error }), el("button", { onclick: () => { log.hidden = !log.hidden; } }, "Show log"), log);
  }
  return el("div", { id: "evaluation" }, parts);
}

async function logsNode(runId, names, live) {
  if (!names.length) return el("p", { class: "muted", text: "This run has no logs." });
  const pre = el("pre", { class: "log", id: "log" });
  const pick = el("select", { id: "log-name" }, names.map((n) => el("option", { value: n, text: n })));
  // the newest megabyte first; "Load earlier" asks for the megabyte before what is shown
  let start = 0;
  const earlier = el("button", { id: "log-earlier", hidden: true, onclick: async () => {
    const response = await api(`/api/runs/${encodeURIComponent(runId)}/logs/${pick.value}?end=${start}`);
    pre.prepend(await response.text());
    start = Number(response.headers.get("X-Srez-Log-Start") || 0); earlier.hidden = start === 0;
  } }, "Load earlier");
  const load = async () => {
    const response = await api(`/api/runs/${encodeURIComponent(runId)}/logs/${pick.value}`);
    const following = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = await response.text();
    start = Number(response.headers.get("X-Srez-Log-Start") || 0); earlier.hidden = start === 0;
    if (following) pre.scrollTop = pre.scrollHeight; // follows the end unless scrolled up
  };
  pick.addEventListener("change", load);
  await load();
  if (live) {
    const timer = setInterval(load, 2000);
    const previous = closeCurrent;
    closeCurrent = () => { clearInterval(timer); previous(); };
  }
  return el("div", {}, pick, earlier, pre);
}

function dragDivider(divider, left, container) {
  const saved = settings().split;
  if (saved) left.style.flexBasis = `${saved}%`;
  divider.addEventListener("pointerdown", (down) => {
    divider.setPointerCapture(down.pointerId);
    divider.classList.add("dragging");
    const move = (e) => {
      const box = container.getBoundingClientRect();
      const pct = Math.min(85, Math.max(15, ((e.clientX - box.left) / box.width) * 100));
      left.style.flexBasis = `${pct}%`;
    };
    const up = () => {
      divider.classList.remove("dragging");
      divider.removeEventListener("pointermove", move);
      saveSetting("split", parseFloat(left.style.flexBasis));
    };
    divider.addEventListener("pointermove", move);
    divider.addEventListener("pointerup", up, { once: true });
  });
}

async function runPage(runId) {
  here("runs");
  pushRecent(runId);
  const url = `/api/runs/${encodeURIComponent(runId)}`;
  const response = await api(url);
  if (response.ok) { renderRun(runId, await response.json()); return; }
  if (response.status === 404 && config.live) { followRun(runId); return; }
  const body = await response.json().catch(() => ({}));
  show(el("p", { class: "error", id: "run-error", text: body.error || `${response.status}` }));
}

function followRun(runId) {
  // A live run: its snapshot, then what changes, over one WebSocket relayed by this server.
  show(el("p", { class: "muted", id: "run-status", text: "Connecting to the run…" }));
  let ui = null;
  const ws = socket(`/api/runs/${encodeURIComponent(runId)}/live`, (opened) => {
    opened.addEventListener("message", async (event) => {
      const frame = JSON.parse(event.data);
      if (frame.type === "snapshot") ui = renderRun(runId, frame.view);
      else if (frame.type === "error") show(el("p", { class: "error", id: "run-error", text: frame.error }));
      else if (ui) await ui.apply(frame);
    });
  });
  const previous = closeCurrent;
  closeCurrent = () => { ws.close(); previous(); };
}

function renderRun(runId, view) {
  const state = { side: "agent", raw: !!settings().raw, area: settings().area || "changes", redraw: () => {} };
  let m = view.meta;
  const details = el("div", { class: "details", id: "details", hidden: true });
  const fillDetails = () => { details.textContent =
    `Brief:\n${m.brief || "(not known)"}\n\nAlerts at T0:\n${m.alerts.map((a) => `  ${a}`).join("\n") || "  (none)"}\n\nRun settings:\n${Object.entries(m.settings).map(([k, v]) => `  ${k}: ${v}`).join("\n")}`; };
  fillDetails();
  const phase = el("span", { class: "muted", id: "phase", text: `phase ${m.phase || "?"}` });
  const actions = el("span", { id: "actions" });
  const top = el("div", { class: "topline", id: "topline" },
    el("span", { class: "task", id: "task", text: `${m.task_id}${m.difficulty ? ` (${m.difficulty})` : ""}` }),
    el("span", { text: `model ${m.model || "?"}` }), el("span", { text: `agent ${m.agent || "?"}` }),
    el("span", { text: `backend ${m.backend || "?"}` }), m.isolation ? el("span", { text: `isolation ${m.isolation}` }) : null,
    phase, el("span", { class: "muted", id: "source", text: m.source === "daemon" ? "from its daemon" : "from results" }),
    el("button", { id: "more-details", onclick: () => { details.hidden = !details.hidden; } }, "More details"), actions,
    m.damaged ? el("span", { class: "error", id: "damaged", text: `damaged: ${m.damaged} (its grade is not shown or counted)` }) : null);
  const drawActions = () => {
    actions.replaceChildren();
    if (!m.live || config.hosted) return;
    for (const action of ["detach", "stop", "remove"]) {
      actions.append(el("button", { "data-action": action, onclick: async () => {
        if (action === "detach") { location.hash = "#/runs"; return; }
        const response = await api(`/api/runs/${encodeURIComponent(runId)}/${action}`, { method: "POST" });
        const body = await response.json().catch(() => ({}));
        actions.append(el("span", { class: response.ok ? "muted" : "error", text: ` ${body.text || body.error || response.status}` }));
      } }, action[0].toUpperCase() + action.slice(1)));
    }
  };
  drawActions();
  const items = el("div", { id: "dialog" }, view.dialog.items.map(itemNode),
    view.dialog.missing ? el("p", { class: "error", id: "dialog-missing", text: view.dialog.missing }) : null);
  let start = view.dialog.start || 0; // a finished run's dialog comes a page at a time, newest first
  const earlier = el("button", { id: "dialog-earlier", hidden: start === 0, onclick: async () => {
    const page = await getJSON(`/api/runs/${encodeURIComponent(runId)}/dialog?before=${start}`);
    items.prepend(...page.items.map(itemNode));
    start = page.start; earlier.hidden = start === 0; earlier.textContent = `Show ${start} earlier entries`;
  } }, `Show ${start} earlier entries`);
  const footerState = el("span", { class: view.dialog.footer.state, id: "footer-state", text: view.dialog.footer.text });
  const footer = el("div", { class: "footer", id: "dialog-footer" }, footerState,
    downloadLink(`/api/runs/${encodeURIComponent(runId)}/download/dialog.jsonl`, "download dialog.jsonl"));
  const left = el("div", { class: "pane left", id: "dialog-pane" }, earlier, items, footer);
  const area = el("div", {});
  const areaTabs = el("div", { class: "tabs", id: "areas" });
  const right = el("div", { class: "pane right" }, areaTabs, area);
  const divider = el("div", { class: "divider", id: "divider" });
  const split = el("div", { class: "split" }, left, divider, right);
  const areas = () => [["changes", "Changes"], ["evaluation", "Evaluation"], ["logs", "Logs"],
    ...(config.terminal && m.live ? [["terminal", "Terminal"]] : [])];
  state.redraw = async () => {
    areaTabs.replaceChildren(...areas().map(([key, label]) => el("button", { class: key === state.area ? "on" : "", "data-area": key,
      onclick: () => { state.area = key; saveSetting("area", key); state.redraw(); } }, label)));
    if (state.area === "changes") area.replaceChildren(changesNode(view.changes, runId, state));
    else if (state.area === "evaluation") area.replaceChildren(evaluationNode(view.evaluation, runId));
    else if (state.area === "logs") area.replaceChildren(await logsNode(runId, view.logs, m.live));
    else if (state.area === "terminal" && m.live) area.replaceChildren(terminalNode(runId));
    else { state.area = "changes"; area.replaceChildren(changesNode(view.changes, runId, state)); }
  };
  show(top, details, split);
  dragDivider(divider, left, split);
  state.redraw();
  const apply = async (frame) => {
    if (frame.type === "items") {
      for (const [index, item] of frame.items) {
        const node = itemNode(item);
        if (index < items.children.length) items.children[index].replaceWith(node); else items.append(node);
      }
      const follow = left.scrollTop + left.clientHeight >= left.scrollHeight - 40;
      footerState.className = frame.footer.state; footerState.textContent = frame.footer.text;
      if (follow) left.scrollTop = left.scrollHeight;
    } else if (frame.type === "changes") {
      view.changes = frame.changes;
      if (state.area === "changes") await state.redraw();
    } else if (frame.type === "evaluation") {
      view.evaluation = frame.evaluation;
      if (state.area === "evaluation") await state.redraw();
    } else if (frame.type === "phase" || frame.type === "end") {
      m = frame.meta; fillDetails(); phase.textContent = `phase ${m.phase || "?"}`; drawActions();
      if (frame.footer) { footerState.className = frame.footer.state; footerState.textContent = frame.footer.text; }
      if (frame.type === "end") await switchToResults(runId);
    }
  };
  return { apply };
}

async function switchToResults(runId) {
  // The run ended: once its folder is mirrored, show the same views from the results, in place.
  const url = `/api/runs/${encodeURIComponent(runId)}`;
  for (let i = 0; i < 60; i++) {
    if (!location.hash.endsWith(encodeURIComponent(runId))) return; // the user went elsewhere
    const response = await api(url);
    if (response.ok) { closeCurrent(); closeCurrent = () => {}; renderRun(runId, await response.json()); return; }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function terminalNode(runId) {
  // A plain terminal: keystrokes go to the run's shell; output is shown as text, with escape
  // sequences dropped (no terminal emulator is shipped: the page has no build step).
  const screen = el("div", { id: "terminal", tabindex: "0" });
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const ws = socket(`/api/runs/${encodeURIComponent(runId)}/terminal`, (opened) => {
    opened.binaryType = "arraybuffer";
    opened.addEventListener("message", (event) => showOutput(event));
    opened.addEventListener("close", () => { screen.append(el("div", { class: "muted", text: "[terminal closed]" })); });
  });
  const showOutput = (event) => {
    const text = decoder.decode(event.data, { stream: true })
      .replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(/\x1b[\]P^_][^\x07\x1b]*(\x07|\x1b\\)/g, "").replace(/\x1b./g, "");
    for (const ch of text) {
      if (ch === "\r") continue;
      if (ch === "\b") { screen.textContent = screen.textContent.slice(0, -1); continue; }
      if (ch < " " && ch !== "\n" && ch !== "\t") continue;
      screen.textContent += ch;
    }
    screen.scrollTop = screen.scrollHeight;
  };
  screen.addEventListener("keydown", (e) => {
    const keys = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b", ArrowUp: "\x1b[A", ArrowDown: "\x1b[B", ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D" };
    let data = keys[e.key];
    if (!data && e.ctrlKey && e.key.length === 1) data = String.fromCharCode(e.key.toUpperCase().charCodeAt(0) - 64);
    else if (!data && e.key.length === 1 && !e.metaKey) data = e.key;
    if (data) { ws.send(encoder.encode(data)); e.preventDefault(); }
  });
  const previous = closeCurrent;
  closeCurrent = () => { ws.close(); previous(); };
  setTimeout(() => screen.focus(), 0);
  return screen;
}

// ------------------------------------------------------------------ routing
async function route() {
  closeCurrent(); closeCurrent = () => {};
  const hash = location.hash || "#/runs";
  const [path, query] = hash.slice(1).split("?");
  try {
    if (path.startsWith("/run/")) await runPage(decodeURIComponent(path.slice(5)));
    else if (path === "/leaderboard") await leaderboardPage();
    else if (path === "/matrix") await matrixPage();
    else if (path === "/compare") await comparePage(query || "");
    else await runsPage(query || "");
  } catch (e) {
    show(el("p", { class: "error", text: e.message }));
  }
}

async function start() {
  await signIn();
  try { config = await getJSON("/api/config"); } catch (e) { show(el("p", { class: "error", id: "signed-out", text: e.message })); return; }
  document.getElementById("mode").textContent = config.hosted ? "hosted · read-only" : config.live ? "live" : "results";
  window.addEventListener("hashchange", route);
  await route();
}
start();

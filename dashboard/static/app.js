// redschema dashboard: plain JS, no build step. Every value from Redis is
// put in the page as text (never as HTML).
"use strict";

const state = { config: null, page: "schema", timer: null, queue: null, user: "", routeSeq: 0, busy: Promise.resolve(), queued: false,
  starts: 0, booting: null, lastOK: 0, lastFailed: false,
  qState: "dead", qOffset: 0, qSearch: "", qJob: "", qSelected: new Set(), qChartFor: "",
  keysMatch: "*", keysCursor: "", keysStack: [], keysDirty: true, keysReply: null, inspect: null };

function token() { return sessionStorage.getItem("redschema-token") || ""; }

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") e.addEventListener("click", v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// api calls the JSON API. Every request carries X-Redschema-Request, which
// a cross-site page cannot send without the server's consent (CORS), and the
// token when there is one.
async function api(path, form) {
  const headers = { "X-Redschema-Request": "1" };
  if (token()) headers["X-Redschema-Token"] = token();
  const opt = { headers: headers };
  if (form) {
    opt.method = "POST";
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) {
      if (Array.isArray(v)) for (const x of v) body.append(k, x);
      else body.append(k, v);
    }
    opt.body = body;
  }
  const r = await fetch(path, opt);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (r.status === 401) document.getElementById("tokenbox").hidden = false;
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function showError(err) {
  const box = document.getElementById("error");
  box.hidden = !err;
  box.textContent = err ? String(err.message || err) : "";
}

function bytes(n) {
  if (n < 1024) return n + " B";
  const u = "KMGTPE"; let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
  return n.toFixed(1) + " " + u[i] + "iB";
}

function ago(t) {
  if (!t || t.startsWith("0001")) return "";
  const d = (new Date(t) - Date.now()) / 1000;
  const a = Math.abs(d), s = a < 90 ? Math.round(a) + "s" : a < 5400 ? Math.round(a / 60) + "m" : a < 129600 ? Math.round(a / 3600) + "h" : Math.round(a / 86400) + "d";
  return d >= 0 ? "in " + s : s + " ago";
}

// table returns a grid table in a container that scrolls sideways on its
// own, so a wide table never widens the page.
function table(id, head, rows) {
  const t = el("table", { class: "grid", id: id || "" });
  t.append(el("tr", {}, head.map(h => el("th", { class: h.endsWith("#") ? "n" : "" }, h.replace(/#$/, "")))));
  for (const r of rows) t.append(r);
  return el("div", { class: "scroll" }, t);
}

function card(label, v, id) {
  return el("div", { class: "card" }, el("div", { class: "muted" }, label), el("div", { class: "num", id: id || "" }, v));
}

// act is an action button: it confirms when ask is given, posts form to
// path, then refreshes the page.
function act(label, path, form, opts) {
  const o = opts || {};
  return el("button", { class: o.danger ? "danger" : "", "data-action": o.name || label, onclick: async () => {
    const ask = typeof o.confirm === "function" ? o.confirm() : o.confirm;
    if (ask && !confirm(ask)) return;
    const f = typeof form === "function" ? form() : form;
    if (!f) return;
    try { await api(path, f); showError(null); if (o.done) o.done(); refresh(); } catch (e) { showError(e); }
  } }, label);
}

function td(v, cls) { return el("td", { class: cls || "" }, v); }
function tn(v, bad) { return el("td", { class: bad && v > 0 ? "n bad" : "n" }, v); }

// --- Schema ---------------------------------------------------------------

async function loadSchema() {
  const s = await api("/api/schema");
  const sum = document.getElementById("schema-summary");
  const probs = document.getElementById("schema-problems");
  const tables = document.getElementById("schema-tables");
  let keys = 0, mem = 0, noTTL = 0, wrong = 0, stray = 0;
  tables.replaceChildren();
  probs.replaceChildren();
  const all = document.getElementById("schema-all").checked;
  for (const db of s.dbs) {
    keys += db.scanned; mem += db.bytes; stray += db.unmatched;
    const rows = db.patterns.filter(p => {
      noTTL += p.no_ttl; wrong += p.wrong_type + p.wrong_db;
      return all || p.keys > 0;
    }).map(p => {
      const largest = (p.largest || []).length ? el("details", { class: "largest" }, el("summary", {}, bytes(p.largest[0].bytes)),
        el("ol", {}, p.largest.map(x => el("li", {}, el("code", {}, x.key), " ", el("span", { class: "muted" }, bytes(x.bytes)))))) : "";
      return el("tr", { class: p.keys ? "" : "idle", "data-pattern": p.pattern, title: p.purpose || "" },
        td([el("code", {}, p.pattern), p.purpose ? el("div", { class: "purpose muted" }, p.purpose) : null]), td(p.owner), td(p.type), td(p.ttl), tn(p.keys),
        td((p.estimated ? "~" : "") + bytes(p.bytes), "n"), tn(p.no_ttl, true), tn(p.wrong_type + p.wrong_db, true), td(largest));
    });
    tables.append(el("h3", {}, s.dbs.length > 1 ? "DB " + db.db : "Patterns"),
      table("schema-db-" + db.db, ["Pattern", "Package", "Type", "TTL", "Keys#", "Memory#", "No TTL#", "Wrong type/DB#", "Largest"], rows));
    for (const p of db.problems) probs.append(el("div", { class: "card bad" }, "DB " + db.db + ": " + p));
    for (const g of db.guesses) {
      const cmd = "redschema serve -prefix " + g.prefix + (g.no_hash_tags ? " -no-tags" : "");
      probs.append(el("div", { class: "card hint", "data-guess": g.prefix },
        `${g.keys} of ${db.unmatched} keys that match no pattern (DB ${db.db}) are under `, el("code", {}, g.prefix),
        (g.no_hash_tags ? " without hash tags" : "") + " — run ", el("code", {}, cmd)));
    }
    if (db.unmatched_keys.length || db.prefixes.length) {
      const kids = [el("h3", {}, "Keys matching no pattern (DB " + db.db + ")")];
      if (db.prefixes.length) {
        const other = db.prefixes_other ? [el("tr", {}, td(el("span", { class: "muted" }, "other prefixes")), tn(db.prefixes_other))] : [];
        kids.push(table("schema-prefixes-" + db.db, ["Prefix", "Keys#"],
          db.prefixes.map(x => el("tr", { "data-prefix": x.prefix }, td(el("code", {}, x.prefix)), tn(x.keys))).concat(other)));
      }
      if (db.unmatched_keys.length) kids.push(el("ul", { class: "keys" }, db.unmatched_keys.map(k => el("li", {}, el("code", {}, k)))));
      probs.append(el("div", { class: "card" }, kids));
    }
  }
  const byOwner = {};
  for (const db of s.dbs) for (const p of db.patterns) byOwner[p.owner] = (byOwner[p.owner] || 0) + p.bytes;
  const owners = Object.entries(byOwner).filter(([, b]) => b > 0).sort((a, b) => b[1] - a[1]);
  const top = Math.max(1, ...owners.map(([, b]) => b));
  const bars = el("table", { id: "schema-memory" }, owners.map(([o, b]) => {
    const bar = el("span", { class: "bar" });
    bar.style.width = Math.max(2, Math.round(120 * b / top)) + "px";
    return el("tr", {}, el("td", {}, o), el("td", {}, bar), el("td", { class: "n muted" }, bytes(b)));
  }));
  sum.replaceChildren(card("Keys", keys, "stat-keys"), card("Memory (est.)", bytes(mem), "stat-mem"),
    card("Missing TTL", noTTL, "stat-nottl"), card("Wrong type/DB", wrong, "stat-wrong"), card("Strays", stray, "stat-strays"),
    el("div", { class: "card wide" }, el("div", { class: "muted" }, "Memory by package"), el("div", { class: "scroll" }, bars)));
}

// --- Inspect (the schema page's and the key browser's) ---------------------

// inspectInto shows key, decoded by its package, in out; a collection read
// in pages gets a "more" button that appends its next page.
async function inspectInto(out, key) {
  state.inspect = { key: key, out: out, value: null };
  out.replaceChildren(el("pre", { class: "inspect" }, "loading…"));
  try {
    const r = await api("/api/inspect?key=" + encodeURIComponent(key));
    state.inspect.reply = r;
    state.inspect.value = r.value;
    renderInspect();
  } catch (e) { out.replaceChildren(el("pre", { class: "inspect" }, "error: " + e.message)); }
}

function renderInspect() {
  const i = state.inspect, r = i.reply;
  const ttl = r.ttl_ms < 0 ? "none" : (r.ttl_ms / 1000).toFixed(1) + "s";
  const text = `key: ${r.key}\npattern: ${r.pattern} (package ${r.owner}, area ${r.area})\ntype: ${r.type}   ttl: ${ttl} (pattern: ${r.expected_ttl})\n` +
    (r.error ? "not decoded: " + r.error : "value: " + JSON.stringify(i.value, null, 2));
  const kids = [el("pre", { class: "inspect", "data-inspected": i.key }, text)];
  const v = i.value;
  if (v && typeof v === "object" && v.next) {
    kids.push(el("button", { "data-action": "more", onclick: async ev => {
      ev.target.disabled = true;
      try {
        const m = await api("/api/inspect?key=" + encodeURIComponent(i.key) + "&cursor=" + encodeURIComponent(v.next));
        const mv = m.value || {};
        i.value = Object.assign({}, mv, { items: (v.items || []).concat(mv.items || []) });
        renderInspect();
      } catch (e) { ev.target.disabled = false; showError(e); }
    } }, "more (" + (v.items || []).length + " of " + (v.len ?? "?") + " shown)"));
  }
  i.out.replaceChildren(...kids);
}

function inspectKey(ev) {
  ev.preventDefault();
  const key = document.getElementById("inspect-key").value.trim();
  if (key) inspectInto(document.getElementById("inspect-out"), key);
}

// --- Server ---------------------------------------------------------------

async function loadServer() {
  const r = await api("/api/server");
  const pct = x => (100 * x).toFixed(1) + "%";
  const dur = s => s < 3600 ? Math.round(s / 60) + "m" : s < 172800 ? Math.round(s / 3600) + "h" : Math.round(s / 86400) + "d";
  const kids = [];
  r.nodes.forEach((n, i) => {
    const sec = el("div", { class: "node", "data-node": n.addr || String(i) },
      el("h3", {}, "Node " + (n.addr || i + 1) + (n.version ? " — Redis " + n.version : "")));
    if (n.error) sec.append(el("div", { class: "card bad" }, n.error));
    else {
      const repl = n.role === "master" ? n.connected_replicas + " replica" + (n.connected_replicas === 1 ? "" : "s") :
        "link " + (n.master_link_status || "?");
      const mem = bytes(n.used_memory) + (n.maxmemory ? " of " + bytes(n.maxmemory) : "");
      sec.append(el("div", { class: "cards" },
        card("Role", n.role + ", " + repl, "sv-role-" + i), card("Uptime", dur(n.uptime_s)),
        card("Memory", mem, "sv-mem-" + i), card("RSS / fragmentation", bytes(n.used_memory_rss) + " / " + n.mem_fragmentation_ratio.toFixed(2)),
        card("Eviction policy", n.maxmemory_policy), card("Clients (blocked)", n.connected_clients + " (" + n.blocked_clients + ")", "sv-clients-" + i),
        card("Ops/s", n.ops_per_sec, "sv-ops-" + i), card("Hit rate", pct(n.hit_rate), "sv-hit-" + i),
        card("Evicted / expired", n.evicted_keys + " / " + n.expired_keys, "sv-evicted-" + i),
        card("Keys", Object.entries(n.db_keys).map(([db, k]) => db + ": " + k).join(", ") || "none")));
    }
    sec.append(el("h3", {}, "Slow log" + (n.slowlog_error ? "" : " (last " + n.slowlog.length + ")")));
    if (n.slowlog_error) sec.append(el("p", { class: "muted" }, n.slowlog_error));
    else sec.append(table("sv-slowlog-" + i, ["ID#", "When", "Duration#", "Command", "Key", "Args#"], n.slowlog.map(e =>
      el("tr", { "data-slow": e.id }, tn(e.id), td(ago(e.at)), td((e.duration_us / 1000).toFixed(1) + " ms", "n"),
        td(el("code", {}, e.command)), td(e.key ? el("code", {}, e.key) : ""), tn(e.args)))));
    kids.push(sec);
  });
  kids.push(el("p", { class: "muted" }, "Slow log entries show the command, its key and its argument count, never other arguments."));
  document.getElementById("sv-detail").replaceChildren(...kids);
}

// --- Keys -------------------------------------------------------------------

// keysQuery is the /api/keys query of the search and page asked for now.
function keysQuery() {
  const q = new URLSearchParams({ match: state.keysMatch || "*", count: document.getElementById("keys-count").value });
  if (state.keysCursor) q.set("cursor", state.keysCursor);
  return q.toString();
}

// loadKeys browses one page; the timer's refreshes leave the page shown
// (and its paging) as it is: only a search, a page turn or a route reloads.
async function loadKeys() {
  document.getElementById("keys-prefix").textContent = state.config.prefix || "(no prefix)";
  if (!state.keysDirty && state.keysReply) return;
  const asked = keysQuery();
  const r = await api("/api/keys?" + asked);
  // A search or page turn made while this page was in flight wins: it
  // stays to load (its refresh is queued behind this one).
  if (keysQuery() !== asked) return;
  state.keysReply = r; state.keysDirty = false;
  const ttl = ms => ms === -1 ? "none" : ms === -2 ? "gone" : (ms / 1000).toFixed(1) + "s";
  // Keys are shown without the prefix (shown above the list).
  const short = k => r.prefix && k.startsWith(r.prefix) ? k.slice(r.prefix.length) : k;
  const rows = r.keys.map(k => {
    const link = k.pattern && !k.redacted ? el("a", { href: "#keys", class: "key", title: k.key, onclick: ev => {
      ev.preventDefault();
      inspectInto(document.getElementById("keys-inspect"), k.key);
      document.getElementById("keys-inspect").scrollIntoView();
    } }, short(k.key)) : el("span", { title: k.redacted ? "a session key: its ID is hidden (see the sessions page)" : "matches no pattern" }, short(k.key));
    return el("tr", { "data-key": k.key }, td(el("code", {}, link)), td(k.type), td(ttl(k.ttl_ms), "n"), td(k.owner || ""),
      td(k.pattern ? el("code", {}, short(k.pattern)) : el("span", { class: "muted" }, "no pattern")), state.config.cluster ? null : td(k.db, "n"));
  });
  const page = state.keysStack.length + 1;
  const nav = el("p", { class: "pager" },
    el("button", { "data-action": "first", onclick: () => { state.keysStack = []; state.keysCursor = ""; state.keysDirty = true; refresh(); } }, "first page"), " ",
    r.cursor ? el("button", { "data-action": "next", id: "keys-next", onclick: () => {
      state.keysStack.push(state.keysCursor); state.keysCursor = r.cursor; state.keysDirty = true; refresh();
    } }, "next page") : el("span", { class: "muted", id: "keys-done" }, "end of the keyspace"),
    " ", el("span", { class: "muted" }, "page " + page + ", " + r.keys.length + " keys"));
  document.getElementById("keys-list").replaceChildren(nav,
    table("keys-table", ["Key", "Type", "TTL#", "Package", "Pattern", state.config.cluster ? null : "DB#"].filter(Boolean), rows));
}

// --- Queues ---------------------------------------------------------------

const jobStates = ["pending", "scheduled", "active", "dead", "done"];

// dailyChart draws processed and failed per day (the queue's stored daily
// totals): drawn in full on the first load.
function dailyChart(d) {
  const W = 640, H = 150, L = 34, R = 8, T = 18, B = 22;
  const s = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "queue-chart" });
  const n = d.days.length;
  const max = Math.max(1, ...d.processed, ...d.failed);
  const x = i => L + (n < 2 ? 0 : i * (W - L - R) / (n - 1));
  const y = v => H - B - (v / max) * (H - B - T);
  s.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999" }));
  const text = (tx, ty, str, anchor) => { const t = svg("text", { x: tx, y: ty, "font-size": 11, fill: "#666", "text-anchor": anchor || "start" }); t.textContent = str; s.append(t); };
  text(4, 12, "per day, max " + max);
  if (n) { text(L, H - 6, d.days[0]); text(W - R, H - 6, d.days[n - 1], "end"); }
  const line = (vals, color, name) => {
    if (!vals.length) return;
    s.append(svg("polyline", { points: vals.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "), fill: "none", stroke: color, "stroke-width": 2, "data-series": name }));
  };
  line(d.processed, "#1e7b45", "processed"); line(d.failed, "#b3261e", "failed");
  const sum = a => a.reduce((x, y) => x + y, 0);
  return el("div", {}, s, el("div", { class: "legend muted" },
    el("span", {}, el("span", { class: "sw ok" }), "processed " + sum(d.processed)), el("span", {}, el("span", { class: "sw bad" }), "failed " + sum(d.failed)),
    el("span", {}, "last " + n + " days")));
}

function msText(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = ms / 1000;
  return s < 90 ? s.toFixed(1) + " s" : s < 5400 ? Math.round(s / 60) + " min" : (s / 3600).toFixed(1) + " h";
}

// failures is a job's failed attempts of the most it may have: its
// retries and the first attempt (a dead letter shows all of them used).
function failures(j) { return j.retry_count + " of " + (j.max_retries + 1); }

function sumLevels(m) { return (m.high || 0) + (m.normal || 0) + (m.low || 0); }

async function loadQueues() {
  const r = await api("/api/queues");
  // A queue whose data does not parse gets its row and its reason; the
  // other queues show as usual.
  const rows = r.queues.map(q => q.error ? el("tr", { "data-queue": q.name, class: "corrupt" },
    td(el("a", { href: "#queues/" + encodeURIComponent(q.name) }, q.name)), el("td", { colspan: "11", class: "bad" }, q.error)) :
    el("tr", { "data-queue": q.name, class: q.paused ? "paused" : "" },
    td(el("a", { href: "#queues/" + encodeURIComponent(q.name) }, q.name)),
    tn(q.ready.high), tn(q.ready.normal), tn(q.ready.low),
    tn(sumLevels(q.scheduled)), tn(q.in_flight), tn(q.dead, true),
    tn(q.total_processed), tn(q.total_failed), td(q.avg_process_ms.toFixed(1) + " ms", "n"),
    td(sumLevels(q.ready) ? msText(q.oldest_ready_ms) : "—", "n"), td(q.paused ? el("span", { class: "badge paused" }, "paused") : "running")));
  document.getElementById("queue-list").replaceChildren(table("queue-table",
    ["Queue", "High#", "Normal#", "Low#", "Scheduled#", "In flight#", "Dead#", "Processed#", "Failed#", "Avg time#", "Latency#", "State"], rows));
  if (!state.queue && r.queues.length) state.queue = (r.queues.find(q => !q.error) || r.queues[0]).name;
  if (state.queue) await loadQueue(state.queue);
  else document.getElementById("queue-detail").replaceChildren(el("p", { class: "muted" }, "No queues."));
}

// queuePage reads one page of one state of a queue: 25 jobs, or 200 when
// searching (the search filters the jobs of the page read, never the
// whole state).
function queuePage(name) {
  const q = new URLSearchParams({ name: name, state: state.qState, offset: state.qOffset, limit: state.qSearch ? 200 : 25 });
  if (state.qSearch) q.set("q", state.qSearch);
  return api("/api/queue?" + q);
}

async function loadQueue(name) {
  const r = await queuePage(name);
  const st = r.stats;
  const w = state.config.writable;
  const d = document.getElementById("queue-detail");
  if (d.contains(document.activeElement) && document.activeElement.tagName === "INPUT" && document.activeElement.type !== "checkbox") return; // never redraw a search being typed
  // Checked boxes survive refreshes, for the jobs still shown.
  const shown = new Set(r.jobs.map(j => j.id));
  for (const id of [...state.qSelected]) if (!shown.has(id)) state.qSelected.delete(id);
  const sel = () => [...state.qSelected];
  const chart = dailyChart(st.daily);
  const head = el("div", { class: "qhead" }, el("h3", { id: "queue-name" }, "Queue " + name),
    st.paused ? el("span", { class: "badge paused", id: "queue-paused" }, "paused") : null,
    el("span", { class: "muted", id: "queue-latency" }, [sumLevels(st.ready) ? "latency " + msText(st.oldest_ready_ms) : "no job waiting",
      st.last_processed_at ? "last processed " + ago(st.last_processed_at) : ""].filter(Boolean).join(", ")),
    w ? (st.paused ? act("resume", "/api/queue/resume", { queue: name }) :
      act("pause", "/api/queue/pause", { queue: name }, { confirm: "Pause queue " + name + "? Workers stop taking its jobs." })) : null);
  const tabs = el("div", { class: "tabs", id: "queue-tabs" }, jobStates.map(s => {
    const n = { pending: sumLevels(st.ready), scheduled: sumLevels(st.scheduled), active: st.in_flight, dead: st.dead }[s];
    return el("a", { href: "#queues/" + encodeURIComponent(name) + "/" + s, class: s === state.qState ? "active" : "", "data-state": s },
      s + (n !== undefined ? " (" + n + ")" : ""));
  }));
  const search = el("form", { id: "queue-search", class: "inline" },
    el("input", { id: "queue-q", placeholder: "filter ID, payload or error", title: "keeps the jobs of the 200 read from here whose ID starts with it or whose payload or error contains it", value: state.qSearch }), el("button", { type: "submit" }, "Search"));
  search.addEventListener("submit", ev => {
    ev.preventDefault(); state.qSearch = search.elements[0].value.trim(); state.qOffset = 0; document.activeElement.blur(); refresh();
  });
  const bulk = [];
  if (w) {
    const many = what => () => sel().length ? what : null;
    if (state.qState === "dead") {
      bulk.push(act("requeue selected", "/api/queue/requeue", () => sel().length ? { queue: name, id: sel() } : null, { name: "requeue-selected", done: () => state.qSelected.clear() }),
        act("requeue all", "/api/queue/requeue-all", { queue: name }, { name: "requeue-all", confirm: "Requeue every dead letter of " + name + "?" }));
    }
    bulk.push(act("delete selected", "/api/queue/delete", () => sel().length ? { queue: name, id: sel() } : null,
      { name: "delete-selected", danger: true, confirm: many("Delete the " + "selected jobs of " + name + "?"), done: () => state.qSelected.clear() }));
    if (state.qState === "dead") bulk.push(act("purge dead", "/api/queue/purge-dead", { queue: name }, { name: "purge-dead", danger: true, confirm: "Delete every dead letter of " + name + "?" }));
  }
  const rowActions = j => {
    if (!w) return "";
    const b = [];
    if (j.state === "dead" && !j.corrupt) b.push(act("requeue", "/api/queue/requeue", { queue: name, id: j.id }));
    if (j.state === "scheduled" && !j.corrupt) b.push(act("run now", "/api/queue/run-now", { queue: name, id: j.id }, { name: "run-now" }));
    if (j.state === "active" && !j.corrupt) b.push(act("cancel", "/api/queue/cancel", { queue: name, id: j.id }, { danger: true, confirm: "Cancel running job " + j.id + "?" }));
    if (j.state !== "active" || j.corrupt) b.push(act("delete", "/api/queue/delete", { queue: name, id: j.id }, { danger: true, confirm: "Delete job " + j.id + "?" }));
    return b.flatMap((x, i) => i ? [" ", x] : [x]);
  };
  const atLabel = { pending: "Ready", scheduled: "Runs", active: "Lease ends", dead: "Failed", done: "Done" }[state.qState];
  const rows = r.jobs.map(j => {
    const box = el("input", { type: "checkbox", "aria-label": "select " + j.id });
    box.checked = state.qSelected.has(j.id);
    box.addEventListener("change", () => { if (box.checked) state.qSelected.add(j.id); else state.qSelected.delete(j.id); });
    const idLink = j.corrupt ? el("code", {}, j.id) : el("a", { href: "#queues/" + encodeURIComponent(name) + "/" + state.qState + "/" + encodeURIComponent(j.id) }, el("code", {}, j.id));
    return el("tr", { "data-job": j.id, class: j.corrupt ? "corrupt" : "" },
      w ? td(box) : null, td(rowActions(j), "actions"), td(idLink),
      j.corrupt ? el("td", { class: "bad", colspan: 4 }, "corrupt: " + j.corrupt) :
        [td(j.priority), td(ago(j.created_at)), td(ago(j.at)), tn(failures(j))],
      td(j.last_error || "", j.last_error ? "bad" : ""), td(el("code", { class: "payload" }, j.payload)));
  });
  const from = r.total ? r.offset + 1 : 0, end = Math.min(r.offset + r.limit, r.total);
  const pager = el("p", { class: "pager" },
    el("button", { "data-action": "prev", onclick: () => { state.qOffset = Math.max(0, state.qOffset - r.limit); refresh(); } }, "prev"), " ",
    el("button", { "data-action": "next", onclick: () => { state.qOffset += r.limit; refresh(); } }, "next"), " ",
    el("span", { class: "muted", id: "queue-range" }, state.qSearch ? r.jobs.length + " matching in " + from + "–" + end + " of " + r.total :
      from + "–" + (r.offset + r.jobs.length) + " of " + r.total));
  pager.querySelector('[data-action="prev"]').disabled = r.offset === 0;
  pager.querySelector('[data-action="next"]').disabled = end >= r.total;
  const kids = [head, el("div", { class: "card" }, el("h3", {}, "Processed / failed"), chart), tabs,
    el("div", { class: "toolbar" }, search, el("span", { class: "bulk" }, bulk)), pager,
    table("jobs-" + state.qState, [w ? "" : null, "", "ID", "Priority", "Created", atLabel, "Failures#", "Last error", "Payload"].filter(x => x !== null), rows)];
  if (state.qJob) kids.push(await jobDetail(name, state.qJob));
  if (r.schedules.length) {
    kids.push(el("h3", {}, "Schedules"), table("queue-schedules", ["Name", "Spec", "Next run", "Time zone"], r.schedules.map(x =>
      el("tr", { "data-schedule": x.name }, td(x.name), td(el("code", {}, x.spec)), td(ago(x.next_run)), td(x.location || "")))));
  }
  d.replaceChildren(...kids);
}

// jobDetail is one job's page: payload, headers, progress, result and its
// attempts' errors.
async function jobDetail(name, id) {
  const box = el("div", { class: "card", id: "job-detail" });
  let j;
  try { j = await api("/api/job?queue=" + encodeURIComponent(name) + "&id=" + encodeURIComponent(id)); }
  catch (e) { box.append(el("h3", {}, "Job " + id), el("p", { class: "bad" }, e.message)); return box; }
  const close = el("a", { href: "#queues/" + encodeURIComponent(name) + "/" + state.qState, class: "close" }, "close");
  const dl = el("dl", { class: "kv" }, [["State", j.state], ["Priority", j.priority], ["Created", ago(j.created_at)], ["At", ago(j.at)],
    ["Failed attempts", failures(j)], ["Progress", j.progress ?? ""]].map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  const fmt = v => typeof v === "string" ? v : JSON.stringify(v, null, 2);
  box.append(el("h3", {}, "Job ", el("code", {}, j.id), " ", close), dl,
    el("h3", {}, "Payload" + (j.payload_truncated ? " (truncated)" : "")), el("pre", { class: "inspect", id: "job-payload" }, fmt(j.payload)));
  const hdrs = Object.entries(j.headers);
  if (hdrs.length) box.append(el("h3", {}, "Headers"), table("job-headers", ["Header", "Value"], hdrs.map(([k, v]) => el("tr", {}, td(k), td(v)))));
  if (j.result !== undefined && j.result !== null && j.result !== "") box.append(el("h3", {}, "Result"), el("pre", { class: "inspect" }, fmt(j.result)));
  box.append(el("h3", {}, "Attempts' errors (" + j.errors.length + ")"),
    table("job-errors", ["Attempt#", "When", "Error"], j.errors.map(e => el("tr", {}, tn(e.attempt), td(ago(e.at)), td(e.error, "bad")))));
  return box;
}

// --- Sessions -------------------------------------------------------------

async function loadUser() {
  const d = document.getElementById("user-detail");
  const q = state.user ? "?user=" + encodeURIComponent(state.user) : "";
  const r = await api("/api/sessions" + q);
  const list = [el("h3", {}, "Users with sessions (" + r.users.length + (r.users.length >= 50 ? "+" : "") + ")"),
    table("user-table", ["User", "Sessions#"], r.users.map(u => el("tr", { "data-user": u.id },
      td(el("a", { href: "#sessions/" + encodeURIComponent(u.id) }, u.id)), tn(u.sessions))))];
  if (!state.user) { d.replaceChildren(...leftOut(r), el("p", { class: "muted" }, "Enter a user ID or pick one."), ...list); return; }
  const u = state.user;
  const w = state.config.writable;
  const post = (label, path, form, cls) => el("button", { class: cls || "", "data-action": label, onclick: async () => {
    try { await api(path, form); showError(null); refresh(); } catch (e) { showError(e); }
  } }, label);
  const rows = r.sessions.map(s => el("tr", { "data-session": s.ref },
    td(w ? post("revoke", "/api/session/revoke", { user: u, ref: s.ref }, "danger") : "read-only", "actions"),
    td(s.email), td(s.ip_address), td(s.user_agent), td(ago(s.created_at)), td(ago(s.last_activity)), td(ago(s.expires_at))));
  const actions = w ? [act("revoke all", "/api/session/revoke-all", { user: u }, { danger: true, confirm: "Revoke every session of " + u + "?" }), " ",
    r.status === "blocked" ? act("unblock", "/api/user/unblock", { user: u }) :
      act("block", "/api/user/block", { user: u }, { danger: true, confirm: "Block " + u + "? Their sessions stop validating and they cannot log in." })] : [];
  d.replaceChildren(...leftOut(r),
    el("div", { class: "cards" },
      el("div", { class: "card" }, el("div", { class: "muted" }, "User"), el("div", { class: "num" }, u)),
      el("div", { class: "card" }, el("div", { class: "muted" }, "Status"), el("div", { class: "num", id: "user-status" }, r.status)),
      el("div", { class: "card" }, el("div", { class: "muted" }, "Live sessions"), el("div", { class: "num", id: "session-count" }, r.sessions.length))),
    el("p", {}, actions),
    table("session-table", ["", "Email", "IP", "User agent", "Created", "Last activity", "Expires"], rows),
    el("h3", {}, "User record"), el("pre", { class: "inspect" }, r.record ? JSON.stringify(r.record, null, 2) : "none"), ...list);
}

// --- Rate limits ------------------------------------------------------------

async function loadRateLimits() {
  const q = new URLSearchParams();
  if (state.rlID) q.set("id", state.rlID);
  if (state.rlKey) q.set("key", state.rlKey);
  const r = await api("/api/ratelimits?" + q);
  const w = state.config.writable;
  const secs = ms => ms < 0 ? "no TTL" : (ms / 1000).toFixed(1) + "s";
  const look = document.getElementById("rl-lookup");
  if (!r.id) look.replaceChildren(el("p", { class: "muted" }, r.limiters.length ?
    "Limiters: " + r.limiters.join(", ") + ". Enter an identifier." :
    "No limiter registered (dashboard.WithLimiter): lookups need the application's policies."));
  else look.replaceChildren(el("h3", {}, "Identifier " + r.id),
    table("rl-lookup-table", ["Limiter", "Policy", "Allowed", "Limit#", "Remaining#", "Retry after#", "Reset after#"],
      r.lookup.map(x => el("tr", { "data-limiter": x.limiter }, td(x.limiter), td(x.policy), td(x.allowed ? "yes" : "no", x.allowed ? "" : "bad"),
        tn(x.limit), tn(x.remaining), td(secs(x.retry_after_ms), "n"), td(secs(x.reset_after_ms), "n")))));
  const lift = id => el("button", { "data-action": "lift", onclick: async () => {
    try { await api("/api/ratelimit/lift", { id: id }); showError(null); refresh(); } catch (e) { showError(e); }
  } }, "lift");
  document.getElementById("rl-blocks").replaceChildren(el("h3", {}, "Blocks (" + r.blocks.length + ")"),
    table("rl-block-table", ["Identifier", "Lapses in#", ""], r.blocks.map(b => el("tr", { "data-block": b.id },
      td(el("code", {}, b.id)), td(secs(b.remaining_ms), "n"), td(w ? lift(b.id) : "read-only")))));
  const cfg = document.getElementById("rl-config");
  if (cfg.contains(document.activeElement)) return; // never redraw a form being edited
  const keyLinks = r.configured.map(k => el("li", {}, el("a", { href: "#ratelimits/key/" + encodeURIComponent(k) }, k)));
  const kids = [el("h3", {}, "API keys with a runtime config (" + r.configured.length + ")"), el("ul", { id: "rl-keys" }, keyLinks)];
  if (r.config) {
    const fields = ["per_minute", "per_hour", "per_day", "burst"];
    const form = el("form", { id: "rl-config-form" }, fields.map(f =>
      el("label", {}, f + " ", el("input", { name: f, size: 8, value: String(r.config[f] || 0) }), " ")));
    if (w) {
      form.append(el("button", { type: "submit" }, "save"));
      form.addEventListener("submit", async ev => {
        ev.preventDefault();
        const body = { key: r.key };
        for (const f of fields) body[f] = form.elements[f].value;
        try { await api("/api/ratelimit/config", body); showError(null); refresh(); } catch (e) { showError(e); }
      });
    }
    kids.push(el("h3", {}, "Runtime config of " + r.key + " (0: the policy applies)"), form);
  }
  cfg.replaceChildren(...kids);
}

// --- Presence and chat ------------------------------------------------------

async function loadPresence() {
  const q = state.prUser ? "?user=" + encodeURIComponent(state.prUser) : "";
  const r = await api("/api/presence" + q);
  const online = r.admins.filter(a => a.availability === "online");
  const kids = [el("div", { class: "cards" },
    card("Online users", r.online_count, "pr-online"),
    card("Admins online", online.length + " / " + r.admins.length, "pr-admins-online"),
    card("Unread conversations", r.unread.length, "pr-unread"),
    card("Backlog", r.backlog.length, "pr-backlog"))];
  if (r.errors) for (const [k, v] of Object.entries(r.errors)) kids.push(el("div", { class: "card bad" }, k + ": " + v));
  if (r.user) {
    kids.push(el("h3", {}, "User " + r.user.id + ": " + r.user.status + (r.user.last_seen ? ", last seen " + ago(r.user.last_seen) : "")),
      table("pr-conns", ["Connection", "Device", "User agent", "Connected", "Last seen"], r.user.connections.map(c =>
        el("tr", { "data-conn": c.id }, td(c.id), td(c.device || ""), td(c.user_agent || ""), td(ago(c.connected_at)), td(ago(c.last_seen))))));
  }
  kids.push(el("h3", {}, "Support admins"), table("pr-admin-table", ["Admin", "Availability", "Load", "Assigned#", "Capacity#"],
    r.admins.map(a => {
      const bar = el("span", { class: "bar" });
      bar.style.width = Math.round(120 * Math.min(1, a.capacity ? a.assigned / a.capacity : 0)) + "px";
      return el("tr", { "data-admin": a.id }, td(a.id), td(a.availability, a.availability === "online" ? "" : "muted"), td(bar), tn(a.assigned), tn(a.capacity));
    })));
  const prios = ["urgent", "high", "normal", "low"];
  kids.push(el("h3", {}, "Unread backlog by priority"), table("pr-unread-prio", prios.map(p => p + "#"),
    [el("tr", {}, prios.map(p => tn(r.unread_by_priority[p] || 0)))]));
  const waiting = (id, rows) => table(id, ["Conversation", "Priority", "Waiting since"],
    rows.map(w => el("tr", { "data-conv": w.conversation }, td(w.conversation), td(w.priority), td(ago(w.since)))));
  kids.push(el("h3", {}, "Unread"), waiting("pr-unread-table", r.unread), el("h3", {}, "Unassigned backlog"), waiting("pr-backlog-table", r.backlog));
  if (r.online.length) kids.push(el("h3", {}, "Online now (first " + r.online.length + ")"), el("p", {}, r.online.map(u => el("code", {}, u + " "))));
  document.getElementById("pr-detail").replaceChildren(...kids);
}

// --- Locks ----------------------------------------------------------------

// leftOut draws the keys of another type that a page's overview left
// out (its reply's corrupt list), one card each, above what was read.
function leftOut(r) { return (r.corrupt || []).map(e => el("div", { class: "card bad corrupt" }, e)); }

async function loadLocks() {
  const r = await api("/api/locks");
  const secs = ms => (ms / 1000).toFixed(1) + "s";
  const leaseBar = l => {
    const bar = el("span", { class: "bar" });
    bar.style.width = Math.round(120 * Math.min(1, l.lease_ms ? l.remaining_ms / l.lease_ms : 0)) + "px";
    return bar;
  };
  document.getElementById("lk-detail").replaceChildren(...leftOut(r),
    el("h3", {}, "Held locks (" + r.locks.length + ")"),
    table("lk-locks", ["Resource type", "Resource", "Owner", "Acquired", "Lease#", "Remaining#", "Lease left"], r.locks.map(l =>
      el("tr", { "data-lock": l.resource_type + "/" + l.resource_id }, td(l.resource_type), td(el("code", {}, l.resource_id)),
        td(l.owner_label || "(no label)"), td(ago(l.acquired_at)), td(secs(l.lease_ms), "n"), td(secs(l.remaining_ms), "n"), td(leaseBar(l))))),
    el("h3", {}, "Semaphores (" + r.semaphores.length + ")"),
    table("lk-sems", ["Resource type", "Resource", "Permits held#", "Holders (soonest expiry)"], r.semaphores.map(s =>
      el("tr", { "data-sem": s.resource_type + "/" + s.resource_id }, td(s.resource_type), td(el("code", {}, s.resource_id)), tn(s.permits.length),
        td(s.permits.map(p => (p.owner_label || "(no label)") + " until " + ago(p.expires_at)).join(", "))))),
    el("h3", {}, "Interval jobs (" + r.jobs.length + ")"),
    table("lk-jobs", ["Job", "Last run", "Every", "Next run"], r.jobs.map(j =>
      el("tr", { "data-job": j.job }, td(j.job), td(ago(j.last_run)), td(j.every_ms ? secs(j.every_ms) : "unknown"),
        td(j.next_run ? ago(j.next_run) : "(dashboard.WithInterval)")))));
}

// --- Sensors --------------------------------------------------------------

// seriesChart draws avg as a line over a min..max band, by bucket start.
function seriesChart(buckets, unit) {
  const W = 720, H = 220, L = 48, B = 24, T = 12, R = 12;
  const s = svg("svg", { class: "chart", id: "sn-chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  if (!buckets.length) return s;
  const t0 = new Date(buckets[0].start).getTime(), t1 = new Date(buckets[buckets.length - 1].start).getTime();
  let lo = Math.min(...buckets.map(b => b.min)), hi = Math.max(...buckets.map(b => b.max));
  if (hi === lo) { hi += 1; lo -= 1; }
  const x = t => L + (t1 === t0 ? (W - L - R) / 2 : (t - t0) / (t1 - t0) * (W - L - R));
  const y = v => T + (hi - v) / (hi - lo) * (H - T - B);
  for (const v of [lo, (lo + hi) / 2, hi]) {
    s.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e3e6ec" }));
    const lab = svg("text", { x: 4, y: y(v) + 4, "font-size": 11, fill: "#666" }); lab.textContent = v.toFixed(1) + (unit || ""); s.append(lab);
  }
  const pts = buckets.map(b => [x(new Date(b.start).getTime()), b]);
  const band = pts.map(([px, b]) => `${px.toFixed(1)},${y(b.max).toFixed(1)}`).concat(pts.slice().reverse().map(([px, b]) => `${px.toFixed(1)},${y(b.min).toFixed(1)}`));
  s.append(svg("polygon", { points: band.join(" "), fill: "#5b7bd5", "fill-opacity": 0.18, stroke: "none" }));
  s.append(svg("polyline", { points: pts.map(([px, b]) => `${px.toFixed(1)},${y(b.avg).toFixed(1)}`).join(" "), fill: "none", stroke: "#2f4fb5", "stroke-width": 2 }));
  for (const [px, b] of pts) s.append(svg("circle", { cx: px, cy: y(b.avg), r: 3, fill: "#2f4fb5" }));
  const first = svg("text", { x: L, y: H - 6, "font-size": 11, fill: "#666" }); first.textContent = new Date(t0).toLocaleTimeString(); s.append(first);
  const last = svg("text", { x: W - R, y: H - 6, "font-size": 11, fill: "#666", "text-anchor": "end" }); last.textContent = new Date(t1).toLocaleTimeString(); s.append(last);
  return s;
}

async function loadSensors() {
  const q = new URLSearchParams();
  if (state.snLoc) q.set("location", state.snLoc);
  if (state.snType) q.set("type", state.snType);
  const r = await api("/api/sensors?" + q);
  // Refreshes name what is shown, so that the server reads it in one pipeline.
  state.snLoc = r.location || ""; state.snType = r.type || "";
  const link = (loc, typ, label, cur) => el("a", { href: "#sensors/" + encodeURIComponent(loc) + "/" + encodeURIComponent(typ || ""), class: cur ? "active" : "" }, label);
  const kids = [el("p", { id: "sn-locations" }, "Locations: ", r.locations.length ? r.locations.map(l => [link(l, "", l, l === r.location), " "]) : "none")];
  if (r.location) kids.push(el("p", { id: "sn-types" }, "Types in " + r.location + ": ", r.types.map(t => [link(r.location, t, t, t === r.type), " "])));
  if (r.type) {
    const unit = r.latest.length ? r.latest[0].unit : "";
    kids.push(el("div", { class: "card" }, el("h3", {}, `${r.type} in ${r.location}, per hour (${r.tier}): average, min-max band`), seriesChart(r.buckets, unit)),
      el("h3", {}, "Latest readings"),
      table("sn-latest", ["Time", "Value#", "State"], r.latest.map(x => el("tr", {}, td(ago(x.time)), td(x.value + " " + (x.unit || ""), "n"), td(x.state || "")))));
  }
  document.getElementById("sn-detail").replaceChildren(...kids);
}

// --- AI memory ----------------------------------------------------------------

async function loadMemory() {
  const d = document.getElementById("ai-detail");
  if (!state.aiUser) { d.replaceChildren(el("p", { class: "muted" }, "Enter a user ID.")); return; }
  const q = new URLSearchParams({ user: state.aiUser });
  if (state.aiConv) q.set("conv", state.aiConv);
  else if (state.aiLast) q.set("last", state.aiLast);
  const r = await api("/api/aimemory?" + q);
  // Refreshes guess the last conversation shown, so that the server reads it with the context in one pipeline.
  state.aiLast = r.last_conversation || "";
  const kids = [el("div", { class: "cards" }, card("Tokens today (" + r.day + ")", r.tokens_today, "ai-tokens"),
    card("Conversation", r.conversation || "none", "ai-conv-id"), card("Messages", r.length, "ai-length"), card("Window tokens", r.window_tokens, "ai-window"))];
  if (r.recent_topics.length) kids.push(el("p", {}, "Recent topics: " + r.recent_topics.join(", ")));
  if (r.system) kids.push(el("h3", {}, "System prompt"), el("pre", { class: "inspect" }, r.system));
  if (r.summary) kids.push(el("h3", {}, "Summary of evicted messages"), el("pre", { class: "inspect" }, r.summary));
  kids.push(el("h3", {}, "Window" + (r.omitted ? " (" + r.omitted + " omitted)" : "")),
    table("ai-messages", ["Role", "Tokens#", "Written", "Content"], r.messages.map(m => el("tr", {}, td(m.role), tn(m.tokens), td(ago(m.timestamp)), td(m.content)))));
  d.replaceChildren(...kids);
}

// --- Cache ------------------------------------------------------------------

async function loadCache() {
  const r = await api("/api/cache");
  const w = state.config.writable;
  const pct = x => (100 * x).toFixed(1) + "%";
  const rateBar = x => { const b = el("span", { class: "bar" }); b.style.width = Math.round(160 * x) + "px"; return b; };
  const inval = tag => el("button", { class: "danger", "data-action": "invalidate", onclick: async () => {
    if (!confirm("Invalidate every entry tagged " + tag + "?")) return;
    try { await api("/api/cache/invalidate", { tag: tag }); showError(null); refresh(); } catch (e) { showError(e); }
  } }, "invalidate");
  document.getElementById("ca-detail").replaceChildren(...leftOut(r),
    el("h3", {}, "API cache by endpoint"),
    table("ca-endpoints", ["Endpoint", "Method", "Entries#", "Hits#", "Hit rate#", "", "Size#"], r.endpoints.map(e =>
      el("tr", { "data-endpoint": e.method + " " + e.endpoint }, td(el("code", {}, e.endpoint)), td(e.method), tn(e.entries), tn(e.hits),
        td(pct(e.hit_rate), "n"), td(rateBar(e.hit_rate)), td(bytes(e.bytes), "n")))),
    el("p", { class: "muted" }, "Hit rate: hits / (hits + entries) over the live entries; each entry was loaded once."),
    el("h3", {}, "Invalidation tags"),
    table("ca-tags", ["Tag", "Entries#", ""], r.tags.map(t =>
      el("tr", { "data-tag": t.tag }, td(el("code", {}, t.tag)), tn(t.members), td(w ? inval(t.tag) : "read-only")))));
}

// --- Metrics ----------------------------------------------------------------

// lineChart draws each line's per-sample increase.
function lineChart(id, lines) {
  const W = 560, H = 140, P = 28;
  const s = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: id });
  const rates = lines.map(l => l.vals.slice(1).map((v, i) => Math.max(0, v - l.vals[i])));
  const max = Math.max(1, ...rates.flat());
  s.append(svg("line", { x1: P, y1: H - P, x2: W - 8, y2: H - P, stroke: "#999" }));
  const label = svg("text", { x: 4, y: 14, "font-size": 11, fill: "#666" }); label.textContent = "per refresh, max " + max; s.append(label);
  rates.forEach((vals, k) => {
    if (!vals.length) return;
    const dx = (W - P - 8) / Math.max(1, vals.length - 1);
    const pts = vals.map((v, i) => `${(P + i * dx).toFixed(1)},${(H - P - (v / max) * (H - P - 20)).toFixed(1)}`).join(" ");
    s.append(svg("polyline", { points: pts, fill: "none", stroke: lines[k].color, "stroke-width": 2 }));
  });
  return s;
}

// quantile estimates a quantile from cumulative bucket counts: the upper
// bound of the bucket that holds it.
function quantile(bounds, cum, q) {
  const n = cum[cum.length - 1];
  if (!n) return "-";
  for (let i = 0; i < cum.length; i++) if (cum[i] >= q * n) return i < bounds.length ? "≤ " + bounds[i] : "> " + bounds[bounds.length - 1];
  return "-";
}

function histogram(m, s) {
  const W = 560, H = 150, B = 30, T = 10;
  const counts = s.buckets.map((c, i) => c - (i ? s.buckets[i - 1] : 0));
  const max = Math.max(1, ...counts);
  const g = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const bw = (W - 20) / counts.length;
  counts.forEach((c, i) => {
    const h = (c / max) * (H - B - T);
    g.append(svg("rect", { x: 10 + i * bw + 1, y: H - B - h, width: Math.max(1, bw - 2), height: h, fill: "#5b7bd5" }));
    if (counts.length <= 16 || i % 2 === 0) {
      const t = svg("text", { x: 10 + i * bw + bw / 2, y: H - 12, "font-size": 9, fill: "#666", "text-anchor": "middle" });
      t.textContent = i < m.bounds.length ? m.bounds[i] : "+Inf"; g.append(t);
    }
  });
  return el("div", { class: "card", "data-histogram": m.name + "{" + (s.labels || []).join(",") + "}" },
    el("h3", {}, m.name + ((s.labels || []).length ? " {" + s.labels.join(", ") + "}" : "")),
    el("p", { class: "muted" }, `count ${s.count}, mean ${(s.count ? s.sum / s.count : 0).toFixed(1)}, p50 ${quantile(m.bounds, s.buckets, 0.5)}, p95 ${quantile(m.bounds, s.buckets, 0.95)}`), g);
}

async function loadMetrics() {
  const r = await api("/api/metrics");
  const kids = [...leftOut(r), el("div", { class: "cards" }, card("Requests", r.http.total, "mt-total"), card("Accepted", r.http.accepted, "mt-accepted"),
      card("Errors", r.http.errors, "mt-errors"), card("Connections", r.http.connections, "mt-conns"), card("Speed /s", r.http.speed, "mt-speed")),
    el("div", { class: "card" }, el("h3", {}, "Throughput (requests and errors per refresh)"),
      lineChart("mt-throughput", [{ vals: r.history.total, color: "#2f4fb5" }, { vals: r.history.errors, color: "#b3261e" }])),
    el("h3", {}, "Endpoints"),
    table("mt-endpoints", ["Endpoint", "Requests#", "Errors#"], r.http.endpoints.map(e => el("tr", { "data-endpoint": e.endpoint }, td(el("code", {}, e.endpoint)), tn(e.requests), tn(e.errors, true))))];
  for (const m of r.metrics) {
    if (!m.series.length) continue;
    if (m.kind === "histogram") { for (const s of m.series) kids.push(histogram(m, s)); continue; }
    const top = Math.max(1, ...m.series.map(s => Math.abs(s.value)));
    kids.push(el("h3", {}, m.name + " (" + m.kind + ")"), table("mt-" + m.name, [...(m.labels || []), "Value#", ""], m.series.map(s => {
      const b = el("span", { class: "bar" }); b.style.width = Math.round(200 * Math.abs(s.value) / top) + "px";
      return el("tr", {}, (s.labels || []).map(l => td(l)), tn(s.value), td(b));
    })));
  }
  document.getElementById("mt-detail").replaceChildren(...kids);
}

// --- Routing and polling ----------------------------------------------------

const loaders = { schema: loadSchema, server: loadServer, keys: loadKeys, queues: loadQueues, sessions: loadUser, ratelimits: loadRateLimits,
  presence: loadPresence, locks: loadLocks, sensors: loadSensors, aimemory: loadMemory, cache: loadCache, metrics: loadMetrics };

// refresh loads the current page. Refreshes run one at a time, in the order
// asked (the timer, a route change, an action), so an older response never
// renders over a newer one, and at most one waits behind the running one. A
// refresh that began before the route changed neither shows its error nor
// marks the new page loaded (body's data-loaded, which the browser tests
// wait for).
function refresh() {
  if (!state.config) return state.busy;
  if (state.queued) return state.busy;
  state.queued = true;
  state.busy = state.busy.then(async () => {
    state.queued = false;
    const page = state.page, seq = state.routeSeq;
    try {
      await loaders[page]();
      if (seq !== state.routeSeq) return;
      showError(null);
      state.lastOK = Date.now(); state.lastFailed = false;
      const t = new Date();
      document.getElementById("updated").textContent = "updated " + [t.getHours(), t.getMinutes(), t.getSeconds()].map(n => String(n).padStart(2, "0")).join(":");
      document.getElementById("loading").hidden = true;
      document.body.dataset.loaded = page;
    } catch (e) {
      state.lastFailed = true;
      if (seq === state.routeSeq) { showError(e); document.getElementById("loading").hidden = true; }
    }
    staleMark();
  });
  return state.busy;
}

// staleMark shows "stale" when the last refresh failed or the last good one
// is older than two refresh intervals.
function staleMark() {
  if (!state.config) return;
  const old = state.lastOK && Date.now() - state.lastOK > 2 * state.config.refresh_ms;
  const st = document.getElementById("stale");
  st.hidden = !(state.lastFailed || old);
  st.title = state.lastFailed ? "the last refresh failed" : "no refresh for " + Math.round((Date.now() - state.lastOK) / 1000) + "s";
}

function route() {
  const raw = location.hash.replace(/^#/, "");
  const h = decodeURIComponent(raw);
  const [page, arg] = h.split(/\/(.*)/s);
  state.page = loaders[page] ? page : "schema";
  state.routes = (state.routes || 0) + 1;
  if (state.page === "queues") {
    const seg = raw.split("/").slice(1).map(decodeURIComponent);
    if (seg[0] && seg[0] !== state.queue) { state.qSelected.clear(); state.qOffset = 0; state.qSearch = ""; }
    if (seg[0]) state.queue = seg[0];
    const st = jobStates.includes(seg[1]) ? seg[1] : "dead";
    if (st !== state.qState) { state.qSelected.clear(); state.qOffset = 0; state.qSearch = ""; }
    state.qState = st;
    state.qJob = seg[2] || "";
  }
  if (state.page === "keys") state.keysDirty = true;
  if (state.page === "sessions" && arg) { state.user = arg; document.getElementById("user-id").value = arg; }
  if (state.page === "presence" && arg) { state.prUser = arg; document.getElementById("pr-user").value = arg; }
  if (state.page === "sensors" && arg) { const [l, t] = arg.split("/"); state.snLoc = l; state.snType = t || ""; }
  if (state.page === "aimemory" && arg) {
    const [u, c] = arg.split("/");
    state.aiUser = u; state.aiConv = c || ""; state.aiLast = "";
    document.getElementById("ai-user").value = u; document.getElementById("ai-conv").value = c || "";
  }
  if (state.page === "ratelimits" && arg) {
    if (arg.startsWith("key/")) state.rlKey = arg.slice(4);
    else if (arg.startsWith("id/")) { state.rlID = arg.slice(3); document.getElementById("rl-id").value = state.rlID; }
  }
  for (const s of document.querySelectorAll(".page")) s.hidden = s.id !== "page-" + state.page;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === state.page);
  document.getElementById("navselect").value = state.page;
  state.routeSeq++;
  delete document.body.dataset.loaded;
  document.getElementById("loading").hidden = false;
  refresh();
}

// takeToken moves a #token= of the URL into sessionStorage and drops it
// from the URL in place (history.replaceState: no history entry, and the
// token is not left in the tab's history).
function takeToken() {
  const m = location.hash.match(/(?:^#|&)token=([^&]*)/);
  if (!m) return;
  sessionStorage.setItem("redschema-token", decodeURIComponent(m[1]));
  const rest = location.hash.replace(/^#/, "").split("&").filter(p => !p.startsWith("token=")).join("&");
  history.replaceState(history.state, "", location.pathname + location.search + (rest ? "#" + rest : ""));
}

// boot loads the config and shows the page; it is idempotent: once it has
// succeeded it only refreshes, and concurrent calls share one attempt.
function boot() {
  if (state.config) return refresh();
  if (state.booting) return state.booting;
  state.booting = (async () => {
    try {
      const cfg = await api("/api/config");
      state.config = cfg;
      state.starts++;
      showError(null);
    } catch (e) { showError(e); return; } finally { state.booting = null; }
    const mode = document.getElementById("mode");
    mode.textContent = state.config.writable ? "writes enabled" : "read-only";
    mode.classList.toggle("write", state.config.writable);
    route();
    clearInterval(state.timer);
    state.timer = setInterval(refresh, state.config.refresh_ms);
    setInterval(staleMark, 1000);
  })();
  return state.booting;
}

// init wires the page once: every listener is added here, never on a retry.
function init() {
  takeToken();
  document.getElementById("tokenform").addEventListener("submit", ev => {
    ev.preventDefault();
    sessionStorage.setItem("redschema-token", document.getElementById("token").value);
    document.getElementById("token").value = "";
    document.getElementById("tokenbox").hidden = true;
    boot();
  });
  document.getElementById("inspect-form").addEventListener("submit", inspectKey);
  document.getElementById("schema-all").addEventListener("change", refresh);
  document.getElementById("keys-form").addEventListener("submit", ev => {
    ev.preventDefault();
    state.keysMatch = document.getElementById("keys-match").value.trim() || "*";
    state.keysCursor = ""; state.keysStack = []; state.keysDirty = true;
    refresh();
  });
  document.getElementById("keys-count").addEventListener("change", () => { state.keysCursor = ""; state.keysStack = []; state.keysDirty = true; refresh(); });
  document.getElementById("user-form").addEventListener("submit", ev => {
    ev.preventDefault();
    location.hash = "sessions/" + encodeURIComponent(document.getElementById("user-id").value.trim());
  });
  document.getElementById("rl-form").addEventListener("submit", ev => {
    ev.preventDefault();
    location.hash = "ratelimits/id/" + encodeURIComponent(document.getElementById("rl-id").value.trim());
  });
  document.getElementById("pr-form").addEventListener("submit", ev => {
    ev.preventDefault();
    location.hash = "presence/" + encodeURIComponent(document.getElementById("pr-user").value.trim());
  });
  document.getElementById("ai-form").addEventListener("submit", ev => {
    ev.preventDefault();
    const c = document.getElementById("ai-conv").value.trim();
    location.hash = "aimemory/" + encodeURIComponent(document.getElementById("ai-user").value.trim()) + (c ? "/" + encodeURIComponent(c) : "");
  });
  document.getElementById("navselect").addEventListener("change", ev => { location.hash = ev.target.value; });
  window.addEventListener("hashchange", () => { takeToken(); if (state.config) route(); });
  boot();
}

init();

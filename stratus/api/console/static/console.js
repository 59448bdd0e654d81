// The Stratus console: polls console/data every few seconds and draws it.
// Plain DOM (textContent only: no data is ever parsed as HTML). The token comes from
// the URL fragment (#token=...; a fragment is never sent to the server) or the form,
// and lives in this tab's sessionStorage.
"use strict";

const KEY = "stratus-console-token";
const DATA_URL = "console/data";
let refreshMs = 2000;
let timer = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function tokenFromFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = params.get("token");
  if (token) {
    sessionStorage.setItem(KEY, token);
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function showLogin(message) {
  document.getElementById("main").hidden = true;
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
  setStatus("signed out", "");
}

function setStatus(text, kind) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = "status " + (kind || "");
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (isNaN(date)) return iso;
  const today = date.toDateString() === new Date().toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

function units(rc) {
  if (rc.endsWith("MEMORY_MB")) return [[1, "MiB"], [1024, "GiB"], [1048576, "TiB"]];
  if (rc.endsWith("_GB")) return [[1, "GB"], [1000, "TB"]];
  if (rc.endsWith("KILOBIT_PER_SEC")) return [[1, "kbit/s"], [1000, "Mbit/s"], [1e6, "Gbit/s"]];
  if (rc.endsWith("KILOPACKET_PER_SEC")) return [[1, "kpps"], [1000, "Mpps"]];
  return [[1, ""]];
}

function number(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, "");
}

// "used / usable" in one unit, the usable amount's: "0.5 / 10 Gbit/s", never
// "500 Mbit/s / 10 Gbit/s".
function pair(rc, used, capacity) {
  const steps = units(rc);
  let i = 0;
  while (i + 1 < steps.length && Math.abs(capacity) >= steps[i + 1][0]) i++;
  const [size, unit] = steps[i];
  return `${number(used / size)} / ${number(capacity / size)} ${unit}`.trim();
}

// What a resource class is called on a bar: the well-known ones in words (the class
// itself is the bar's tooltip), others as they are, wrapped rather than cut.
const LABELS = {
  NET_BW_EGR_KILOBIT_PER_SEC: "NIC egress", NET_BW_IGR_KILOBIT_PER_SEC: "NIC ingress",
  NET_PACKET_RATE_KILOPACKET_PER_SEC: "NIC packet rate",
  NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC: "NIC egress packets",
  NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC: "NIC ingress packets",
};
function label(rc) {
  return LABELS[rc] || rc;
}

// The classes everyone looks for first, then the rest by name.
const FIRST = ["VCPU", "PCPU", "MEMORY_MB", "DISK_GB"];
function byImportance(a, b) {
  const [i, j] = [FIRST.indexOf(a), FIRST.indexOf(b)];
  if (i !== j && (i < 0 || j < 0)) return i < 0 ? 1 : -1;
  return i !== j ? i - j : a.localeCompare(b);
}

function bar(rc, a) {
  const share = a.capacity > 0 ? Math.min(1, a.used / a.capacity) : (a.used > 0 ? 1 : 0);
  const fill = el("div", {class: "fill" + (share >= 1 ? " full" : share >= 0.8 ? " high" : "")});
  fill.style.width = `${(share * 100).toFixed(1)}%`;   // CSSOM: allowed by the page's CSP
  return el("div", {class: "bar", "data-rc": rc,
                    title: `${rc}: ${a.used} used of ${a.capacity} usable ` +
                           `(total ${a.total}, reserved ${a.reserved})`},
            el("div", {class: "label"}, el("span", {class: "rc"}, label(rc)),
               el("span", {class: "amount"}, pair(rc, a.used, a.capacity))),
            el("div", {class: "track"}, fill));
}

function bars(resources) {
  const names = Object.keys(resources).sort(byImportance);
  return el("div", {class: "bars"}, ...names.map((rc) => bar(rc, resources[rc])));
}

function fillTable(id, rows, columns) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map((row) => columns(row)));
  if (!rows.length) {
    const width = document.querySelectorAll(`#${id} thead th`).length;
    body.append(el("tr", {}, el("td", {class: "empty", colspan: width}, "none")));
  }
}

function drawCapacity(capacity) {
  const total = document.getElementById("capacity-total");
  total.replaceChildren(el("h3", {}, "Cloud"), bars(capacity.total || {}));
  const cells = document.getElementById("capacity-cells");
  cells.replaceChildren(...(capacity.cells || []).map((cell) =>
    el("div", {class: "cell", "data-cell": cell.name},
       el("h3", {}, cell.name ? `Cell ${cell.name}` : "Not in a cell"),
       bars(cell.resources),
       ...cell.hosts.map((host) =>
         el("div", {class: "host", "data-host": host.host},
            el("div", {class: "name"}, host.host,
               host.provider !== host.host ? el("span", {class: "muted"}, host.provider) : null,
               hostState(host)),
            bars(host.resources))))));
}

function hostState(host) {
  if (!host.service) return null;
  const s = host.service;
  if (s.status === "disabled") {
    return el("span", {class: "tag disabled"},
              "disabled" + (s.disabled_reason ? `: ${s.disabled_reason}` : ""));
  }
  return s.state === "down" ? el("span", {class: "tag down"}, "down") : null;
}

function drawServices(services) {
  fillTable("services", services, (s) => el("tr", {"data-host": s.host, "data-binary": s.binary},
    el("td", {}, s.host), el("td", {}, s.binary), el("td", {}, s.cell),
    el("td", {class: `state ${s.state}`}, s.forced_down ? "down (forced)" : s.state),
    el("td", {class: `service-status ${s.status}`},
       s.status + (s.disabled_reason ? ` (${s.disabled_reason})` : "")),
    el("td", {}, when(s.updated_at))));
}

// A server by its name (its id in the tooltip); one no cell knows by its id's start.
function serverName(row) {
  return row.server_name || row.server.slice(0, 8);
}

function drawDecisions(decisions) {
  fillTable("decisions", decisions, (d) => {
    let where = d.reason || "";
    if (d.outcome === "chosen") {
      const counts = {};
      for (const host of d.hosts) counts[host] = (counts[host] || 0) + 1;
      where = Object.entries(counts).map(([h, n]) => (n > 1 ? `${h} ×${n}` : h)).join(", ");
    }
    return el("tr", {"data-server": d.server},
      el("td", {}, when(d.at)),
      el("td", {}, d.action),
      el("td", {title: d.server},
         serverName(d) + (d.count > 1 ? ` and ${d.count - 1} more` : "")),
      el("td", {}, d.flavor || ""),
      el("td", {class: d.outcome}, d.outcome.replace(/_/g, " ")),
      el("td", {class: "reason"}, where),
      el("td", {}, d.outcome === "chosen" ? d.alternates : ""),
      el("td", {}, `${d.duration_ms} ms`));
  });
}

function drawServers(servers) {
  document.getElementById("servers-total").textContent =
    `(${servers.total}; the newest ${servers.recent.length} listed)`;
  document.getElementById("servers-by-status").replaceChildren(
    ...Object.entries(servers.by_status).map(([status, n]) =>
      el("span", {class: "chip"}, `${status} ${n}`)));
  fillTable("servers", servers.recent, (s) => el("tr", {"data-name": s.name, "data-id": s.id},
    el("td", {title: s.id}, s.name), el("td", {class: `server-status ${s.status}`}, s.status),
    el("td", {}, s.host || ""), el("td", {}, s.cell || ""), el("td", {}, s.flavor || ""),
    el("td", {}, when(s.created)), el("td", {class: "reason", title: s.fault}, s.fault || "")));
}

function drawMigrations(migrations) {
  fillTable("migrations", migrations, (m) => el("tr", {"data-id": m.id},
    el("td", {title: m.server}, serverName(m)), el("td", {}, m.type),
    el("td", {}, m.status),
    el("td", {}, m.source || ""), el("td", {}, m.dest || ""),
    el("td", {}, m.old_flavor === m.new_flavor ? (m.new_flavor || "")
                                               : `${m.old_flavor} → ${m.new_flavor}`),
    el("td", {}, when(m.updated || m.created))));
}

function draw(data) {
  document.getElementById("problems").replaceChildren(
    ...data.problems.map((p) => el("li", {}, p)));
  drawCapacity(data.capacity);
  drawServices(data.services);
  drawDecisions(data.decisions);
  drawServers(data.servers);
  drawMigrations(data.migrations);
  document.getElementById("updated").textContent = `updated ${when(data.generated_at)}`;
  refreshMs = (data.refresh_seconds || 2) * 1000;
}

async function refresh() {
  clearTimeout(timer);
  const token = sessionStorage.getItem(KEY);
  if (!token) return showLogin();
  try {
    const resp = await fetch(DATA_URL, {headers: {"X-Auth-Token": token,
                                                  "Accept": "application/json"},
                                        cache: "no-store", credentials: "omit"});
    if (resp.status === 401 || resp.status === 403) {
      sessionStorage.removeItem(KEY);
      const body = await resp.json().catch(() => ({}));
      const fault = Object.values(body)[0] || {};
      return showLogin(`Refused (${resp.status}): ${fault.message || resp.statusText}`);
    }
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    draw(await resp.json());
    document.getElementById("login").hidden = true;
    document.getElementById("main").hidden = false;
    setStatus("live", "live");
  } catch (err) {
    setStatus(`not updating: ${err.message}`, "stale");
  }
  timer = setTimeout(refresh, refreshMs);
}

document.addEventListener("DOMContentLoaded", () => {
  tokenFromFragment();
  document.getElementById("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, document.getElementById("token").value);
    refresh();
  });
  window.addEventListener("hashchange", () => { tokenFromFragment(); refresh(); });
  refresh();
});

// Small helpers shared by the dashboard's views: building elements (text only, never HTML strings), the API, and
// formatting. No framework: the page is a few tables, forms and charts.

/** Creates an element; `attrs` may hold `on…` listeners; children are nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "className") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

let csrf = "";
/** Remembers the session's CSRF value for {@link post}. */
export function setCsrf(value) {
  csrf = value;
}

/** GETs an API route; a 401 sends the browser to the sign-in page. */
export async function get(route, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ""));
  const response = await fetch(`/dashboard/api/${route}?${query}`, {
    headers: { accept: "application/json" },
  });
  return answer(response);
}

/** POSTs JSON to an action route, with the CSRF header. */
export async function post(route, body) {
  const response = await fetch(`/dashboard/api/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hookledger-csrf": csrf },
    body: JSON.stringify(body),
  });
  return answer(response);
}

async function answer(response) {
  if (response.status === 401) {
    location.assign("/dashboard/login");
    throw new Error("signed out");
  }
  const value = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(value.message ?? `the server answered ${response.status}`);
  return value;
}

/** A date as local time, to the second. */
export function when(value) {
  if (!value) return "";
  const date = new Date(value);
  return date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

/** A duration in seconds, short. */
export function seconds(value) {
  if (value === null || value === undefined) return "–";
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 120) return `${value.toFixed(1)} s`;
  if (value < 7200) return `${Math.round(value / 60)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

/** A status badge, its colour backed by its word. */
export function badge(status) {
  return h("span", { className: `badge s-${status}` }, status);
}

/** A link to one event's page. */
export function eventLink(source, key, text = key) {
  return h("a", { href: `#/event/${encodeURIComponent(source)}/${encodeURIComponent(key)}` }, text);
}

/** Asks the user in the page's dialog; resolves true on Confirm. */
export function confirmAction(title, text, ok = "Confirm") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

// The pieces the list views share: the filter form, the events table, a plain table.
import { badge, eventLink, h, when } from "./dom.js";

const FILTERS = [
  ["id", "Event id", "text"],
  ["source", "Source", "text"],
  ["type", "Type", "text"],
  ["status", "Status", ["", "pending", "failed", "settled", "dead", "inline"]],
  ["outcome", "Outcome", ["", "applied", "stale", "unhandled", "ignored"]],
  ["entity", "Entity (type:id)", "text"],
  ["since", "Received from", "datetime-local"],
  ["until", "Received before", "datetime-local"],
];

/** The filter form of a list; submitting it changes the address, so filters are shareable. */
export function filterForm(query, target, fields = FILTERS) {
  const form = h("form", { className: "filters", role: "search", "aria-label": "Filter events" });
  for (const [name, label, kind] of fields) {
    const id = `f-${name}`;
    const value = query.get(name) ?? "";
    const control = Array.isArray(kind)
      ? h(
          "select",
          { id, name },
          kind.map((o) => h("option", { value: o, selected: o === value }, o || "any")),
        )
      : h("input", { id, name, type: kind, value: kind === "datetime-local" ? toLocalInput(value) : value });
    form.append(h("label", { for: id }, label, control));
  }
  form.append(h("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, , kind] of fields) {
      const value = form.elements[name].value.trim();
      if (value) next.set(name, kind === "datetime-local" ? new Date(value).toISOString() : value);
    }
    location.hash = `#/${target}?${next}`;
  });
  return form;
}

function toLocalInput(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** The table of a page of events; `selectable` adds a checkbox per row. */
export function eventsTable(events, { selectable = false, fresh = new Set() } = {}) {
  const head = ["Received", "Source", "Event id", "Type", "Status", "Outcome", "Attempts"];
  return h(
    "table",
    { "aria-label": "Events" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        selectable && h("th", { scope: "col" }, h("span", { className: "visually-hidden" }, "Select")),
        head.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h(
      "tbody",
      {},
      events.length === 0 &&
        h("tr", {}, h("td", { colspan: head.length + 1, className: "muted" }, "No events match.")),
      events.map((e) =>
        h(
          "tr",
          { className: fresh.has(`${e.source}\u0000${e.dedupeKey}`) ? "new" : "", "data-key": e.dedupeKey },
          selectable &&
            h(
              "td",
              {},
              h("input", {
                type: "checkbox",
                "aria-label": `Select ${e.dedupeKey}`,
                "data-source": e.source,
                "data-key": e.dedupeKey,
              }),
            ),
          h("td", {}, when(e.receivedAt)),
          h("td", {}, e.source),
          h("td", { className: "mono id" }, eventLink(e.source, e.dedupeKey)),
          h("td", { className: "mono" }, e.type),
          h("td", {}, badge(e.status)),
          h("td", {}, e.outcome ?? ""),
          h("td", {}, String(e.attempts)),
        ),
      ),
    ),
  );
}

/** A plain table of rows of cells (text or nodes). */
export function table(head, rows) {
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.length === 0 && h("tr", {}, h("td", { colspan: head.length, className: "muted" }, "None.")),
      rows.map((r) =>
        h(
          "tr",
          {},
          r.map((c) => h("td", {}, c)),
        ),
      ),
    ),
  );
}

/** The query with `name` set to `value`, or removed when `value` is undefined. */
export function withParam(query, name, value) {
  const next = new URLSearchParams(query);
  if (value === undefined) next.delete(name);
  else next.set(name, value);
  return next;
}

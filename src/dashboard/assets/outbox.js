// The outbox view: the messages handlers sent with ctx.outbox.send, dead ones retried (each retry recorded), and
// one message with its payload and last answer (docs/outbox.md).
import { badge, confirmAction, eventLink, get, h, post, when } from "./dom.js";
import { filterForm, table } from "./list.js";

const OUTBOX_FILTERS = [
  ["status", "Status", ["", "pending", "sent", "dead"]],
  ["source", "Source", "text"],
  ["sender", "Sender", "text"],
];

const messageLink = (key) =>
  h("a", { href: `#/outbox-message/${encodeURIComponent(key)}`, className: "mono" }, key);

/** The newest messages matching the filter, with their attempts and last error; dead ones can be retried. */
export async function outboxView(main, query) {
  main.append(h("h1", {}, "Outbox"), filterForm(query, "outbox", OUTBOX_FILTERS));
  const params = Object.fromEntries(query);
  const { messages } = await get("outbox", params);
  const note = h("p", { role: "status" });
  const rows = messages.map((m) => [
    m.status === "dead"
      ? h("input", {
          type: "checkbox",
          "aria-label": `Select ${m.idempotencyKey}`,
          "data-key": m.idempotencyKey,
        })
      : "",
    when(m.createdAt),
    eventLink(m.source, m.eventId, `${m.source} ${m.eventId}`),
    m.sender,
    messageLink(m.idempotencyKey),
    badge(m.status),
    String(m.attempts),
    m.lastStatus === null ? "–" : String(m.lastStatus),
    h("span", { className: "error" }, m.lastError ?? ""),
  ]);
  const list = table(
    ["", "Written", "Event", "Sender", "Idempotency key", "Status", "Attempts", "Last HTTP", "Last error"],
    rows,
  );
  list.setAttribute("aria-label", "Outbox messages");
  const holder = h("div", {}, list);
  const retry = h("button", { type: "button" }, "Retry selected");
  retry.addEventListener("click", async () => {
    const keys = [...holder.querySelectorAll("input[type=checkbox]:checked")].map((box) => box.dataset.key);
    if (keys.length === 0) {
      note.textContent = "Select dead messages first.";
      return;
    }
    const text = "Each is sent again now, under the same idempotency key. This is recorded under your name.";
    if (!(await confirmAction(`Retry ${keys.length} message${keys.length === 1 ? "" : "s"}?`, text, "Retry")))
      return;
    const { retried } = await post("outbox-retry", { keys });
    note.textContent = `Retried ${retried.length} of ${keys.length}.`;
    reload();
  });
  const retryAll = h("button", { type: "button", className: "secondary" }, "Retry all dead matching");
  retryAll.addEventListener("click", async () => {
    const filter = Object.fromEntries(
      Object.entries({ source: params.source, sender: params.sender }).filter(([, v]) => v),
    );
    const scope =
      Object.entries(filter)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") || "every source and sender";
    const text = `Every dead message of ${scope} is sent again now. This is recorded under your name.`;
    if (!(await confirmAction("Retry all dead messages?", text, "Retry all"))) return;
    const { retried } = await post("outbox-retry", { filter });
    note.textContent = `Retried ${retried.length} dead message${retried.length === 1 ? "" : "s"}.`;
    reload();
  });
  main.append(h("div", { className: "toolbar" }, retry, retryAll), note, holder);
  if (messages.length === 200)
    main.append(h("p", { className: "muted" }, "The newest 200; narrow the filter for more."));
  return undefined;
}

/** One message: where it comes from, its attempts, its last answer and its payload. */
export async function outboxMessageView(main, key) {
  const { message: m } = await get("outbox-message", { key });
  const facts = [
    ["Idempotency key", h("code", {}, m.idempotencyKey)],
    ["Event", eventLink(m.source, m.eventId, `${m.source} ${m.eventId}`)],
    ["Position or key", m.key],
    ["Sender", m.sender],
    ["Status", badge(m.status)],
    ["Attempts", String(m.attempts)],
    ["Written", when(m.createdAt)],
    ["Sent", when(m.sentAt) || "–"],
    ["Next attempt", m.status === "pending" ? when(m.nextAttemptAt) : "–"],
    ["Last HTTP status", m.lastStatus === null ? "–" : String(m.lastStatus)],
    ["Last error", m.lastError ? h("span", { className: "error" }, m.lastError) : "–"],
  ];
  main.append(
    h("p", {}, h("a", { href: "#/outbox" }, "← Outbox")),
    h("h1", {}, `${m.sender} `, h("span", { className: "mono" }, m.idempotencyKey)),
    h(
      "dl",
      { className: "facts" },
      facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
    ),
    h("h2", {}, "Payload"),
    h("pre", { tabindex: "0", "aria-label": "Payload" }, JSON.stringify(m.payload, null, 2)),
  );
}

function reload() {
  setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 300);
}

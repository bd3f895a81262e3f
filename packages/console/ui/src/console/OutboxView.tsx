import type { DeliveryRecordPayload } from "@sessions/core";
import { useEffect, useState } from "preact/hooks";
import { errorText, onGap } from "../lib/connection.js";
import type { ConsoleModel } from "../lib/console-model.js";
import { clock } from "../lib/format.js";

const STATUSES = ["", "queued", "delivered", "suppressed", "failed"] as const;
const REFRESH_MS = 1000;

function statusOf(d: DeliveryRecordPayload): string {
  if (d.status === "queued" && d.attempts > 0) return "retrying";
  return d.status === "queued" ? "pending" : d.status;
}

/** The durable outbox: what is pending, retrying, delivered, suppressed by policy, or failed — live. */
export function OutboxView({ model, onSelect }: { model: ConsoleModel; onSelect: (key: string) => void }) {
  const [status, setStatus] = useState<(typeof STATUSES)[number]>("");
  const [deliveries, setDeliveries] = useState<DeliveryRecordPayload[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    let live = true;
    const load = () =>
      model.client.deliveries.list({ limit: 200, ...(status ? { status } : {}) }).then(
        (page) => {
          if (!live) return;
          // A page fetched before a `delivery` event arrived must not undo it: the newer record of each stays.
          setDeliveries((known) => {
            const byId = new Map(known.map((d) => [d.id, d]));
            return page.deliveries.map((d) => {
              const seen = byId.get(d.id);
              return seen !== undefined && seen.updatedAt > d.updatedAt ? seen : d;
            });
          });
          setError(undefined);
        },
        (e: unknown) => live && setError(errorText(e)),
      );
    void load();
    const offDelivery = model.client.on("delivery", (payload) => {
      const record = payload as DeliveryRecordPayload;
      if (typeof record?.id !== "string") return;
      setDeliveries((list) => {
        const rest = list.filter((d) => d.id !== record.id);
        return status && record.status !== status ? rest : [record, ...rest];
      });
    });
    const offGap = onGap(() => void load());
    // The gateway sends a `delivery` event when a delivery ends (delivered, suppressed, failed); new and retrying
    // ones are fetched while the view is open.
    const poll = setInterval(() => {
      if (document.visibilityState === "visible") void load();
    }, REFRESH_MS);
    return () => {
      live = false;
      clearInterval(poll);
      offDelivery();
      offGap();
    };
  }, [model, status]);

  const canRetry = model.client.hello?.features.methods.includes("deliveries.retry") ?? false;
  const retry = (id: string) =>
    model.client.request("deliveries.retry", { id }).then(
      (record) => setDeliveries((list) => list.map((d) => (d.id === id ? record : d))),
      (e: unknown) => setError(errorText(e)),
    );
  const sorted = [...deliveries].sort((a, b) => b.updatedAt - a.updatedAt);
  return (
    <section aria-labelledby="outbox-title" class="panel">
      <h2 id="outbox-title">Outbox</h2>
      <div class="field inline">
        <label for="outbox-status">Status</label>
        <select
          id="outbox-status"
          value={status}
          onChange={(e) => setStatus(e.currentTarget.value as typeof status)}
        >
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s === "" ? "all" : s === "queued" ? "pending / retrying" : s}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {sorted.length === 0 && <p class="muted">No deliveries.</p>}
      <ul class="cards" aria-label="Deliveries">
        {sorted.map((d) => (
          <li key={d.id} class="card" data-delivery={d.id} data-status={d.status}>
            <div>
              <span class={`tag status-${statusOf(d)}`}>{statusOf(d)}</span> <span class="tag">{d.kind}</span>{" "}
              <span class="muted small">
                {clock(d.updatedAt)} · attempts {d.attempts}
                {d.status === "queued" && d.attempts > 0 ? ` · next at ${clock(d.nextAttemptAt)}` : ""}
              </span>
            </div>
            <div>
              <button type="button" class="link" onClick={() => onSelect(d.sessionKey)}>
                {d.sessionKey}
              </button>{" "}
              → {d.channel}:{d.to}
              {d.threadId ? ` (thread ${d.threadId})` : ""}
            </div>
            {d.lastError && <p class="reason">{d.lastError}</p>}
            <p class="text preview">{d.text}</p>
            {model.canWrite && canRetry && (d.status === "failed" || d.status === "suppressed") && (
              <button type="button" onClick={() => retry(d.id)}>
                Retry
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

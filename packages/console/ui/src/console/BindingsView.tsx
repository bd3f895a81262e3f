import type { ThreadBindingPayload } from "@sessions/core";
import { useEffect, useState } from "preact/hooks";
import { errorText, onGap } from "../lib/connection.js";
import type { ConsoleModel } from "../lib/console-model.js";
import { ago } from "../lib/format.js";

type Binding = ThreadBindingPayload;

/** When a binding expires: idle time since the last message, or its maximum age (0 = no limit). */
export function expiresAt(b: Binding): number | undefined {
  const limits = [
    b.idleHours > 0 ? b.lastActivityAt + b.idleHours * 3_600_000 : undefined,
    b.maxAgeHours > 0 ? b.boundAt + b.maxAgeHours * 3_600_000 : undefined,
  ].filter((t): t is number => t !== undefined);
  return limits.length === 0 ? undefined : Math.min(...limits);
}

/** Platform threads bound to sessions (`sessions_spawn({ thread: true })`): where each thread's messages go. */
export function BindingsView({ model, onSelect }: { model: ConsoleModel; onSelect: (key: string) => void }) {
  const [bindings, setBindings] = useState<Binding[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const supported = model.client.hello?.features.methods.includes("bindings.list") ?? false;

  useEffect(() => {
    if (!supported) return;
    let live = true;
    const load = () =>
      (model.client.request as (method: string, params: unknown) => Promise<unknown>)(
        "bindings.list",
        {},
      ).then(
        (page) => live && setBindings((page as { bindings: Binding[] }).bindings),
        (e: unknown) => live && setError(errorText(e)),
      );
    void load();
    const offChanged = model.client.on("sessions.changed", () => void load());
    const offGap = onGap(() => void load());
    return () => {
      live = false;
      offChanged();
      offGap();
    };
  }, [model, supported]);

  return (
    <section aria-labelledby="bindings-title" class="panel">
      <h2 id="bindings-title">Thread bindings</h2>
      {!supported && <p class="muted">This gateway does not list thread bindings.</p>}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {bindings?.length === 0 && <p class="muted">No thread is bound to a session.</p>}
      {bindings && bindings.length > 0 && (
        <table class="grid">
          <caption class="sr-only">Thread bindings</caption>
          <thead>
            <tr>
              <th scope="col">Thread</th>
              <th scope="col">Session</th>
              <th scope="col">Last activity</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            {bindings.map((b) => {
              const expiry = expiresAt(b);
              return (
                <tr key={`${b.channel}/${b.accountId}/${b.threadId}`}>
                  <td>
                    {b.channel}:{b.parentTo ?? b.to} › thread {b.threadId}
                    {b.accountId !== "default" ? ` (account ${b.accountId})` : ""}
                  </td>
                  <td>
                    <button type="button" class="link" onClick={() => onSelect(b.sessionKey)}>
                      {b.sessionKey}
                    </button>
                  </td>
                  <td>{ago(b.lastActivityAt)}</td>
                  <td>{expiry === undefined ? "never" : new Date(expiry).toLocaleString()}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

import { useState } from "preact/hooks";
import { errorText } from "../lib/connection.js";
import type { ConsoleModel } from "../lib/console-model.js";
import { ago, clock } from "../lib/format.js";
import { useStore } from "../lib/store.js";

/** Runs under way on the gateway (and the last ones that ended), live from events, with abort. */
export function RunsView({
  model,
  onSelect,
  onTree,
}: {
  model: ConsoleModel;
  onSelect: (key: string) => void;
  onTree: (runId: string) => void;
}) {
  const runs = useStore(model.runs);
  const [error, setError] = useState<string | undefined>(undefined);
  const [wanted, setWanted] = useState("");
  const running = runs.filter((r) => r.state === "running");
  const ended = runs.filter((r) => r.state !== "running");
  return (
    <section aria-labelledby="runs-title" class="panel">
      <h2 id="runs-title">Runs</h2>
      <p class="muted small">
        Every run under way on the gateway, whenever it started; ended runs since this console connected.
      </p>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault();
          if (wanted.trim() !== "") onTree(wanted.trim());
        }}
      >
        <label>
          Run id <input value={wanted} onInput={(e) => setWanted((e.target as HTMLInputElement).value)} />
        </label>{" "}
        <button type="submit">Show tree</button>
      </form>
      <h3>Under way ({running.length})</h3>
      {running.length === 0 && <p class="muted">Nothing is running.</p>}
      <ul class="cards" aria-label="Runs under way">
        {running.map((run) => (
          <li key={run.runId} class="card" data-run={run.runId}>
            <div>
              {run.queued ? <span class="tag">queued</span> : <span class="tag live">running</span>}{" "}
              <code>{run.runId}</code> · {run.queued ? "waiting since" : "started"} {ago(run.startedAt)}
              {run.lastTool && <span class="muted"> · last tool {run.lastTool}</span>}
            </div>
            <div>
              Session:{" "}
              {run.sessionKey ? (
                <button type="button" class="link" onClick={() => onSelect(run.sessionKey as string)}>
                  {run.sessionKey}
                </button>
              ) : (
                <span class="muted">finding…</span>
              )}
            </div>
            {run.text && <p class="text preview">{run.text}</p>}
            <button type="button" onClick={() => onTree(run.runId)}>
              Tree
            </button>{" "}
            {model.canWrite && run.sessionKey && (
              <button
                type="button"
                class="danger"
                onClick={() =>
                  model.client.chat.abort({ sessionKey: run.sessionKey as string, runId: run.runId }).then(
                    () => setError(undefined),
                    (e: unknown) => setError(errorText(e)),
                  )
                }
              >
                Abort run
              </button>
            )}
          </li>
        ))}
      </ul>
      <h3>Ended</h3>
      <table class="grid">
        <caption class="sr-only">Runs that ended</caption>
        <thead>
          <tr>
            <th scope="col">Ended</th>
            <th scope="col">Outcome</th>
            <th scope="col">Session</th>
            <th scope="col">Reply</th>
            <th scope="col">
              <span class="sr-only">Tree</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {ended.map((run) => (
            <tr key={run.runId}>
              <td>{clock(run.endedAt)}</td>
              <td>
                <span class={`tag state-${run.state}`}>{run.state}</span>
              </td>
              <td>
                {run.sessionKey ? (
                  <button type="button" class="link" onClick={() => onSelect(run.sessionKey as string)}>
                    {run.sessionKey}
                  </button>
                ) : (
                  "—"
                )}
              </td>
              <td class="clip">{run.error ?? run.text}</td>
              <td>
                <button type="button" class="link" onClick={() => onTree(run.runId)}>
                  Tree
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

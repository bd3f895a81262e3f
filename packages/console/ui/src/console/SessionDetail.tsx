import { QUEUE_MODES, type QueueMode } from "@sessions/core";
import { useState } from "preact/hooks";
import { MessageView, StreamingView } from "../components/MessageView.js";
import { errorText, newKey } from "../lib/connection.js";
import type { ConsoleModel } from "../lib/console-model.js";
import { ago, nameOf } from "../lib/format.js";
import type { SessionInfo } from "../lib/sessions.js";
import { useStore } from "../lib/store.js";
import { useTranscript } from "../lib/use-transcript.js";

function Settings({ model, info }: { model: ConsoleModel; info: SessionInfo }) {
  const row = info.row;
  const [label, setLabel] = useState(row.label ?? "");
  const [policy, setPolicy] = useState(row.sendPolicy ?? "inherit");
  const [visibility, setVisibility] = useState<string>(row.visibility ?? "inherit");
  const [queueMode, setQueueMode] = useState<string>(row.queueMode ?? "inherit");
  // Fresh for each session (the form is keyed by it, below), and never reset by a background refresh, which must
  // not undo choices not yet saved. (A reset in an effect ran after the first paint: a choice made at once was lost.)
  const [status, setStatus] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const readOnly = !model.canWrite;
  return (
    <form
      class="settings"
      aria-label="Session settings"
      onSubmit={(event) => {
        event.preventDefault();
        const sendPolicy = policy === "inherit" ? null : (policy as "allow" | "deny");
        const visibilityOverride =
          visibility === "inherit" ? null : (visibility as "self" | "tree" | "agent" | "all");
        model.client.sessions
          .patch({
            key: row.key,
            label: label.trim() === "" ? null : label.trim(),
            sendPolicy,
            visibility: visibilityOverride,
            queueMode: queueMode === "inherit" ? null : (queueMode as QueueMode),
          })
          .then(
            () => {
              setStatus({ ok: true, text: "Saved." });
              model.refreshSessions();
            },
            (error: unknown) => setStatus({ ok: false, text: errorText(error) }),
          );
      }}
    >
      <div class="field">
        <label for="session-label">Label</label>
        <input
          id="session-label"
          value={label}
          disabled={readOnly}
          onInput={(e) => setLabel(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="session-send-policy">Send policy</label>
        <select
          id="session-send-policy"
          value={policy}
          disabled={readOnly}
          onChange={(e) => setPolicy(e.currentTarget.value as typeof policy)}
        >
          <option value="inherit">inherit (config rules)</option>
          <option value="allow">allow</option>
          <option value="deny">deny</option>
        </select>
      </div>
      <div class="field">
        <label for="session-visibility">Visibility</label>
        <select
          id="session-visibility"
          value={visibility}
          disabled={readOnly}
          onChange={(e) => setVisibility(e.currentTarget.value)}
        >
          <option value="inherit">inherit (tools.sessions.visibility)</option>
          <option value="self">self</option>
          <option value="tree">tree</option>
          <option value="agent">agent</option>
          <option value="all">all</option>
        </select>
      </div>
      <div class="field">
        <label for="session-queue-mode">Queue mode</label>
        <select
          id="session-queue-mode"
          value={queueMode}
          disabled={readOnly}
          onChange={(e) => setQueueMode(e.currentTarget.value)}
        >
          <option value="inherit">inherit (the agent's queueMode)</option>
          {QUEUE_MODES.map((mode) => (
            <option value={mode}>{mode}</option>
          ))}
        </select>
      </div>
      <button type="submit" disabled={readOnly}>
        Save
      </button>
      {status && (
        <p role={status.ok ? "status" : "alert"} class={status.ok ? "ok" : "error"}>
          {status.text}
        </p>
      )}
    </form>
  );
}

function Composer({ model, sessionKey }: { model: ConsoleModel; sessionKey: string }) {
  const [text, setText] = useState("");
  const [deliver, setDeliver] = useState(false);
  const [status, setStatus] = useState<string | undefined>(undefined);
  if (!model.canWrite) return null;
  return (
    <form
      class="composer"
      aria-label="Send a message into this session"
      onSubmit={(event) => {
        event.preventDefault();
        const message = text.trim();
        if (!message) return;
        setStatus(undefined);
        model.client.chat
          .send({
            sessionKey,
            message,
            idempotencyKey: newKey("console"),
            ...(deliver ? { deliver: true } : {}),
          })
          .then(
            () => setText(""),
            (error: unknown) => setStatus(errorText(error)),
          );
      }}
    >
      <label for="console-message">Message as operator</label>
      <textarea id="console-message" rows={2} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <label class="check">
        <input type="checkbox" checked={deliver} onChange={(e) => setDeliver(e.currentTarget.checked)} />
        Deliver the reply to the session's channel
      </label>
      <button type="submit">Send</button>
      {status && (
        <p role="alert" class="error">
          {status}
        </p>
      )}
    </form>
  );
}

/** One session: what it is, its settings (`sessions.patch`), its runs under way, its transcript. */
export function SessionDetail(props: {
  model: ConsoleModel;
  info: SessionInfo;
  onSelect: (key: string) => void;
  onBack: () => void;
}) {
  const { model, info } = props;
  const row = info.row;
  const sessions = useStore(model.sessions);
  const runs = useStore(model.runs).filter((r) => r.sessionKey === row.key && r.state === "running");
  const transcript = useTranscript(model.client, row.key);
  const [abortError, setAbortError] = useState<string | undefined>(undefined);
  const children = sessions.filter((s) => s.row.spawnedBy === row.key);
  return (
    <section class="detail" aria-labelledby="detail-title">
      <button type="button" class="back" onClick={props.onBack}>
        ← Sessions
      </button>
      <h2 id="detail-title">{nameOf(row)}</h2>
      <dl class="facts">
        <dt>Key</dt>
        <dd>
          <code>{row.key}</code>
        </dd>
        <dt>Kind</dt>
        <dd>
          {info.kind} ({row.kind}
          {row.chatType && row.chatType !== row.kind ? `, ${row.chatType}` : ""})
        </dd>
        <dt>Channel</dt>
        <dd>{info.channel}</dd>
        <dt>Agent</dt>
        <dd>{info.agentId}</dd>
        <dt>Updated</dt>
        <dd>{ago(row.updatedAt)}</dd>
        {row.spawnedBy && (
          <>
            <dt>Spawned by</dt>
            <dd>
              <button type="button" class="link" onClick={() => props.onSelect(row.spawnedBy as string)}>
                {row.spawnedBy}
              </button>
            </dd>
          </>
        )}
        {children.length > 0 && (
          <>
            <dt>Children</dt>
            <dd>
              {children.map((c) => (
                <button key={c.row.key} type="button" class="link" onClick={() => props.onSelect(c.row.key)}>
                  {nameOf(c.row)}
                </button>
              ))}
            </dd>
          </>
        )}
        {row.deliveryContext && (
          <>
            <dt>Replies go to</dt>
            <dd>
              {row.deliveryContext.channel} → {row.deliveryContext.to}
              {row.deliveryContext.threadId ? ` (thread ${row.deliveryContext.threadId})` : ""}
            </dd>
          </>
        )}
        {row.totalTokens !== undefined && (
          <>
            <dt>Tokens</dt>
            <dd>{row.totalTokens}</dd>
          </>
        )}
      </dl>
      <Settings key={info.row.key} model={model} info={info} />
      {runs.length > 0 && (
        <section class="live-runs" aria-label="Runs under way">
          {runs.map((run) => (
            <div key={run.runId} class="live-run">
              <span class="tag live">running</span> <code>{run.runId}</code>
              {run.lastTool && <span class="muted"> · {run.lastTool}</span>}
              {model.canWrite && (
                <button
                  type="button"
                  class="danger"
                  onClick={() =>
                    model.client.chat.abort({ sessionKey: row.key, runId: run.runId }).then(
                      () => setAbortError(undefined),
                      (error: unknown) => setAbortError(errorText(error)),
                    )
                  }
                >
                  Abort run
                </button>
              )}
            </div>
          ))}
          {abortError && (
            <p role="alert" class="error">
              {abortError}
            </p>
          )}
        </section>
      )}
      <h3>Transcript</h3>
      {transcript.hasMore && (
        <button type="button" onClick={transcript.loadOlder}>
          Load older messages
        </button>
      )}
      {transcript.error && (
        <p role="alert" class="error">
          {transcript.error}
        </p>
      )}
      <ol class="transcript" aria-label="Transcript">
        {transcript.messages.map((m) => (
          <MessageView key={m.id} message={m} />
        ))}
        {[...transcript.streaming].map(([runId, text]) => (
          <StreamingView key={runId} text={text} />
        ))}
      </ol>
      {!transcript.loading && transcript.messages.length === 0 && <p class="muted">No messages.</p>}
      <Composer model={model} sessionKey={row.key} />
    </section>
  );
}

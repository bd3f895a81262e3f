import { dmScopeOf } from "@sessions/core";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { MessageView, StreamingView } from "../components/MessageView.js";
import { type Connected, connection, errorText, logout, newKey } from "../lib/connection.js";
import { useStore } from "../lib/store.js";
import { useTranscript } from "../lib/use-transcript.js";
import { webchatKey } from "../lib/webchat-key.js";
import { visitorId } from "./visitor.js";

function Conversation({ connected, sessionKey }: { connected: Connected; sessionKey: string }) {
  const { client, canWrite } = connected;
  const transcript = useTranscript(client, sessionKey);
  const { offline } = useStore(connection);
  const [text, setText] = useState("");
  const [error, setError] = useState<string | undefined>(undefined);
  const [running, setRunning] = useState<string | undefined>(undefined);
  const end = useRef<HTMLDivElement>(null);

  useEffect(() => {
    // Hear every run of this session (announces and sub-agent results included), also after reconnects.
    void client.sessions.subscribe({ keys: [sessionKey] }).catch(() => undefined);
    const off = client.on("chat", (payload) => {
      const event = payload as { runId?: string; sessionKey?: string; state?: string };
      if (event?.sessionKey !== sessionKey || !event.runId) return;
      if (event.state === "delta") setRunning(event.runId);
      else if (event.state === "final" || event.state === "aborted" || event.state === "error")
        setRunning((current) => (current === event.runId ? undefined : current));
    });
    return () => {
      off();
      void client.sessions.unsubscribe({ keys: [sessionKey] }).catch(() => undefined);
    };
  }, [client, sessionKey]);

  useEffect(() => {
    end.current?.scrollIntoView?.({ block: "end" });
  }, [transcript.messages.length, transcript.streaming]);

  async function send(message: string) {
    const id = newKey("local");
    const idempotencyKey = newKey("webchat");
    transcript.addPending({ id, role: "user", parts: [{ type: "text", text: message }], ts: Date.now() });
    // A send that was cut off by a dropped connection is retried with the same key: the gateway runs it once.
    for (let attempt = 0; ; attempt++) {
      try {
        const sent = await client.chat.send({ sessionKey, message, idempotencyKey });
        transcript.setPendingRun(id, sent.runId);
        setRunning(sent.runId);
        return;
      } catch (err) {
        const retry = attempt < 3 && (err as { retryable?: boolean }).retryable === true;
        if (!retry) {
          transcript.dropPending(id);
          setError(errorText(err));
          return;
        }
        await client.ready().catch(() => undefined);
      }
    }
  }

  return (
    <div class="chat-body">
      {offline && (
        <p class="banner" role="status">
          Connection lost — reconnecting…
        </p>
      )}
      <ol class="transcript chat" aria-label="Conversation" aria-live="polite">
        {transcript.messages.map((m) => (
          <MessageView key={m.id} message={m} detailed={false} />
        ))}
        {[...transcript.streaming].map(([runId, streamed]) => (
          <StreamingView key={runId} text={streamed} />
        ))}
      </ol>
      {!transcript.loading && transcript.messages.length === 0 && transcript.streaming.size === 0 && (
        <p class="muted hello">Say hello to start the conversation.</p>
      )}
      <div ref={end} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {canWrite ? (
        <form
          class="composer chat-composer"
          aria-label="Write a message"
          onSubmit={(event) => {
            event.preventDefault();
            const message = text.trim();
            if (!message) return;
            setText("");
            setError(undefined);
            void send(message);
          }}
        >
          <label for="chat-message" class="sr-only">
            Message
          </label>
          <textarea
            id="chat-message"
            rows={2}
            placeholder="Write a message…"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          />
          <button type="submit">Send</button>
          {running && (
            <button
              type="button"
              class="danger"
              onClick={() => void client.chat.abort({ sessionKey, runId: running }).catch(() => undefined)}
            >
              Stop
            </button>
          )}
        </form>
      ) : (
        <p class="muted">This token can read only: sending is off.</p>
      )}
    </div>
  );
}

/** The web chat channel: a person talks to an agent session, replies stream in, history survives a reload. */
export function WebChat({ connected }: { connected: Connected }) {
  const defaults = connected.hello.snapshot?.sessionDefaults;
  const params = new URLSearchParams(location.search);
  const agentId = params.get("agent") ?? defaults?.defaultAgentId ?? "main";
  // hello-ok names the gateway's session.dmScope (ours does; without it, the main session, as OpenClaw's web chat).
  const dmScope = dmScopeOf(connected.hello) ?? "main";
  const visitor = useMemo(visitorId, []);
  const sessionKey = webchatKey({ agentId, visitor, dmScope, mainKey: defaults?.mainKey ?? "main" });
  return (
    <div class="webchat">
      <header class="top">
        <div class="brand">
          <strong>sessions</strong> web chat <span class="muted small">agent {agentId}</span>
        </div>
        <nav aria-label="Web chat">
          <a href="/">Console</a>
          <button type="button" onClick={logout}>
            Log out
          </button>
        </nav>
      </header>
      <main>
        <p class="muted small session-key">
          Session <code>{sessionKey}</code>
        </p>
        <Conversation connected={connected} sessionKey={sessionKey} />
      </main>
    </div>
  );
}

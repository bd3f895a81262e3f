import type { GatewayClient } from "@sessions/gateway-client";
import { GatewayClientError } from "@sessions/gateway-client";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { onGap } from "./connection.js";
import { fromHistory, mergeTail, type ShownMessage } from "./messages.js";

export interface Transcript {
  messages: ShownMessage[];
  /** Replies streaming in, by runId. */
  streaming: ReadonlyMap<string, string>;
  loading: boolean;
  /** The session does not exist yet (a new web chat visitor). */
  missing: boolean;
  hasMore: boolean;
  error?: string;
  loadOlder(): void;
  addPending(message: ShownMessage): void;
  dropPending(id: string): void;
  setPendingRun(id: string, runId: string): void;
}

const PAGE = 100;
const TAIL = 50;

/**
 * A session's transcript, live: `chat.history` pages, `chat` deltas while a run streams, and the stored tail again
 * whenever the session changes, a run ends, or the connection had a gap.
 */
export function useTranscript(client: GatewayClient, sessionKey: string): Transcript {
  const [messages, setMessages] = useState<ShownMessage[]>([]);
  const [streaming, setStreaming] = useState<ReadonlyMap<string, string>>(new Map());
  const [loading, setLoading] = useState(true);
  const [missing, setMissing] = useState(false);
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const current = useRef(sessionKey);
  current.current = sessionKey;

  const fetchTail = useCallback(
    async (limit: number, replace: boolean) => {
      const key = sessionKey;
      try {
        const page = await client.chat.history({ sessionKey: key, limit });
        if (current.current !== key) return;
        const tail = page.messages.map((m, i) => fromHistory(m, i));
        setMessages((shown) =>
          replace
            ? mergeTail(
                shown.filter((m) => m.pending),
                tail,
              )
            : mergeTail(shown, tail),
        );
        if (replace) setHasMore(page.hasMore);
        setMissing(false);
        setError(undefined);
      } catch (err) {
        if (current.current !== key) return;
        if (err instanceof GatewayClientError && err.detailsCode === "NOT_FOUND") {
          setMissing(true);
          setMessages((shown) => shown.filter((m) => m.pending));
        } else setError(err instanceof Error ? err.message : String(err));
      } finally {
        if (current.current === key) setLoading(false);
      }
    },
    [client, sessionKey],
  );

  useEffect(() => {
    setMessages([]);
    setStreaming(new Map());
    setLoading(true);
    setMissing(false);
    setHasMore(false);
    setError(undefined);
    void fetchTail(PAGE, true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refresh = () => {
      if (timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        void fetchTail(TAIL, false);
      }, 60);
    };
    const offChat = client.on("chat", (payload) => {
      const event = payload as { runId?: string; sessionKey?: string; state?: string; deltaText?: string };
      if (event?.sessionKey !== sessionKey || typeof event.runId !== "string") return;
      const runId = event.runId;
      if (event.state === "delta") {
        setStreaming((map) => new Map(map).set(runId, (map.get(runId) ?? "") + (event.deltaText ?? "")));
      } else if (event.state === "final" || event.state === "aborted" || event.state === "error") {
        setStreaming((map) => {
          const next = new Map(map);
          next.delete(runId);
          return next;
        });
        refresh();
      }
    });
    const offChanged = client.on("sessions.changed", (payload) => {
      if ((payload as { key?: string })?.key === sessionKey) refresh();
    });
    const offGap = onGap(() => {
      setStreaming(new Map());
      refresh();
    });
    return () => {
      offChat();
      offChanged();
      offGap();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [client, sessionKey, fetchTail]);

  const loadOlder = useCallback(() => {
    const key = sessionKey;
    const stored = messages.filter((m) => m.seq !== undefined).length;
    client.chat.history({ sessionKey: key, limit: PAGE, offset: stored }).then(
      (page) => {
        if (current.current !== key) return;
        setMessages((shown) =>
          mergeTail(
            shown,
            page.messages.map((m, i) => fromHistory(m, i)),
          ),
        );
        setHasMore(page.hasMore);
      },
      (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
    );
  }, [client, sessionKey, messages]);

  return {
    messages,
    streaming,
    loading,
    missing,
    hasMore,
    ...(error === undefined ? {} : { error }),
    loadOlder,
    addPending: (message) => setMessages((shown) => [...shown, { ...message, pending: true }]),
    dropPending: (id) => setMessages((shown) => shown.filter((m) => m.id !== id)),
    setPendingRun: (id, runId) =>
      setMessages((shown) => shown.map((m) => (m.id === id ? { ...m, runId } : m))),
  };
}

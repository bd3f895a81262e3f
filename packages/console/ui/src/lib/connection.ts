import type { HelloOk } from "@sessions/core";
import { createGatewayClient, type GatewayClient, GatewayClientError } from "@sessions/gateway-client";
import { createStore } from "./store.js";

/** One logged-in connection to a gateway: the same WebSocket protocol and client every other tool uses. */
export interface Connected {
  client: GatewayClient;
  hello: HelloOk;
  url: string;
  /** The token's scopes allow changes (`operator.write` or `operator.admin`); otherwise the view is read-only. */
  canWrite: boolean;
}

export interface ConnectionState {
  phase: "login" | "connecting" | "ready";
  connected?: Connected;
  /** The link is down and the client is reconnecting (requests wait for it). */
  offline: boolean;
  error?: string;
}

export const connection = createStore<ConnectionState>({ phase: "login", offline: false });

const STORAGE_KEY = "sessions.console.login";
const gapListeners = new Set<() => void>();

/** Called after a reconnect or a skipped event `seq`: whatever was built from events must be fetched again. */
export function onGap(listener: () => void): () => void {
  gapListeners.add(listener);
  return () => gapListeners.delete(listener);
}

/** The gateway that served this page: same host, WebSocket scheme. */
export function defaultGatewayUrl(): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}`;
}

interface SavedLogin {
  url: string;
  token?: string;
}

function saved(): SavedLogin | undefined {
  for (const storage of [sessionStorage, localStorage]) {
    try {
      const text = storage.getItem(STORAGE_KEY);
      if (text) return JSON.parse(text) as SavedLogin;
    } catch {
      // Storage may be unavailable (private mode) or hold garbage: log in again.
    }
  }
  return undefined;
}

function describe(error: unknown): string {
  if (error instanceof GatewayClientError) {
    if (error.detailsCode === "AUTH_TOKEN_MISMATCH") return "The gateway refused this token.";
    if (error.detailsCode === "REFUSED") return "The gateway refused the connection (a token is needed).";
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Connects with `token` (none for a loopback gateway without one) and remembers it for this tab, or longer. */
export async function login(options: {
  url: string;
  token?: string;
  remember?: boolean;
  clientId?: string;
}): Promise<boolean> {
  const previous = connection.get().connected;
  if (previous) void previous.client.close();
  connection.set({ phase: "connecting", offline: false });
  const token = options.token?.trim() ? options.token.trim() : undefined;
  let client: GatewayClient;
  try {
    client = createGatewayClient({
      url: options.url,
      ...(token === undefined ? {} : { token }),
      clientId: options.clientId ?? "sessions-console",
      displayName: "sessions console",
      reconnect: { initialDelayMs: 200, maxDelayMs: 5000 },
      onGap: () => {
        for (const listener of [...gapListeners]) listener();
      },
    });
  } catch (error) {
    connection.set({ phase: "login", offline: false, error: describe(error) });
    return false;
  }
  try {
    const hello = await client.ready();
    const scopes = hello.auth?.scopes ?? [];
    const canWrite = scopes.includes("operator.write") || scopes.includes("operator.admin");
    const login: SavedLogin = { url: options.url, ...(token === undefined ? {} : { token }) };
    try {
      (options.remember ? localStorage : sessionStorage).setItem(STORAGE_KEY, JSON.stringify(login));
    } catch {
      // Not remembered: the next visit asks again.
    }
    connection.set({
      phase: "ready",
      offline: false,
      connected: { client, hello, url: options.url, canWrite },
    });
    client.on("disconnected", () => {
      if (connection.get().connected?.client !== client) return;
      connection.update((s) => ({ ...s, offline: true }));
      client.ready().then(
        () => connection.update((s) => (s.connected?.client === client ? { ...s, offline: false } : s)),
        (error: unknown) => {
          if (connection.get().connected?.client === client)
            connection.set({ phase: "login", offline: false, error: describe(error) });
        },
      );
    });
    return true;
  } catch (error) {
    void client.close();
    connection.set({ phase: "login", offline: false, error: describe(error) });
    return false;
  }
}

/** Logs in with what this browser remembered, if anything. */
export function resume(clientId?: string): void {
  const remembered = saved();
  if (remembered !== undefined)
    void login({ ...remembered, ...(clientId === undefined ? {} : { clientId }) });
}

export function logout(): void {
  for (const storage of [sessionStorage, localStorage]) {
    try {
      storage.removeItem(STORAGE_KEY);
    } catch {
      // Nothing stored.
    }
  }
  const current = connection.get().connected;
  connection.set({ phase: "login", offline: false });
  if (current) void current.client.close();
}

/** A fresh idempotency key: retries of one user action reuse it, so the gateway runs it once. */
export function newKey(prefix: string): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export function errorText(error: unknown): string {
  return describe(error);
}

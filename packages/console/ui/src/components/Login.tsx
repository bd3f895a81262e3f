import { useState } from "preact/hooks";
import { connection, defaultGatewayUrl, login } from "../lib/connection.js";
import { useStore } from "../lib/store.js";

/** Token login. A loopback gateway without a token takes an empty token; the gateway decides the scopes. */
export function Login({ title, clientId }: { title: string; clientId: string }) {
  const state = useStore(connection);
  const [token, setToken] = useState("");
  const [url, setUrl] = useState(defaultGatewayUrl());
  const [remember, setRemember] = useState(false);
  const busy = state.phase === "connecting";
  return (
    <main class="login">
      <form
        aria-labelledby="login-title"
        onSubmit={(event) => {
          event.preventDefault();
          void login({ url, token, remember, clientId });
        }}
      >
        <h1 id="login-title">{title}</h1>
        <p class="muted">
          Log in with a gateway token. A gateway on this machine without a token takes an empty one.
        </p>
        <label for="login-token">Token</label>
        <input
          id="login-token"
          name="token"
          type="password"
          autocomplete="current-password"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <details>
          <summary>Gateway</summary>
          <label for="login-url">WebSocket URL</label>
          <input
            id="login-url"
            name="url"
            type="url"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </details>
        <label class="check">
          <input type="checkbox" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} />
          Remember on this device
        </label>
        <button type="submit" disabled={busy}>
          {busy ? "Connecting…" : "Log in"}
        </button>
        {state.error && (
          <p role="alert" class="error">
            {state.error}
          </p>
        )}
      </form>
    </main>
  );
}

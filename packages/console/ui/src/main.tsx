import { render } from "preact";
import { WebChat } from "./chat/WebChat.js";
import { Login } from "./components/Login.js";
import { Console } from "./console/Console.js";
import { connection, resume } from "./lib/connection.js";
import { useStore } from "./lib/store.js";
import "./styles.css";

/** `/chat` is the web chat; everything else is the operator console. Both log in the same way. */
const isChat = location.pathname.replace(/\/+$/, "").endsWith("/chat");
const clientId = isChat ? "sessions-webchat" : "sessions-console";

function App() {
  const state = useStore(connection);
  if (state.phase !== "ready" || state.connected === undefined)
    return <Login title={isChat ? "sessions web chat" : "sessions console"} clientId={clientId} />;
  return isChat ? <WebChat connected={state.connected} /> : <Console connected={state.connected} />;
}

resume(clientId);
const root = document.getElementById("app");
if (root) render(<App />, root);

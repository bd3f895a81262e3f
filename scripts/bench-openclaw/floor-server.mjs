// The floor: a bare `ws` server that answers the handshake and both reads with bytes captured from a real
// gateway (only the request id changes), doing no other work. What a client measures against it is the cost of
// the client, `ws`, Node and the machine; what a gateway adds is its figure less this one.
//
//   node floor-server.mjs <answers.json> <port>   (answers: { connect, "sessions.list", "chat.history" } frames)
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";

const { WebSocketServer } = createRequire(new URL("../../packages/gateway/package.json", import.meta.url))(
  "ws",
);
const [file, port] = process.argv.slice(2);
const answers = JSON.parse(readFileSync(file, "utf8"));
const http = createServer();
const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
wss.on("connection", (ws) => {
  ws.send(
    JSON.stringify({ type: "event", event: "connect.challenge", payload: { nonce: "0", ts: Date.now() } }),
  );
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    const answer = answers[frame.method];
    const at = answer.indexOf('"id":"') + 6;
    ws.send(answer.slice(0, at) + frame.id + answer.slice(answer.indexOf('"', at)));
  });
});
http.listen(Number(port), "127.0.0.1", () => console.log(`listening ws://127.0.0.1:${port}`));

// A fake OpenAI-compatible model server on 127.0.0.1 for record-openclaw.mjs: deterministic answers to
// `POST /v1/chat/completions` (streamed or not), no network. What it answers, by the last thing a person typed:
//   "spawn: <task>"   → a sessions_spawn tool call (through OpenClaw's tool_call wrapper when tools are deferred)
//   "list sessions"   → a sessions_list tool call
//   "look around"     → an ls tool call
//   anything else     → "echo: <last line>"
// and after a tool result, "done: <start of the result>".
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";

const INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT";
const textOf = (content) =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part) => part.text ?? "").join("")
      : "";

/** The text a person typed: OpenClaw prefixes a timestamp and appends runtime and message-id lines. */
function typed(content) {
  const body = textOf(content).replace(/^\[[^\]]*\]\s*/, "");
  return body
    .split("\n\nRuntime:")[0]
    .split("\n")
    .filter((line) => !line.startsWith("[message_id:"))
    .join("\n")
    .trim();
}

function decide(messages, tools) {
  const toolNames = new Set((tools ?? []).map((t) => t.function?.name));
  const relevant = messages.filter(
    (m) => m.role === "tool" || (m.role === "user" && !textOf(m.content).startsWith(INTERNAL)),
  );
  const last = relevant.at(-1);
  if (last?.role === "tool")
    return { text: `done: ${textOf(last.content).slice(0, 80).replace(/\s+/g, " ")}` };
  const text = typed(last?.content);
  const call = (name, args) =>
    toolNames.has(name)
      ? { tool: { name, args } }
      : { tool: { name: "tool_call", args: { id: name, args } } };
  const spawn = text.match(/spawn:\s*(.+)$/m);
  if (spawn) return call("sessions_spawn", { task: spawn[1].trim(), label: "researcher" });
  if (/list sessions/i.test(text)) return call("sessions_list", { limit: 5 });
  if (/look around/i.test(text)) return call("ls", {});
  return { text: `echo: ${text.split("\n").at(-1)?.slice(0, 200) ?? ""}` };
}

/** Starts the server; resolves to its base URL (`http://127.0.0.1:<port>/v1`) and a close function. */
export function startFakeModel({ port = 0, log } = {}) {
  let n = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      if (log) appendFileSync(log, `${JSON.stringify({ url: req.url, body })}\n`);
      if (req.url?.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "fake-1" }, { id: "fake-2" }] }));
        return;
      }
      if (!req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end("{}");
        return;
      }
      const request = JSON.parse(body);
      const decision = decide(request.messages ?? [], request.tools);
      n += 1;
      const id = `chatcmpl-${n}`;
      const created = 1_780_000_000 + n;
      const { model } = request;
      const usage = { prompt_tokens: 100 + n, completion_tokens: 10, total_tokens: 110 + n };
      const toolCall = decision.tool && {
        id: `call_${n}`,
        type: "function",
        function: { name: decision.tool.name, arguments: JSON.stringify(decision.tool.args) },
      };
      const finish = decision.tool ? "tool_calls" : "stop";
      if (!request.stream) {
        const message = toolCall
          ? { role: "assistant", content: null, tool_calls: [toolCall] }
          : { role: "assistant", content: decision.text };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id,
            object: "chat.completion",
            created,
            model,
            choices: [{ index: 0, message, finish_reason: finish }],
            usage,
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const chunk = (delta, finishReason = null) =>
        res.write(
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`,
        );
      chunk({ role: "assistant", content: "" });
      if (toolCall) {
        chunk({
          tool_calls: [{ index: 0, ...toolCall, function: { name: toolCall.function.name, arguments: "" } }],
        });
        chunk({ tool_calls: [{ index: 0, function: { arguments: toolCall.function.arguments } }] });
      } else {
        for (const word of decision.text.split(/(?<= )/)) chunk({ content: word });
      }
      chunk({}, finish);
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`,
      );
      res.end("data: [DONE]\n\n");
    });
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      resolve({
        url: `http://127.0.0.1:${server.address().port}/v1`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

import { randomUUID } from "node:crypto";
import {
  A2A_VERSION_HEADER,
  AGENT_CARD_PATH,
  type Message,
  SendMessageRequest,
  type Task,
  TaskState,
} from "@a2a-js/sdk";
import {
  type CallInterceptor,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../../create-gateway.js";
import type { Gateway } from "../../gateway.js";
import { createScriptedRunner } from "../../runner/scripted.js";
import { cleanupDirs, eventually, openStore } from "../../test-kit.js";
import type { GatewayServer } from "../listen.js";

afterAll(cleanupDirs);

// biome-ignore lint/suspicious/noExplicitAny: JSON as the wire carries it.
type Json = any;
const WRITE = "a2a-write-token";
const READ = "a2a-read-token";

let gateway: Gateway;
let server: GatewayServer;
let base: string;
afterEach(async () => {
  await server?.close();
  await gateway?.close({ drainMs: 100 });
});

const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.text === "slow") await turn.sleep(60_000);
      return turn.write(`echo: ${turn.text}`, 5);
    },
  },
});

/** Starts a gateway on a SQLite file (`path`: the one a gateway before used) serving A2A; the file's path. */
async function start(path?: string): Promise<string> {
  const { store, path: file } = openStore("sqlite", path);
  gateway = createGateway({ store, runner });
  server = await gateway.listen({
    a2a: true,
    auth: {
      tokens: [
        { token: WRITE, label: "peer-agent" },
        { token: READ, scopes: ["operator.read"] },
      ],
    },
  });
  base = server.url.replace(/^ws/, "http");
  return file as string;
}

const bearer = (token: string): CallInterceptor => ({
  async before(args) {
    args.options = {
      ...args.options,
      serviceParameters: { ...args.options?.serviceParameters, Authorization: `Bearer ${token}` },
    };
  },
  async after() {},
});

/** The SDK's v1.0 client for the main agent (with `legacy`, its v0.3 compat client reading the v0.3 card). */
async function client(token = WRITE, legacy = false): Promise<Client> {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: { interceptors: [bearer(token)] },
    ...(legacy
      ? {
          transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
          cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
        }
      : {}),
  });
  const factory = new ClientFactory(options);
  // The card is found under the agent's URL (a trailing slash: it is relative to it).
  if (!legacy) return factory.createFromUrl(`${base}/a2a/main/`);
  // An older peer's card: what the server answers without the version header.
  const card = (await (await fetch(`${base}/a2a/main/${AGENT_CARD_PATH}`)).json()) as Parameters<
    ClientFactory["createFromAgentCard"]
  >[0];
  return factory.createFromAgentCard(card);
}

const ask = (text: string, contextId?: string) =>
  SendMessageRequest.fromJSON({
    message: {
      messageId: randomUUID(),
      role: "ROLE_USER",
      parts: [{ text }],
      ...(contextId ? { contextId } : {}),
    },
  });

const textOf = (message: Pick<Message, "parts"> | undefined) =>
  (message?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

function asTask(result: Message | Task): Task {
  expect("messageId" in result).toBe(false);
  return result as Task;
}

describe("the gateway's agents over A2A (@a2a-js/sdk's own clients)", () => {
  it("serves a card per agent: v1.0 with its JSON-RPC interface, v0.3 to a peer that sends no version", async () => {
    await start();
    const headers = { [A2A_VERSION_HEADER]: "1.0" };
    const v1 = (await (await fetch(`${base}/a2a/main/${AGENT_CARD_PATH}`, { headers })).json()) as Json;
    expect(v1.supportedInterfaces).toContainEqual({
      url: `${base}/a2a/main`,
      protocolBinding: "JSONRPC",
      protocolVersion: "1.0",
    });
    expect(v1.capabilities.streaming).toBe(true);
    expect(v1.securitySchemes.bearer).toBeDefined();
    const old = await (await fetch(`${base}/${AGENT_CARD_PATH}`)).json();
    expect(old).toMatchObject({
      protocolVersion: "0.3.0",
      url: `${base}/a2a/main`,
      security: [{ bearer: [] }],
    });
    expect((await fetch(`${base}/a2a/nobody/${AGENT_CARD_PATH}`)).status).toBe(404);
  });

  it("answers SendMessage with the run's reply as the task's artifact, a context being a session", async () => {
    await start();
    const a2a = await client();
    const first = asTask(await a2a.sendMessage(ask("hello")));
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(first.status?.message)).toBe("echo: hello");
    expect(first.artifacts.map((a) => textOf(a))).toEqual(["echo: hello"]);
    const again = asTask(await a2a.sendMessage(ask("and again", first.contextId)));
    expect(again.contextId).toBe(first.contextId);
    const key = `agent:main:a2a:direct:${first.contextId}`;
    const { messages } = await gateway.chat.history({ sessionKey: key });
    expect(messages.map((m) => m.content)).toEqual(["hello", "echo: hello", "and again", "echo: and again"]);
    // What came over A2A is another agent's message, never mistaken for a user's.
    expect(messages[0]?.provenance).toMatchObject({
      kind: "inter_session",
      sourceChannel: "a2a",
      sourceTool: "a2a",
    });
    expect((await a2a.getTask({ tenant: "", id: first.id, historyLength: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
  });

  it("streams SendStreamingMessage over SSE: the task, the reply's deltas, its end", async () => {
    await start();
    const a2a = await client();
    const kinds: string[] = [];
    let streamed = "";
    let final = "";
    for await (const event of a2a.sendMessageStream(ask("stream this reply"))) {
      const payload = event.payload;
      if (payload === undefined) continue;
      kinds.push(payload.$case);
      if (payload.$case === "artifactUpdate") {
        const text = textOf(payload.value.artifact);
        if (payload.value.lastChunk) final = text;
        else streamed = payload.value.append ? streamed + text : text;
      }
      if (payload.$case === "statusUpdate")
        expect(payload.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    }
    expect(kinds[0]).toBe("task");
    expect(kinds.at(-1)).toBe("statusUpdate");
    expect(kinds.filter((k) => k === "artifactUpdate").length).toBeGreaterThan(2);
    expect(final).toBe("echo: stream this reply");
    expect(streamed.trim()).toBe(final);
  });

  it("cancels a running task: its run is aborted", async () => {
    await start();
    const a2a = await client();
    const stream = a2a.sendMessageStream(ask("slow"));
    const first = (await stream.next()).value?.payload;
    expect(first?.$case).toBe("task");
    const taskId = first?.$case === "task" ? first.value.id : "";
    const canceled = await a2a.cancelTask({ tenant: "", id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const runId = first?.$case === "task" ? (first.value.metadata?.runId as string) : "";
    await eventually(async () => expect((await gateway.store.getRun(runId))?.status).toBe("aborted"));
  });

  it("needs the gateway's token: none is refused, a read-only token may GetTask but not SendMessage", async () => {
    await start();
    const raw = (token: string | undefined, method: string, params: unknown) =>
      fetch(`${base}/a2a/main`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [A2A_VERSION_HEADER]: "1.0",
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
    const message = { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] } };
    expect((await raw(undefined, "SendMessage", message)).status).toBe(401);
    expect((await raw("wrong", "SendMessage", message)).status).toBe(401);
    expect((await raw(READ, "SendMessage", message)).status).toBe(403);
    const sent = (await (await raw(WRITE, "SendMessage", message)).json()) as Json;
    const id = sent.result.task.id as string;
    const read = (await (await raw(READ, "GetTask", { id })).json()) as Json;
    expect(read.result.status.state).toBe("TASK_STATE_COMPLETED");
    const reader = await client(READ);
    await expect(reader.sendMessage(ask("no"))).rejects.toThrow();
  });

  it("speaks v0.3 to an older peer (the SDK's compat client): message/send, tasks/get, message/stream", async () => {
    await start();
    const old = await client(WRITE, true);
    expect(old.protocolVersion).toBe("0.3");
    const task = asTask(await old.sendMessage(ask("from the past")));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.status?.message)).toBe("echo: from the past");
    expect((await old.getTask({ tenant: "", id: task.id, historyLength: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
    const states: (TaskState | undefined)[] = [];
    for await (const event of old.sendMessageStream(ask("streamed, old style"))) {
      if (event.payload?.$case === "statusUpdate") states.push(event.payload.value.status?.state);
    }
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("reads a task back from its run after a restart", async () => {
    const path = await start();
    const task = asTask(await (await client()).sendMessage(ask("remember me")));
    await server.close();
    await gateway.close({ drainMs: 100 });
    await start(path);
    const read = await (await client(READ)).getTask({ tenant: "", id: task.id, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(read.artifacts.map((a) => textOf(a))).toEqual(["echo: remember me"]);
    expect(read.contextId).toBe(task.contextId);
  });
});

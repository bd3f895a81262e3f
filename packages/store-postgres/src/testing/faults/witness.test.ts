import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentRunRequest } from "@sessions/gateway";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { eventually, freshSchema } from "../helpers.js";
import { type ServedGateway, startServeCluster } from "./serve-cluster.js";
import {
  createWitness,
  MAX_LINE_BYTES,
  readWitness,
  slowDuration,
  type WitnessRecord,
  witnessRunner,
} from "./witness.js";

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), "sessions-witness-"));
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});

let files = 0;
const freshFile = () => join(work, `witness-${++files}.jsonl`);

/** A request as the gateway hands it, with only what the witness runner reads. */
function request(runId: string, text: string, signal = new AbortController().signal): AgentRunRequest {
  return {
    runId,
    agentId: "main",
    sessionKey: "agent:main:main",
    kind: "chat",
    messages: [],
    input: { role: "user", content: text },
    system: [],
    tools: [],
    signal,
    emit: () => undefined,
  } as unknown as AgentRunRequest;
}

const waitExit = (child: ChildProcess) =>
  new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once("exit", () => done());
  });

describe("witness log", () => {
  it("appends one line per record and reads them back in order", () => {
    const file = freshFile();
    const witness = createWitness(file);
    witness.execStart({ runId: "r1", sessionKey: "s", gateway: "g1", input: "hi" });
    witness.execEnd({ runId: "r1", sessionKey: "s", gateway: "g1", outcome: "ok" });
    witness.delivery({ deliveryId: "d1", to: "room:1", text: "done hi", gateway: "g1" });
    const records = readWitness(file);
    expect(records.map((r) => r.kind)).toEqual(["exec-start", "exec-end", "delivery"]);
    expect(records[0]).toMatchObject({ runId: "r1", pid: process.pid, input: "hi" });
    const [start, end] = records as [WitnessRecord, WitnessRecord];
    expect(end.at).toBeGreaterThanOrEqual(start.at);
    // Wall-clock milliseconds, close to Date.now().
    expect(Math.abs(start.at - Date.now())).toBeLessThan(60_000);
    // One line per record (each written with a newline before and after it).
    expect(
      readFileSync(file, "utf8")
        .split("\n")
        .filter((each) => each !== ""),
    ).toHaveLength(3);
  });

  it("reads a missing file as empty and leaves out a trailing partial line", () => {
    const file = freshFile();
    expect(readWitness(file)).toEqual([]);
    createWitness(file).delivery({ deliveryId: "d1", to: "x", text: "a", gateway: "g" });
    appendFileSync(file, '{"kind":"delivery","deliveryId":"d2","to":');
    expect(readWitness(file).map((r) => (r.kind === "delivery" ? r.deliveryId : ""))).toEqual(["d1"]);
  });

  it("cuts long text so that every line stays under 4 KiB", () => {
    const file = freshFile();
    const witness = createWitness(file);
    witness.execStart({ runId: "r", sessionKey: "s", gateway: "g", input: 'é"'.repeat(5000) });
    witness.delivery({ deliveryId: "d", to: "x", text: "x".repeat(10_000), gateway: "g" });
    for (const each of readFileSync(file, "utf8").split("\n").slice(0, -1)) {
      expect(Buffer.byteLength(each) + 2).toBeLessThanOrEqual(MAX_LINE_BYTES);
    }
    const [start] = readWitness(file);
    const input = start?.kind === "exec-start" ? start.input : "";
    // Cut, not emptied: close to what fits.
    expect(input.startsWith('é"é"')).toBe(true);
    expect(input.length).toBeGreaterThan(1000);
  });

  it("takes whole lines from several processes at once, one of them killed with SIGKILL", async () => {
    const file = freshFile();
    const writer = (name: string, count: number) => {
      const script = `
        import { createWitness } from ${JSON.stringify(join(here, "witness.ts"))};
        const witness = createWitness(${JSON.stringify(file)});
        const text = "y".repeat(3000);
        for (let i = 0; i < ${count}; i++) witness.delivery({ deliveryId: "${name}-" + i, to: "x", text, gateway: "${name}" });
        process.stdout.write("done\\n");`;
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: here,
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.add(child);
      return child;
    };
    const writers = [writer("a", 400), writer("b", 400), writer("c", 400)];
    const victim = writer("k", 5000);
    await eventually(() => readWitness(file).some((r) => r.gateway === "k"), "the victim writing");
    victim.kill("SIGKILL");
    await Promise.all([...writers, victim].map(waitExit));
    const records = readWitness(file);
    for (const name of ["a", "b", "c"]) {
      expect(records.filter((r) => r.gateway === name)).toHaveLength(400);
    }
    // Every line parses but, at most, the one the victim was writing when it died (Linux may cut a write at a page
    // boundary once SIGKILL is pending): its own line, never joined to another process's.
    const lines = readFileSync(file, "utf8")
      .split("\n")
      .filter((each) => each !== "");
    const cut = lines.filter((each) => {
      try {
        JSON.parse(each);
        return false;
      } catch {
        return true;
      }
    });
    expect(cut.length).toBeLessThanOrEqual(1);
    for (const each of cut) expect(each).toMatch(/"gateway":"k"|^\{"kind"/);
  });
});

describe("witnessRunner", () => {
  it("witnesses an execution: start, the sleep, an ok end, and the reply", async () => {
    const file = freshFile();
    const runner = witnessRunner({ file, gateway: "g1", durationMs: () => 30 });
    const started = performance.now();
    expect(await runner.run(request("r1", "hello"))).toEqual({ reply: "done hello" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    const [start, end] = readWitness(file);
    expect(start).toMatchObject({ kind: "exec-start", runId: "r1", gateway: "g1", input: "hello" });
    expect(start).not.toHaveProperty("repeat");
    expect(end).toMatchObject({ kind: "exec-end", runId: "r1", gateway: "g1", outcome: "ok" });
    expect((end?.at ?? 0) - (start?.at ?? 0)).toBeGreaterThanOrEqual(29);
  });

  it("ends early as aborted when the run's signal aborts, and marks a second execution as a repeat", async () => {
    const file = freshFile();
    const runner = witnessRunner({ file, gateway: "g1", durationMs: () => 60_000 });
    const controller = new AbortController();
    const run = runner.run(request("r1", "slow", controller.signal));
    await eventually(() => readWitness(file).length === 1, "the start");
    controller.abort(new Error("stop"));
    await expect(run).rejects.toThrow("stop");
    const again = witnessRunner({ file, gateway: "g2", durationMs: () => 0 });
    await again.run(request("r1", "slow"));
    const shown = (r: WitnessRecord) =>
      r.kind === "exec-end" ? r.outcome : r.kind === "exec-start" ? r.repeat : undefined;
    expect(readWitness(file).map((r) => [r.kind, r.gateway, shown(r)])).toEqual([
      ["exec-start", "g1", undefined],
      ["exec-end", "g1", "aborted"],
      ["exec-start", "g2", true],
      ["exec-end", "g2", "ok"],
    ]);
  });

  it("writes an error end when the duration rule throws", async () => {
    const file = freshFile();
    const runner = witnessRunner({
      file,
      gateway: "g1",
      durationMs: () => {
        throw new Error("no rule");
      },
    });
    await expect(runner.run(request("r1", "x"))).rejects.toThrow("no rule");
    expect(readWitness(file).at(-1)).toMatchObject({ kind: "exec-end", outcome: "error" });
  });

  it("the fixture's duration rule: slow:<ms> anywhere in the text, else 20 ms", () => {
    expect(slowDuration("slow:1500 hello")).toBe(1500);
    expect(slowDuration("please slow:7")).toBe(7);
    expect(slowDuration("hello")).toBe(20);
  });

  it("loads as `sessions-gateway serve --runner` on Postgres (through the fault proxy) and witnesses its runs", async () => {
    const file = freshFile();
    const [gateway] = await startServeCluster({
      names: ["g1"],
      postgresUrl: inject("postgresUrl"),
      schema: freshSchema("witness"),
      witnessFile: file,
      work,
      cleanup,
    });
    const { client, child, proxy, log } = gateway as ServedGateway;
    onTestFailed(() => {
      process.stderr.write(`--- gateway\n${log.join("")}\n`);
    });
    const { runId } = await client.agent({ message: "slow:50 hello", idempotencyKey: "w-1" });
    expect(await client.waitRun(runId, { timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "done slow:50 hello",
    });
    const records = readWitness(file);
    expect(records.map((r) => [r.kind, r.gateway, r.kind === "exec-end" ? r.outcome : undefined])).toEqual([
      ["exec-start", "g1", undefined],
      ["exec-end", "g1", "ok"],
    ]);
    expect(records[0]).toMatchObject({ runId, pid: child.pid, input: "slow:50 hello" });
    expect(proxy.stats().bytesToTarget).toBeGreaterThan(0);
  });
});

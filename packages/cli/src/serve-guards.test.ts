import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, describe, expect, it } from "vitest";
import { hopLimitConfig, replayCli, serveProcesses } from "./serve-process.fixture.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-guards-"));
const token = "guards-test-token";
const room = (name: string) => `agent:main:chat:group:${name}`;
const here = dirname(fileURLToPath(import.meta.url));
const servers = serveProcesses(token);
const serve = servers.serve;

afterAll(() => {
  servers.stop();
  rmSync(dir, { recursive: true, force: true });
});

const loopConfig = (maxHops: number) => hopLimitConfig(dir, "loop", maxHops);
const recording = join(dir, "loop.jsonl");

/** `sessions-gateway replay` of the loop's recording under `config`: its exit code and output. */
const replay = (config: string) => replayCli(recording, config);

describe("the hop limit through the shipped CLI", () => {
  it("stops a three-session loop at the limit, with the typed refusal in the transcript", async () => {
    const config = loopConfig(4);
    const url = await serve([
      "--config",
      config,
      "--db",
      join(dir, "loop.db"),
      "--runner",
      join(here, "relay-runner.fixture.ts"),
      "--record",
      recording,
    ]);
    const client = createGatewayClient({ url, token, reconnect: false });
    try {
      for (const name of ["a", "b", "c"]) {
        const { runId } = await client.agent({
          sessionKey: room(name),
          message: "hi",
          idempotencyKey: `hi-${name}`,
        });
        await client.agentWait({ runId, timeoutMs: 60_000 });
      }
      const { runId: root } = await client.agent({
        sessionKey: room("a"),
        message: "start",
        idempotencyKey: "start",
      });
      // a → b → c → a → b is four messages; b's run would send the fifth (to c): refused.
      let refusal: Record<string, unknown> | undefined;
      await eventually(async () => {
        const history = await client.chat.history({ sessionKey: room("b"), limit: 100 });
        refusal = history.messages
          .flatMap((m) =>
            Array.isArray(m.content) ? (m.content as { output?: Record<string, unknown> }[]) : [],
          )
          .map((part) => part.output)
          .find((output) => output?.code === "max_hops");
        expect(refusal).toBeDefined();
      }, "the refusal in #b's transcript");
      expect(refusal).toMatchObject({
        status: "forbidden",
        code: "max_hops",
        limit: 4,
        chain: [room("a"), room("b"), room("c"), room("a"), room("b"), room("c")],
      });
      // The loop stopped there: four messages sent, and the refused call kept with its run. Each send's follow-up
      // (its reply-back turn and announce step) is done once its announce is recorded: a send run's end is written
      // before its follow-up's runs, so "every run ok" alone also holds in between. The replay below reads the
      // recording these follow-ups complete.
      await eventually(async () => {
        const tree = await client.runs.tree({ runId: root });
        const sends = tree.runs.filter((run) => run.kind === "inter_session");
        expect(sends.map((run) => run.hops).sort()).toEqual([1, 2, 3, 4]);
        expect(tree.runs.flatMap((run) => run.guards ?? []).map((g) => g.code)).toEqual(["max_hops"]);
        expect(tree.runs.every((run) => run.status === "ok")).toBe(true);
        for (const send of sends) expect(send.deliveries.map((d) => d.kind)).toContain("announce");
        expect(tree.runs.flatMap((run) => run.deliveries).filter((d) => d.status === "queued")).toEqual([]);
      }, "the tree's runs ended and every send's announce recorded");
    } finally {
      await client.close();
    }
  });

  it("replays the loop's recording identically, and with a changed limit fails with a diff", async () => {
    const same = await replay(loopConfig(4));
    expect(same.stdout).toMatch(/^replayed \d+ turns and \d+ deliveries: identical to /);
    expect(same.code).toBe(0);

    const changed = await replay(loopConfig(3));
    expect(changed.code).toBe(1);
    // With three hops, #a's second send (the fourth message) is refused where the recording has it accepted.
    expect(changed.stdout).toMatch(
      /inter_session in agent:main:chat:group:a: sessions_send answered otherwise/,
    );
    expect(changed.stdout).toMatch(/status:\n\s+recorded "accepted"\n\s+now\s+"forbidden"/);
    expect(changed.stdout).toMatch(/never happened/);
  });
});

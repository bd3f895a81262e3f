import { describe, expect, it } from "vitest";
import { delivery, entry, run } from "./contract-records.js";
import { describeKeyWalkContract } from "./key-walks.contract.js";
import { describeRunUnitsContract } from "./run-units.contract.js";
import { describeSearchContract } from "./search.contract.js";
import { describeFencingContract } from "./store-fencing.contract.js";
import { describeUnitOfWorkContract } from "./store-units.contract.js";
import type { DeliveryRecord, RunRecord, SessionStore, StoredEntry, SubagentRecord } from "./types.js";

/** One contract every `SessionStore` passes: the gateway relies on exactly these behaviours. */
export function describeStoreContract(name: string, open: () => SessionStore | Promise<SessionStore>): void {
  describe(`SessionStore contract: ${name}`, () => {
    it("stores, updates and deletes entries", async () => {
      const store = await open();
      await store.putEntry(entry("agent:main:main", 5, { label: "home" }));
      expect(await store.getEntry("agent:main:main")).toMatchObject({ label: "home", updatedAt: 5 });
      await store.putEntry(entry("agent:main:main", 6, { label: "home2" }));
      expect(await store.getEntry("agent:main:main")).toMatchObject({ label: "home2", updatedAt: 6 });
      expect(await store.findEntriesBySessionId("sid-agent:main:main")).toHaveLength(1);
      expect(await store.findEntriesByLabel("home2")).toHaveLength(1);
      expect(await store.countEntries()).toBe(1);
      await store.appendMessage("agent:main:main", { role: "user", content: "x", ts: 1 });
      expect(await store.deleteEntry("agent:main:main")).toBe(true);
      expect(await store.deleteEntry("agent:main:main")).toBe(false);
      expect(await store.getEntry("agent:main:main")).toBeUndefined();
      expect(await store.countMessages("agent:main:main")).toBe(0);
      await store.close();
    });

    it("returns copies, not live references", async () => {
      const store = await open();
      const e = entry("agent:main:a", 1, { deliveryContext: { channel: "discord", to: "1" } });
      await store.putEntry(e);
      e.label = "mutated";
      const read = await store.getEntry("agent:main:a");
      expect(read?.label).toBeUndefined();
      // Lists too, nested values included, whether the record came from a cache or the file.
      for (let i = 0; i < 2; i++) {
        const [listed] = await store.listEntries({ limit: 1 });
        expect(listed?.label).toBeUndefined();
        expect(listed?.deliveryContext).toEqual({ channel: "discord", to: "1" });
        if (listed === undefined || listed.deliveryContext === undefined) throw new Error("listed");
        listed.label = "mutated";
        listed.deliveryContext.to = "2";
      }
      await store.close();
    });

    it("lists newest first with filters applied before the limit, and pages by cursor and offset", async () => {
      const store = await open();
      await store.putEntry(entry("agent:main:main", 50, { kind: "main" }));
      await store.putEntry(entry("agent:main:discord:group:a", 40, { kind: "group", label: "team" }));
      await store.putEntry(
        entry("agent:ops:discord:group:b", 30, { kind: "group", displayName: "Ops Room" }),
      );
      await store.putEntry(entry("agent:main:subagent:c", 20, { spawnedBy: "agent:main:main" }));
      await store.putEntry(
        entry("agent:main:subagent:d", 20, { spawnedBy: "agent:main:main", archivedAt: 25 }),
      );
      await store.putEntry(entry("agent:main:cron:x", 10, { kind: "cron" }));
      const keys = (rows: StoredEntry[]) => rows.map((r) => r.key);
      expect(keys(await store.listEntries({ limit: 10 }))).toEqual([
        "agent:main:main",
        "agent:main:discord:group:a",
        "agent:ops:discord:group:b",
        "agent:main:subagent:c",
        "agent:main:cron:x",
      ]);
      expect(keys(await store.listEntries({ limit: 1, kinds: ["group"] }))).toEqual([
        "agent:main:discord:group:a",
      ]);
      expect(
        keys(await store.listEntries({ limit: 10, kinds: ["group", "cron"], updatedSince: 15 })),
      ).toEqual(["agent:main:discord:group:a", "agent:ops:discord:group:b"]);
      expect(keys(await store.listEntries({ limit: 10, agentIds: ["ops"] }))).toEqual([
        "agent:ops:discord:group:b",
      ]);
      expect(
        keys(await store.listEntries({ limit: 10, spawnedBy: "agent:main:main", includeArchived: true })),
      ).toEqual(["agent:main:subagent:c", "agent:main:subagent:d"]);
      expect(keys(await store.listEntries({ limit: 10, search: "ops room" }))).toEqual([
        "agent:ops:discord:group:b",
      ]);
      expect(keys(await store.listEntries({ limit: 10, label: "team" }))).toEqual([
        "agent:main:discord:group:a",
      ]);
      expect(
        keys(
          await store.listEntries({ limit: 2, after: { updatedAt: 40, key: "agent:main:discord:group:a" } }),
        ),
      ).toEqual(["agent:ops:discord:group:b", "agent:main:subagent:c"]);
      expect(keys(await store.listEntries({ limit: 2, offset: 3 }))).toEqual([
        "agent:main:subagent:c",
        "agent:main:cron:x",
      ]);
      expect(await store.listEntries({ limit: 10, kinds: [] })).toEqual([]);
      await store.close();
    });

    it("appends messages with contiguous sequence numbers and reads the newest N oldest-first", async () => {
      const store = await open();
      for (let i = 1; i <= 30; i++) {
        const stored = await store.appendMessage("s", {
          role: i % 3 === 0 ? "toolResult" : "user",
          content: `m${i}`,
          ts: i,
        });
        expect(stored.seq).toBe(i);
      }
      await store.appendMessage("other", { role: "user", content: "x", ts: 1 });
      expect(await store.countMessages("s")).toBe(30);
      const last5 = await store.readMessages("s", { limit: 5 });
      expect(last5.map((m) => m.content)).toEqual(["m26", "m27", "m28", "m29", "m30"]);
      const before = await store.readMessages("s", { limit: 3, beforeSeq: 10 });
      expect(before.map((m) => m.seq)).toEqual([7, 8, 9]);
      expect(await store.readMessages("s", { limit: 5, beforeSeq: 1 })).toEqual([]);
      expect(await store.readMessages("missing", { limit: 5 })).toEqual([]);
      await store.close();
    });

    it("keeps runs, finds them by idempotency key and status", async () => {
      const store = await open();
      const run: RunRecord = {
        runId: "r1",
        sessionKey: "s",
        agentId: "main",
        kind: "chat",
        status: "queued",
        createdAt: 1,
        idempotencyKey: "k1",
      };
      await store.putRun(run);
      await store.putRun({ ...run, runId: "r2", idempotencyKey: "k2", status: "ok", reply: "done" });
      expect(await store.findRunByIdempotencyKey("k1")).toMatchObject({ runId: "r1" });
      await store.putRun({ ...run, status: "running", startedAt: 2 });
      expect((await store.listRunsByStatus(["queued", "running"])).map((r) => r.runId)).toEqual(["r1"]);
      expect(await store.getRun("r2")).toMatchObject({ reply: "done" });
      expect(await store.getRun("nope")).toBeUndefined();
      await store.close();
    });

    it("lists the runs of a tree from its root, oldest first, up to a limit", async () => {
      const store = await open();
      const cause = { kind: "tool" as const, runId: "root", toolCallId: "root:1", tool: "sessions_send" };
      await store.putRun(run("root", { createdAt: 10, cause: { kind: "request", method: "agent" } }));
      await store.putRun(run("c2", { createdAt: 30, rootRunId: "root", cause }));
      await store.putRun(run("c1", { createdAt: 20, rootRunId: "root", cause, status: "ok" }));
      // A reply that spells the field out is not a field: only the record's own `rootRunId` counts.
      await store.putRun(run("other", { createdAt: 15, reply: '{"rootRunId":"root"} \u0000' }));
      await store.putRun(run("other-child", { createdAt: 16, rootRunId: "other" }));
      expect((await store.listRunTree("root", 10)).map((r) => r.runId)).toEqual(["root", "c1", "c2"]);
      expect((await store.listRunTree("root", 2)).map((r) => r.runId)).toEqual(["root", "c1"]);
      expect(await store.listRunTree("c1", 10)).toMatchObject([{ runId: "c1", rootRunId: "root", cause }]);
      expect((await store.listRunTree("other", 10)).map((r) => r.runId)).toEqual(["other", "other-child"]);
      expect(await store.listRunTree("nope", 10)).toEqual([]);
      // A root whose id JSON escapes (chat.send takes the caller's idempotency key as the run id).
      const odd = 'k"ey\\ \u0001 é';
      await store.putRun(run(odd, { createdAt: 40 }));
      await store.putRun(run("odd-child", { createdAt: 41, rootRunId: odd }));
      await store.putRun(run("not-odd", { createdAt: 42, rootRunId: 'k"ey' }));
      expect((await store.listRunTree(odd, 10)).map((r) => r.runId)).toEqual([odd, "odd-child"]);
      // Runs of its millisecond whose ids sort before the root's: the root still comes first.
      await store.putRun(run("z-root", { createdAt: 50 }));
      await store.putRun(run("a-child", { createdAt: 50, rootRunId: "z-root", cause }));
      await store.putRun(run("b-child", { createdAt: 49, rootRunId: "z-root", cause }));
      expect((await store.listRunTree("z-root", 10)).map((r) => r.runId)).toEqual([
        "z-root",
        "b-child",
        "a-child",
      ]);
      expect((await store.listRunTree("z-root", 1)).map((r) => r.runId)).toEqual(["z-root"]);
      await store.close();
    });

    it("keeps a tree's budget on its runs and a session's own budget, with the usage a draw adds up", async () => {
      const store = await open();
      const budget = { tokens: 5000, costUsd: 0.3, runs: 4, deadlineAt: 1_700_000_060_000 };
      await store.putRun(run("root", { createdAt: 10, budget, usage: { totalTokens: 120, costUsd: 0.1 } }));
      await store.putRun(
        run("child", {
          createdAt: 20,
          rootRunId: "root",
          budget,
          usage: { inputTokens: 7, outputTokens: 3, costUsd: 0.2 },
        }),
      );
      const tree = await store.listRunTree("root", 10);
      expect(tree.map((r) => r.budget)).toEqual([budget, budget]);
      expect(tree.map((r) => r.usage)).toEqual([
        { totalTokens: 120, costUsd: 0.1 },
        { inputTokens: 7, outputTokens: 3, costUsd: 0.2 },
      ]);
      await store.putEntry(entry("agent:main:main", 5, { budget: { runs: 3, seconds: 60 } }));
      expect((await store.getEntry("agent:main:main"))?.budget).toEqual({ runs: 3, seconds: 60 });
      await store.close();
    });

    it("replaces every field on a second put: the indexed ones too", async () => {
      const store = await open();
      await store.putEntry(entry("agent:main:e", 1, { label: "a", kind: "group", sessionId: "s1" }));
      await store.putEntry(entry("agent:main:e", 2, { label: "a", kind: "group", sessionId: "s1" }));
      await store.putEntry(
        entry("agent:main:e", 3, {
          label: "b",
          kind: "cron",
          sessionId: "s2",
          archivedAt: 3,
          spawnedBy: "p",
        }),
      );
      expect(await store.findEntriesByLabel("a")).toEqual([]);
      expect(await store.findEntriesByLabel("b")).toHaveLength(1);
      expect(await store.findEntriesBySessionId("s1")).toEqual([]);
      expect(await store.findEntriesBySessionId("s2")).toHaveLength(1);
      expect(await store.listEntries({ limit: 10, kinds: ["group"], includeArchived: true })).toEqual([]);
      expect(await store.listEntries({ limit: 10, kinds: ["cron"] })).toEqual([]);
      expect(
        await store.listEntries({ limit: 10, kinds: ["cron"], spawnedBy: "p", includeArchived: true }),
      ).toMatchObject([{ key: "agent:main:e", updatedAt: 3 }]);

      await store.putRun(run("r", { idempotencyKey: "k1" }));
      await store.putRun(run("r", { idempotencyKey: "k1", status: "running" }));
      await store.putRun(run("r", { idempotencyKey: "k2", status: "ok" }));
      expect(await store.findRunByIdempotencyKey("k1")).toBeUndefined();
      expect(await store.findRunByIdempotencyKey("k2")).toMatchObject({ runId: "r", status: "ok" });
      await store.putRun(run("r", { status: "error" }));
      expect(await store.findRunByIdempotencyKey("k2")).toBeUndefined();
      expect(await store.listRunsByStatus(["error"])).toMatchObject([{ runId: "r" }]);
      await store.close();
    });

    it("deduplicates deliveries by idempotency key and lists the queue by due time", async () => {
      const store = await open();
      const first = await store.enqueueDelivery(delivery("d1", "k", { nextAttemptAt: 30 }));
      const again = await store.enqueueDelivery(delivery("d2", "k", { text: "other" }));
      expect(first.created).toBe(true);
      expect(again).toMatchObject({ created: false, record: { id: "d1", text: "hi" } });
      await store.enqueueDelivery(delivery("d3", "k3", { nextAttemptAt: 20, runId: "run-1" }));
      expect((await store.listQueuedDeliveries(10)).map((d) => d.id)).toEqual(["d3", "d1"]);
      await store.putDelivery({
        ...((await store.getDelivery("d3")) as DeliveryRecord),
        status: "delivered",
        receipt: ["m1"],
      });
      expect((await store.listQueuedDeliveries(10)).map((d) => d.id)).toEqual(["d1"]);
      expect(await store.listDeliveries({ runId: "run-1" })).toMatchObject([
        { id: "d3", status: "delivered", receipt: ["m1"] },
      ]);
      expect(await store.listDeliveries({ status: "queued" })).toHaveLength(1);
      await store.close();
    });

    it("keeps one route per session, channel and account", async () => {
      const store = await open();
      await store.putRoute({
        sessionKey: "s",
        channel: "discord",
        accountId: "a",
        to: "channel:1",
        updatedAt: 1,
      });
      await store.putRoute({ sessionKey: "s", channel: "telegram", accountId: "a", to: "42", updatedAt: 2 });
      await store.putRoute({
        sessionKey: "s",
        channel: "discord",
        accountId: "a",
        to: "channel:2",
        updatedAt: 3,
      });
      expect(await store.listRoutes("s")).toEqual([
        { sessionKey: "s", channel: "discord", accountId: "a", to: "channel:2", updatedAt: 3 },
        { sessionKey: "s", channel: "telegram", accountId: "a", to: "42", updatedAt: 2 },
      ]);
      await store.close();
    });

    it("tracks sub-agents and archive deadlines", async () => {
      const store = await open();
      const base: SubagentRecord = {
        childKey: "c1",
        requesterKey: "r",
        runId: "x",
        task: "t",
        mode: "run",
        cleanup: "keep",
        status: "running",
        createdAt: 1,
      };
      await store.putSubagent(base);
      await store.putSubagent({ ...base, childKey: "c2", status: "done", archiveAt: 100 });
      await store.putSubagent({ ...base, childKey: "c3", status: "done", archiveAt: 50 });
      expect(
        (await store.listSubagents({ requesterKey: "r", statuses: ["running"] })).map((s) => s.childKey),
      ).toEqual(["c1"]);
      expect(await store.nextArchiveAt()).toBe(50);
      expect((await store.listArchiveDue(60)).map((s) => s.childKey)).toEqual(["c3"]);
      const { archiveAt: _a, ...archived } = (await store.getSubagent("c3")) as SubagentRecord;
      await store.putSubagent(archived);
      expect(await store.nextArchiveAt()).toBe(100);
      await store.close();
    });

    it("stores thread bindings", async () => {
      const store = await open();
      const binding = {
        channel: "discord",
        accountId: "a",
        threadId: "t1",
        sessionKey: "s",
        to: "channel:t1",
        boundAt: 1,
        lastActivityAt: 1,
        idleHours: 24,
        maxAgeHours: 0,
      };
      await store.putThreadBinding(binding);
      expect(await store.getThreadBinding("discord", "a", "t1")).toEqual(binding);
      expect(await store.listThreadBindings({ sessionKey: "s" })).toHaveLength(1);
      expect(await store.deleteThreadBinding("discord", "a", "t1")).toBe(true);
      expect(await store.getThreadBinding("discord", "a", "t1")).toBeUndefined();
      await store.close();
    });

    describeKeyWalkContract(open);
    describeUnitOfWorkContract(open);
    describeFencingContract(open);
    describeRunUnitsContract(open);
    describeSearchContract(open);
  });
}

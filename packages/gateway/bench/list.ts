// sessions.list and the sessions_list tool over 100,000 sessions, and the entry upsert behind every touch.
import { performance } from "node:perf_hooks";
import type { SessionKind } from "@sessions/core";
import { createGateway, type Gateway, type SessionStore } from "../src/index.js";
import {
  check,
  measure,
  ms,
  note,
  prng,
  rows,
  runner,
  SMOKE,
  type Stats,
  since,
  TARGET,
  verdict,
} from "./harness.js";
import { AGENTS, mainEntry, seedEntry } from "./seed.js";

const SESSIONS = SMOKE ? 1_000 : 100_000;
const LIST_LIMIT = SMOKE ? 10 : 200;
/** How deep the deep pages are, and the page size of the walk by key that gets there. */
const DEEP = SMOKE ? 500 : 50_000;
const WALK_PAGE = SMOKE ? 100 : 1_000;
const LATENCY = SMOKE ? { warmup: 2, iterations: 10 } : { warmup: 20, iterations: 200 };
const LIST_KINDS: SessionKind[] = ["group", "main"];
const ACTIVE_MINUTES = 24 * 60;

export async function listBench(operator: Gateway): Promise<void> {
  const store = operator.store;
  const now = Date.now();
  const rand = prng(42);
  let t = performance.now();
  const batch = 1_000;
  for (const agent of AGENTS) await store.putEntry(mainEntry(agent[0], now));
  for (let i = 0; i < SESSIONS - AGENTS.length; i += batch) {
    const writes: Promise<void>[] = [];
    for (let j = i; j < Math.min(i + batch, SESSIONS - AGENTS.length); j++)
      writes.push(store.putEntry(seedEntry(j, rand, now)));
    await Promise.all(writes);
  }
  check((await store.countEntries()) === SESSIONS, `${SESSIONS} entries seeded`);
  note(`seeded ${SESSIONS.toLocaleString("en-US")} entries through store.putEntry in ${since(t)}`);

  // The operator method (no visibility) and the model-facing tool under visibility "all", with agent-to-agent
  // on (every row visible) and off (the default: other agents' rows are filtered out after the query).
  // One process owns a SQLite file, so these gateways borrow the operator's store (closing them keeps it open).
  const borrowed: SessionStore = { ...store, close: async () => {} };
  const allVisible = createGateway({
    runner,
    store: borrowed,
    config: { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } } },
  });
  const allNoA2a = createGateway({
    runner,
    store: borrowed,
    config: { tools: { sessions: { visibility: "all" } } },
  });
  await Promise.all([allVisible.ready, allNoA2a.ready]);

  const params = { kinds: LIST_KINDS, activeMinutes: ACTIVE_MINUTES, limit: LIST_LIMIT };
  const listed = await operator.sessions.list(params);
  note(
    `sessions.list ${JSON.stringify(params)} → ${listed.count} rows, hasMore ${listed.hasMore}` +
      ` (newest ${new Date(listed.sessions[0]?.updatedAt ?? 0).toISOString()})`,
  );
  check(listed.count === LIST_LIMIT, `the filter matches more than ${LIST_LIMIT} sessions`);
  const tool =
    (gateway: Gateway, requesterKey = "agent:main:main") =>
    () =>
      gateway.callTool(requesterKey, "sessions_list", params);
  const viaTool = (await tool(allVisible)()) as { count: number };
  const viaToolNoA2a = (await tool(allNoA2a)()) as { count: number };
  note(`sessions_list tool → ${viaTool.count} rows (agent-to-agent on), ${viaToolNoA2a.count} (off)`);
  check(viaTool.count === LIST_LIMIT && viaToolNoA2a.count === LIST_LIMIT, "the tool fills its limit");

  t = performance.now();
  const [method, toolAll, toolNoA2a] = (await measure(
    [() => operator.sessions.list(params), tool(allVisible), tool(allNoA2a)],
    LATENCY,
  )) as [Stats, Stats, Stats];
  note(`sessions.list timing: ${since(t)}`);
  const listRow = (task: string, s: Stats, target: boolean) =>
    rows.push({
      task,
      p50: ms(s.p50),
      "p95 / total": ms(s.p95),
      target: target ? `p50 ≤ ${TARGET.listP50Ms} ms` : "",
      verdict: target ? verdict(s.p50 <= TARGET.listP50Ms) : "",
    });
  listRow(
    `sessions.list (${SESSIONS.toLocaleString("en-US")} sessions, kinds + activeMinutes, limit ${LIST_LIMIT})`,
    method,
    true,
  );
  listRow('sessions_list tool (visibility "all", agentToAgent on)', toolAll, false);
  listRow('sessions_list tool (visibility "all", agentToAgent off)', toolNoA2a, false);

  // Worst case of the same call: a requester whose agent owns almost none of the matching sessions, so every
  // matching row of the other agents is read (page by page) and filtered out after the query.
  const lonely = tool(allNoA2a, "agent:triage:main");
  const lonelyCount = ((await lonely()) as { count: number }).count;
  const [toolLonely] = (await measure(
    [lonely],
    SMOKE ? { warmup: 1, iterations: 3 } : { warmup: 3, iterations: 30 },
  )) as [Stats];
  note(`sessions_list tool as agent:triage:main (agentToAgent off) → ${lonelyCount} row(s)`);
  listRow('sessions_list tool ("all", agentToAgent off, agent with ~no sessions)', toolLonely, false);

  // Deep pages: an offset page reads and skips every row before it; a page of a walk by key (`cursor`) starts at
  // its key in the primary key's index, whatever its depth.
  let cursor: string | null | undefined = (await operator.sessions.list({ sortBy: "key", limit: 1 }))
    .nextCursor;
  for (let read = 1; read < DEEP && cursor; read += WALK_PAGE) {
    cursor = (await operator.sessions.list({ cursor, limit: WALK_PAGE })).nextCursor;
  }
  check(typeof cursor === "string", `a walk by key reaches past ${DEEP} sessions`);
  const deepCursor = cursor as string;
  const [byOffset, byKeyOffset, byCursor] = (await measure(
    [
      () => operator.sessions.list({ offset: DEEP, limit: LIST_LIMIT }),
      () => operator.sessions.list({ sortBy: "key", offset: DEEP, limit: LIST_LIMIT }),
      () => operator.sessions.list({ cursor: deepCursor, limit: LIST_LIMIT }),
    ],
    SMOKE ? { warmup: 1, iterations: 10 } : { warmup: 10, iterations: 100 },
  )) as [Stats, Stats, Stats];
  listRow(
    `sessions.list offset ${DEEP.toLocaleString("en-US")} (newest first, limit ${LIST_LIMIT})`,
    byOffset,
    false,
  );
  listRow(
    `sessions.list sortBy key, offset ${DEEP.toLocaleString("en-US")} (limit ${LIST_LIMIT})`,
    byKeyOffset,
    false,
  );
  listRow(
    `sessions.list cursor ${DEEP.toLocaleString("en-US")} keys deep (limit ${LIST_LIMIT})`,
    byCursor,
    false,
  );

  // The upsert behind every touch of a session (run start and end, routes, patches), into 100k entries.
  const pick = prng(7);
  const existing = (await store.listEntries({ limit: SESSIONS / 20, offset: SESSIONS / 5 })).map(
    (e) => e.key,
  );
  check(existing.length === SESSIONS / 20, "entries to touch");
  const [upsert] = (await measure(
    [
      async () => {
        const entry = await store.getEntry(existing[Math.floor(pick() * existing.length)] as string);
        if (entry !== undefined) await store.putEntry({ ...entry, updatedAt: Date.now() });
      },
    ],
    SMOKE ? { warmup: 10, iterations: 100 } : { warmup: 200, iterations: 2_000 },
  )) as [Stats];
  rows.push({
    task: `store.getEntry + putEntry (touch one of ${SESSIONS.toLocaleString("en-US")} entries)`,
    p50: ms(upsert.p50),
    "p95 / total": ms(upsert.p95),
    target: "",
    verdict: "",
  });
  await Promise.all([allVisible.close({ drainMs: 0 }), allNoA2a.close({ drainMs: 0 })]);
}

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AcceptedMessage,
  checkHistory,
  describeHistory,
  executions,
  type KilledAt,
  type WaitResult,
} from "./history-check.js";
import type { ExecEndRecord, ExecStartRecord, WitnessRecord } from "./witness.js";

const T0 = 1_700_000_000_000;

/** One planned execution: a pause after the previous one of its session, how long it runs, where, how it ends. */
interface PlannedExec {
  gap: number;
  duration: number;
  gateway: string;
  fate: "ok" | "aborted" | "error" | "killed";
}

/** An execution as built, with what the checker should be told about it. */
interface Built {
  runId: string;
  sessionKey: string;
  gateway: string;
  pid: number;
  start: number;
  end: number;
  fate: PlannedExec["fate"];
}

/**
 * A correct history from a plan: per session, executions one after another (never at once); a run is executed
 * again after an execution that did not end ok (a re-run, on another process when its process was killed), and a
 * new run starts after an ok one. Each ok execution is posted once; every run with an ok execution was accepted;
 * each run's wait tells its true outcome.
 */
function build(sessions: { offset: number; execs: PlannedExec[] }[]) {
  const built: Built[] = [];
  const killedAt: Record<string, number> = {};
  const gatewayPid: Record<string, number> = { g1: 101, g2: 102, g3: 103 };
  let killedPids = 10_000;
  let runs = 0;
  sessions.forEach(({ offset, execs }, index) => {
    const sessionKey = `agent:main:s${index}`;
    let t = T0 + offset;
    let runId = `r${++runs}`;
    for (const exec of execs) {
      const start = t + exec.gap;
      const end = start + exec.duration;
      t = end;
      // A killed execution's process is gone for good: it had a pid of its own.
      const pid = exec.fate === "killed" ? ++killedPids : (gatewayPid[exec.gateway] as number);
      if (exec.fate === "killed") killedAt[String(pid)] = end;
      built.push({ runId, sessionKey, gateway: exec.gateway, pid, start, end, fate: exec.fate });
      if (exec.fate === "ok") runId = `r${++runs}`;
    }
  });
  return { built, killedAt };
}

/** The witness log of built executions (plus deliveries of the ok ones), in time order, and the caller's facts. */
function witnessOf(built: Built[]) {
  const records: WitnessRecord[] = [];
  const seen = new Set<string>();
  for (const e of built) {
    const common = { runId: e.runId, sessionKey: e.sessionKey, gateway: e.gateway, pid: e.pid };
    const start: ExecStartRecord = {
      kind: "exec-start",
      ...common,
      at: e.start,
      input: `<${e.runId}>`,
      ...(seen.has(e.runId) ? { repeat: true } : {}),
    };
    seen.add(e.runId);
    records.push(start);
    if (e.fate === "killed") continue;
    const end: ExecEndRecord = { kind: "exec-end", ...common, at: e.end, outcome: e.fate };
    records.push(end);
    if (e.fate === "ok") {
      records.push({
        kind: "delivery",
        deliveryId: `d-${e.runId}`,
        to: "room",
        text: `done <${e.runId}>`,
        gateway: e.gateway,
        at: e.end + 0.5,
      });
    }
  }
  // Stable: a zero-length execution keeps its start before its end.
  records.sort((a, b) => a.at - b.at);
  const accepted: AcceptedMessage[] = [];
  const waits: WaitResult[] = [];
  for (const runId of new Set(built.map((e) => e.runId))) {
    const runs = built.filter((e) => e.runId === runId);
    const last = runs.at(-1) as Built;
    const ok = runs.some((e) => e.fate === "ok");
    if (ok) accepted.push({ runId, sessionKey: last.sessionKey, text: `<${runId}>` });
    waits.push({ runId, status: ok ? "ok" : "error", at: last.end + 1 });
  }
  return { records, accepted, waits };
}

const plannedExec = fc.record({
  gap: fc.double({ min: 0, max: 50, noNaN: true }),
  duration: fc.double({ min: 1, max: 100, noNaN: true }),
  gateway: fc.constantFrom("g1", "g2", "g3"),
  fate: fc.constantFrom("ok", "ok", "ok", "aborted", "error", "killed"),
});
const plan = fc.array(
  fc.record({
    offset: fc.double({ min: 0, max: 200, noNaN: true }),
    execs: fc.array(plannedExec, { minLength: 1, maxLength: 8 }),
  }),
  { minLength: 1, maxLength: 4 },
);

/** A correct history and the report on it, for the properties below to break. */
const history = plan.map((sessions) => {
  const { built, killedAt } = build(sessions);
  return { built, killedAt, ...witnessOf(built) };
});

const pick = <T>(items: readonly T[], index: number): T => items[index % items.length] as T;
const same = (a: { runId: string; pid: number; start: number }, b: Built) =>
  a.runId === b.runId && a.pid === b.pid && a.start === b.start;

describe("checkHistory, properties", () => {
  it("finds nothing wrong in a correct history", () => {
    fc.assert(
      fc.property(history, ({ records, accepted, waits, killedAt }) => {
        expect(describeHistory(checkHistory({ witness: records, accepted, waits, killedAt }))).toEqual([]);
      }),
    );
  });

  it("reports an execution that starts while another of its session runs", () => {
    fc.assert(
      fc.property(history, fc.nat(), fc.double({ min: 0, max: 0.99, noNaN: true }), (h, index, at) => {
        const victim = pick(h.built, index);
        const start = victim.start + at * (victim.end - victim.start);
        const intruder: Built = {
          ...victim,
          runId: "intruder",
          gateway: "g9",
          pid: 9,
          start,
          end: start + 1,
          fate: "ok",
        };
        const { records } = witnessOf([...h.built, intruder]);
        const report = checkHistory({
          witness: records,
          accepted: h.accepted,
          waits: h.waits,
          killedAt: h.killedAt,
        });
        const found = report.overlaps.filter(
          (o) =>
            (same(o.first, victim) && same(o.second, intruder)) ||
            (same(o.first, intruder) && same(o.second, victim)),
        );
        expect(found).toHaveLength(1);
        expect(found[0]?.overlapMs).toBeGreaterThan(0);
        // Nothing else is reported against the correct part of the history.
        expect(
          report.overlaps.every((o) => o.first.runId === "intruder" || o.second.runId === "intruder"),
        ).toBe(true);
      }),
    );
  });

  it("reports a killed execution without its kill time as overlapping every later execution of its session", () => {
    fc.assert(
      fc.property(history, fc.nat(), (h, index) => {
        const killed = h.built.filter((e) => e.fate === "killed");
        fc.pre(killed.length > 0);
        const victim = pick(killed, index);
        const later = h.built.filter((e) => e.sessionKey === victim.sessionKey && e.start > victim.start);
        const { [String(victim.pid)]: _, ...killedAt } = h.killedAt as Record<string, number>;
        const report = checkHistory({ witness: h.records, killedAt });
        expect(report.overlaps.filter((o) => same(o.first, victim)).map((o) => o.second.start)).toEqual(
          later.map((e) => e.start),
        );
        expect(report.overlaps.every((o) => same(o.first, victim))).toBe(true);
      }),
    );
  });

  it("reports an accepted message whose run never ended ok, and only it", () => {
    fc.assert(
      fc.property(history, fc.nat(), fc.boolean(), (h, index, dropped) => {
        fc.pre(h.accepted.length > 0);
        const lost = pick(h.accepted, index);
        // Either its executions never happened, or the ok one ended otherwise.
        const built = dropped
          ? h.built.filter((e) => e.runId !== lost.runId)
          : h.built.map((e) =>
              e.runId === lost.runId && e.fate === "ok" ? { ...e, fate: "error" as const } : e,
            );
        const { records } = witnessOf(built);
        const report = checkHistory({ witness: records, accepted: h.accepted, killedAt: h.killedAt });
        expect(report.losses.map((l) => l.message.runId)).toEqual([lost.runId]);
      }),
    );
  });

  it("reports a delivery posted more than once, with every post", () => {
    fc.assert(
      fc.property(history, fc.nat(), fc.integer({ min: 1, max: 3 }), (h, index, extra) => {
        const posts = h.records.filter((r) => r.kind === "delivery");
        fc.pre(posts.length > 0);
        const twice = pick(posts, index);
        const repeats = Array.from({ length: extra }, (_, i) => ({
          ...twice,
          gateway: `again${i}`,
          at: twice.at + i + 1,
        }));
        const report = checkHistory({ witness: [...h.records, ...repeats], killedAt: h.killedAt });
        expect(report.duplicates.map((d) => [d.deliveryId, d.deliveries.length])).toEqual([
          [twice.deliveryId, extra + 1],
        ]);
      }),
    );
  });

  it("reports a wait that contradicts the run's true outcome, and only it", () => {
    fc.assert(
      fc.property(history, fc.nat(), (h, index) => {
        const wait = pick(h.waits, index);
        const flipped: WaitResult = { ...wait, status: wait.status === "ok" ? "error" : "ok" };
        const runs = h.built.filter((e) => e.runId === wait.runId);
        // Saying error is wrong only when the run's last execution ended ok; saying ok is wrong when none did.
        const wrong = flipped.status === "ok" || runs.at(-1)?.fate === "ok";
        const waits = h.waits.map((w) => (w === wait ? flipped : w));
        const report = checkHistory({ witness: h.records, waits, killedAt: h.killedAt });
        expect(report.wrongWaits.map((w) => w.wait)).toEqual(wrong ? [flipped] : []);
      }),
    );
  });
});

describe("checkHistory, examples", () => {
  const start = (runId: string, gateway: string, at: number, sessionKey = "s", pid = 1): ExecStartRecord => ({
    kind: "exec-start",
    runId,
    sessionKey,
    gateway,
    pid,
    at,
    input: `hi ${runId}`,
  });
  const end = (
    runId: string,
    gateway: string,
    at: number,
    outcome: ExecEndRecord["outcome"] = "ok",
    sessionKey = "s",
    pid = 1,
  ): ExecEndRecord => ({ kind: "exec-end", runId, sessionKey, gateway, pid, at, outcome });

  it("reports two gateways running one session at once, and not executions that only touch", () => {
    const witness = [
      start("r1", "g1", 0),
      start("r2", "g2", 10, "s", 2),
      end("r1", "g1", 15),
      end("r2", "g2", 20, "ok", "s", 2),
    ];
    const report = checkHistory({ witness });
    expect(report.overlaps).toHaveLength(1);
    expect(report.overlaps[0]?.overlapMs).toBe(5);
    expect(report.overlaps[0]?.detail).toBe(
      "session s: run r1 on g1/1 [0.0–15.0 ok] overlaps run r2 on g2/2 [10.0–20.0 ok] by 5.0 ms",
    );
    expect(checkHistory({ witness, toleranceMs: 5 }).overlaps).toEqual([]);
    const touching = [
      start("r1", "g1", 0),
      end("r1", "g1", 10),
      start("r2", "g2", 10, "s", 2),
      end("r2", "g2", 20, "ok", "s", 2),
    ];
    expect(checkHistory({ witness: touching }).overlaps).toEqual([]);
    // Other sessions may run at once.
    const parallel = [
      start("r1", "g1", 0, "a"),
      start("r2", "g1", 1, "b"),
      end("r1", "g1", 10, "ok", "a"),
      end("r2", "g1", 10, "ok", "b"),
    ];
    expect(checkHistory({ witness: parallel }).overlaps).toEqual([]);
  });

  it("ends a killed execution at its process's kill: a re-run after it is fine, one before it overlaps", () => {
    const witness = [start("r1", "g1", 0), start("r1", "g2", 50, "s", 2), end("r1", "g2", 60, "ok", "s", 2)];
    expect(checkHistory({ witness, killedAt: { g1: 40 } }).overlaps).toEqual([]);
    expect(checkHistory({ witness, killedAt: { g1: 55 } }).overlaps.map((o) => o.overlapMs)).toEqual([5]);
    const never = checkHistory({ witness }).overlaps;
    expect(never[0]?.detail).toContain("[0.0–never ended unfinished] overlaps");
    expect(never[0]?.detail).toMatch(/by 10.0 ms$/);
    const bothOpen = checkHistory({ witness: [start("r1", "g1", 0), start("r2", "g2", 5, "s", 2)] }).overlaps;
    expect(bothOpen.map((o) => [o.overlapMs, o.detail.endsWith("ever after")])).toEqual([
      [Number.POSITIVE_INFINITY, true],
    ]);
    // A name restarted: the first kill at or after the execution's start is its end; a pid's own kill wins.
    const restarted = [
      ...witness,
      start("r2", "g1", 70, "s", 3),
      start("r3", "g2", 90, "s", 2),
      end("r3", "g2", 95, "ok", "s", 2),
    ];
    expect(checkHistory({ witness: restarted, killedAt: { g1: [40, 80] } }).overlaps).toEqual([]);
    expect(checkHistory({ witness: restarted, killedAt: { g1: [40, 80], "3": 92 } }).overlaps).toHaveLength(
      1,
    );
  });

  it("counts a message folded into another run of its session as answered", () => {
    const witness = [start("r1", "g1", 0), end("r1", "g1", 10)];
    const accepted = [
      { runId: "r0", sessionKey: "s", text: "hi r1" },
      { runId: "r9", sessionKey: "s", text: "never seen" },
      { runId: "r8", sessionKey: "other", text: "hi r1" },
    ];
    expect(checkHistory({ witness, accepted }).losses.map((l) => l.detail)).toEqual([
      'message "never seen" (run r9, session s) was accepted and never answered: never executed',
      'message "hi r1" (run r8, session other) was accepted and never answered: never executed',
    ]);
  });

  it("judges a wait by what had happened when it answered", () => {
    // A frozen gateway's execution ends ok after another gateway ended the run as an error (its end discarded).
    const witness = [start("r1", "g1", 0), end("r1", "g1", 100)];
    expect(checkHistory({ witness, waits: [{ runId: "r1", status: "error", at: 50 }] }).wrongWaits).toEqual(
      [],
    );
    expect(
      checkHistory({ witness, waits: [{ runId: "r1", status: "error" }] }).wrongWaits.map((w) => w.detail),
    ).toEqual(["wait for run r1 said error, but: run r1 on g1/1 [0.0–100.0 ok]"]);
    expect(checkHistory({ witness, waits: [{ runId: "r1", status: "ok", at: 50 }] }).wrongWaits).toHaveLength(
      1,
    );
    expect(
      checkHistory({ witness, waits: [{ runId: "r1", status: "timeout", at: 150 }] }).wrongWaits,
    ).toHaveLength(1);
    expect(checkHistory({ witness, waits: [{ runId: "r2", status: "ok" }] }).wrongWaits).toHaveLength(1);
  });

  it("pairs each end with its own start, and refuses an end without one", () => {
    const witness = [
      start("r1", "g1", 0),
      end("r1", "g1", 5, "aborted"),
      start("r1", "g1", 6),
      end("r1", "g1", 9),
    ];
    expect(executions(witness).map((e) => [e.start, e.end, e.outcome])).toEqual([
      [0, 5, "aborted"],
      [6, 9, "ok"],
    ]);
    expect(() => executions([end("r1", "g1", 5)])).toThrow("exec-end without its start");
  });

  it("describes every finding on one line", () => {
    const killedAt: KilledAt = {};
    const witness: WitnessRecord[] = [
      start("r1", "g1", 0),
      start("r2", "g2", 1, "s", 2),
      end("r2", "g2", 2, "ok", "s", 2),
      { kind: "delivery", deliveryId: "d", to: "room", text: "x", gateway: "g1", at: 3 },
      { kind: "delivery", deliveryId: "d", to: "room", text: "x", gateway: "g2", at: 4 },
    ];
    const report = checkHistory({
      witness,
      killedAt,
      accepted: [{ runId: "r1", sessionKey: "s", text: "lost" }],
      waits: [{ runId: "r1", status: "ok" }],
    });
    expect(describeHistory(report)).toEqual([
      "overlap: session s: run r1 on g1/1 [0.0–never ended unfinished] overlaps run r2 on g2/2 [1.0–2.0 ok] by 1.0 ms",
      'loss: message "lost" (run r1, session s) was accepted and never answered: run r1 on g1/1 [0.0–never ended unfinished]',
      "duplicate: delivery d (to room) posted 2 times: g1 at 3.0, g2 at 4.0",
      "wrong wait: wait for run r1 said ok, but: run r1 on g1/1 [0.0–never ended unfinished]",
    ]);
  });
});

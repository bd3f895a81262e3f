import type { RunTreeNodePayload, RunTreePayload } from "@sessions/core";
import type { GatewayClient } from "@sessions/gateway-client";
import { createStore, type Store } from "./store.js";

/** What a run and everything under it cost: runs, tokens, cost (when the runner reports one). */
export interface Totals {
  runs: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** One run of a tree with its children (the runs it caused) and the totals of its subtree. */
export interface TreeNode {
  run: RunTreeNodePayload;
  children: TreeNode[];
  /** The run and every run under it. */
  subtree: Totals;
}

const own = (run: RunTreeNodePayload): Totals => ({
  runs: 1,
  inputTokens: run.usage?.inputTokens ?? 0,
  outputTokens: run.usage?.outputTokens ?? 0,
  costUsd: run.usage?.costUsd ?? 0,
});

const add = (a: Totals, b: Totals): Totals => ({
  runs: a.runs + b.runs,
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  costUsd: a.costUsd + b.costUsd,
});

/**
 * The tree of `runs.tree`'s flat list: each run under the run that caused it (oldest first), totals rolled up per
 * subtree. A run whose parent is not in the list (hidden, or cut by the limit) is a root of its own.
 */
export function buildRunTree(runs: readonly RunTreeNodePayload[]): TreeNode[] {
  const nodes = new Map(
    runs.map((run) => [run.runId, { run, children: [] as TreeNode[], subtree: own(run) }]),
  );
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.run.parentRunId === undefined ? undefined : nodes.get(node.run.parentRunId);
    if (parent === undefined || parent === node) roots.push(node);
    else parent.children.push(node);
  }
  const reached = new Set<TreeNode>();
  const reach = (node: TreeNode) => {
    reached.add(node);
    for (const child of node.children) reach(child);
  };
  for (const root of roots) reach(root);
  // Parents that name each other in a circle (never written by a gateway): the first of them becomes a root.
  for (const node of nodes.values()) {
    if (reached.has(node)) continue;
    const parent = nodes.get(node.run.parentRunId as string);
    if (parent !== undefined) parent.children = parent.children.filter((child) => child !== node);
    roots.push(node);
    reach(node);
  }
  const roll = (node: TreeNode): Totals => {
    node.subtree = node.children.reduce((sum, child) => add(sum, roll(child)), own(node.run));
    return node.subtree;
  };
  for (const root of roots) roll(root);
  return roots;
}

/** How long a run took, or has been running (`now`). */
export function durationMs(run: RunTreeNodePayload, now = Date.now()): number | undefined {
  if (run.startedAt === undefined) return undefined;
  return (run.endedAt ?? now) - run.startedAt;
}

/**
 * The tree of `runId`, kept live while it is shown: read with `runs.tree`, and read again shortly after run and
 * delivery events (at most every 250 ms): a new run of the tree announces itself only by its own id.
 */
export function watchRunTree(
  client: GatewayClient,
  runId: string,
): { tree: Store<RunTreePayload | undefined>; error: Store<string | undefined>; stop(): void } {
  const tree = createStore<RunTreePayload | undefined>(undefined);
  const error = createStore<string | undefined>(undefined);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const load = () =>
    client.runs.tree({ runId }).then(
      (next) => {
        if (stopped) return;
        tree.set(next);
        error.set(undefined);
      },
      (e: unknown) => {
        if (!stopped) error.set(e instanceof Error ? e.message : String(e));
      },
    );
  const soon = () => {
    if (stopped || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void load();
    }, 250);
  };
  const offs = ["agent", "chat", "delivery"].map((event) => client.on(event, soon));
  void load();
  return {
    tree,
    error,
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      for (const off of offs) off();
    },
  };
}

/** A tree's budget in one line: each limit as spent of limit (left), e.g. `runs 3 of 5 (2 left)`. */
export function budgetLine(budget: NonNullable<RunTreePayload["budget"]>): string {
  const { limits, spent, left } = budget;
  const usd = (n: number) => `$${Number(n.toFixed(4))}`;
  const parts: string[] = [];
  if (limits.runs !== undefined) parts.push(`runs ${spent.runs} of ${limits.runs} (${left.runs ?? 0} left)`);
  if (limits.tokens !== undefined)
    parts.push(`tokens ${spent.tokens} of ${limits.tokens} (${left.tokens ?? 0} left)`);
  if (limits.costUsd !== undefined)
    parts.push(`cost ${usd(spent.costUsd)} of ${usd(limits.costUsd)} (${usd(left.costUsd ?? 0)} left)`);
  if (limits.deadlineAt !== undefined)
    parts.push(`deadline ${new Date(limits.deadlineAt).toISOString()} (${left.seconds ?? 0} s left)`);
  return parts.join(" · ");
}

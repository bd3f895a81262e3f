import type { RunTreeNodePayload } from "@sessions/core";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ConsoleModel } from "../lib/console-model.js";
import {
  budgetLine,
  buildRunTree,
  durationMs,
  type Totals,
  type TreeNode,
  watchRunTree,
} from "../lib/run-tree.js";
import { useStore } from "../lib/store.js";

const seconds = (ms: number | undefined) =>
  ms === undefined ? "not started" : `${(ms / 1000).toFixed(1)} s`;
const tokens = (t: Pick<Totals, "inputTokens" | "outputTokens">) =>
  `${t.inputTokens} in / ${t.outputTokens} out`;
const cost = (usd: number) => (usd > 0 ? ` · $${usd.toFixed(4)}` : "");

/** What made a run, in a few words. */
function causeText(run: RunTreeNodePayload): string {
  const cause = run.cause;
  if (cause === undefined) return "";
  if (cause.kind === "request") return `by ${cause.method ?? "a request"}`;
  if (cause.kind === "inbound") return `by a message on ${cause.channel ?? "a channel"}`;
  if (cause.kind === "tool") return `by ${cause.tool ?? "a tool"}`;
  if (cause.kind === "follow_up")
    return `after the run's end (${cause.step}${cause.turn ? ` ${cause.turn}` : ""})`;
  return "";
}

function Node({ node, onSelect }: { node: TreeNode; onSelect: (key: string) => void }) {
  const { run, subtree } = node;
  return (
    <li data-run={run.runId} data-kind={run.kind}>
      <div class="tree-run">
        <span class="tag">{run.kind}</span> <span class={`tag state-${run.status}`}>{run.status}</span>{" "}
        <button type="button" class="link" onClick={() => onSelect(run.sessionKey)}>
          {run.sessionKey}
        </button>{" "}
        <span class="muted">{causeText(run)}</span>
      </div>
      <div class="small">
        <code>{run.runId}</code> · <span class="duration">{seconds(durationMs(run))}</span> ·{" "}
        <span class="own-usage">
          {tokens({ inputTokens: run.usage?.inputTokens ?? 0, outputTokens: run.usage?.outputTokens ?? 0 })}
        </span>
        {cost(run.usage?.costUsd ?? 0)}
        {node.children.length > 0 && (
          <span class="subtree-usage">
            {" "}
            · with the {subtree.runs - 1} runs it caused: {tokens(subtree)}
            {cost(subtree.costUsd)}
          </span>
        )}
        {run.error && <span class="error"> · {run.error}</span>}
      </div>
      {run.guards !== undefined && run.guards.length > 0 && (
        <ul class="guards" aria-label={`Refused calls of ${run.runId}`}>
          {run.guards.map((guard, i) => (
            <li key={i}>
              <span class="tag state-failed">{guard.code}</span> {guard.tool} refused (limit {guard.limit}):{" "}
              {guard.chain.join(" → ")}
            </li>
          ))}
        </ul>
      )}
      {run.deliveries.length > 0 && (
        <ul class="deliveries" aria-label={`Deliveries of ${run.runId}`}>
          {run.deliveries.map((d) => (
            <li key={d.id} data-delivery={d.id}>
              <span class="tag">{d.kind}</span> <span class={`tag state-${d.status}`}>{d.status}</span> to{" "}
              {d.channel} {d.to}
              {d.lastError && <span class="muted"> · {d.lastError}</span>}
              {d.receipt && d.receipt.length > 0 && <span class="muted"> · {d.receipt.join(", ")}</span>}
            </li>
          ))}
        </ul>
      )}
      {node.children.length > 0 && (
        <ul>
          {node.children.map((child) => (
            <Node key={child.run.runId} node={child} onSelect={onSelect} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** The tree of one run: who caused whom, durations, usage per run and per subtree, deliveries; live. */
export function RunTreeView({
  model,
  runId,
  onSelect,
  onClose,
}: {
  model: ConsoleModel;
  runId: string;
  onSelect: (key: string) => void;
  onClose: () => void;
}) {
  const watched = useMemo(() => watchRunTree(model.client, runId), [model, runId]);
  useEffect(() => () => watched.stop(), [watched]);
  const tree = useStore(watched.tree);
  const error = useStore(watched.error);
  const roots = useMemo(() => buildRunTree(tree?.runs ?? []), [tree]);
  // Durations of runs under way tick.
  const [, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, []);
  return (
    <section aria-labelledby="tree-title" class="panel run-tree">
      <h2 id="tree-title">Run tree</h2>
      <p class="muted small">
        Every run caused by the request that started <code>{runId}</code>, live.{" "}
        <button type="button" class="link" onClick={onClose}>
          Close
        </button>
      </p>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {tree === undefined && !error && <p class="muted">Loading…</p>}
      {tree?.budget && (
        <p class="small budget" data-budget="">
          Budget: {budgetLine(tree.budget)}
        </p>
      )}
      {tree?.truncated && <p class="muted">Showing the first {tree.runs.length} runs.</p>}
      <ul class="tree" aria-label="Run tree">
        {roots.map((root) => (
          <Node key={root.run.runId} node={root} onSelect={onSelect} />
        ))}
      </ul>
    </section>
  );
}

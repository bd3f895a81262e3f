import type { ListDeliveriesQuery, ListEntriesQuery, SubagentStatus } from "@sessions/gateway";

/** A query whose text depends only on which filters are present; arrays are one `text[]` parameter each. */
export interface BuiltQuery {
  text: string;
  values: unknown[];
}

function builder() {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const where = () => (clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "");
  return { clauses, values, param, where };
}

const int = (n: number | undefined, fallback: number) =>
  Math.max(0, Math.floor(Number.isFinite(n) ? (n as number) : fallback));

/** `sessions.list`: newest first (ties by key) or by key, filters before the limit, keyset or offset paging. */
export function entriesQuery(s: string, query: ListEntriesQuery): BuiltQuery {
  const q = builder();
  if (!query.includeArchived) q.clauses.push("archived = false");
  if (query.kinds !== undefined) q.clauses.push(`kind = ANY(${q.param([...query.kinds])}::text[])`);
  if (query.agentIds !== undefined) q.clauses.push(`agent_id = ANY(${q.param([...query.agentIds])}::text[])`);
  if (query.spawnedBy !== undefined) q.clauses.push(`spawned_by = ${q.param(query.spawnedBy)}`);
  if (query.label !== undefined) q.clauses.push(`label = ${q.param(query.label)}`);
  if (query.updatedSince !== undefined) q.clauses.push(`updated_at >= ${q.param(query.updatedSince)}`);
  if (query.search !== undefined) {
    q.clauses.push(
      `strpos(lower(key || ' ' || coalesce(label, '') || ' ' || coalesce(display_name, '')), ${q.param(query.search.toLowerCase())}) > 0`,
    );
  }
  if (query.after !== undefined) {
    // Written so the index range starts at the cursor (an OR alone would rescan from the newest row).
    const at = q.param(query.after.updatedAt);
    q.clauses.push(`updated_at <= ${at} AND (updated_at < ${at} OR key > ${q.param(query.after.key)})`);
  }
  // `key` is `COLLATE "C"`: byte order, the order of the primary key's index.
  if (query.afterKey !== undefined) q.clauses.push(`key > ${q.param(query.afterKey)}`);
  const order = query.order === "key" ? "key ASC" : "updated_at DESC, key ASC";
  const limit = q.param(int(query.limit, 0));
  const offset = q.param(int(query.offset, 0));
  return {
    text: `SELECT data FROM ${s}.entries ${q.where()} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`,
    values: q.values,
  };
}

export function deliveriesQuery(s: string, query: ListDeliveriesQuery): BuiltQuery {
  const q = builder();
  if (query.sessionKey !== undefined) q.clauses.push(`session_key = ${q.param(query.sessionKey)}`);
  if (query.runId !== undefined) q.clauses.push(`run_id = ${q.param(query.runId)}`);
  if (query.status !== undefined) q.clauses.push(`status = ${q.param(query.status)}`);
  const limit = q.param(int(query.limit, 100));
  return {
    text: `SELECT data, lease_owner, lease_until FROM ${s}.deliveries ${q.where()} ORDER BY created_at DESC, id DESC LIMIT ${limit}`,
    values: q.values,
  };
}

export function subagentsQuery(
  s: string,
  query: { requesterKey?: string | undefined; statuses?: readonly SubagentStatus[] | undefined },
): BuiltQuery {
  const q = builder();
  if (query.requesterKey !== undefined) q.clauses.push(`requester_key = ${q.param(query.requesterKey)}`);
  if (query.statuses !== undefined) q.clauses.push(`status = ANY(${q.param([...query.statuses])}::text[])`);
  return {
    text: `SELECT data FROM ${s}.subagents ${q.where()} ORDER BY created_at ASC, child_key ASC`,
    values: q.values,
  };
}

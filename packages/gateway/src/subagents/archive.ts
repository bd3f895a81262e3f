import type { GatewayContext } from "../context.js";
import { updateEntry } from "../sessions/entries.js";

/** Archives kept children whose `archiveAfterMinutes` has passed, then arms the timer for the next one. */
export async function sweepArchive(ctx: GatewayContext): Promise<void> {
  const now = ctx.clock.now();
  for (const record of await ctx.store.listArchiveDue(now)) {
    const { archiveAt: _archived, ...rest } = record;
    await updateEntry(
      ctx,
      record.childKey,
      (entry) =>
        entry === undefined || entry.archivedAt !== undefined ? undefined : { ...entry, archivedAt: now },
      "archived",
    );
    await ctx.store.putSubagent(rest);
  }
  const next = await ctx.store.nextArchiveAt();
  if (next !== undefined) ctx.timers.archive.schedule(next);
}

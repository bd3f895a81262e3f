import { SessionsError } from "@sessions/core";

/**
 * `channel:123` / `user:456` / `123` → what to send to.
 * @throws SessionsError `invalid_params` (field `to`) when the id is not a Discord snowflake.
 */
export function parseDiscordTarget(to: string): { kind: "channel" | "user"; id: string } {
  const trimmed = String(to ?? "").trim();
  const match = /^(channel|user):(.*)$/.exec(trimmed);
  const kind = (match?.[1] ?? "channel") as "channel" | "user";
  const id = match === null ? trimmed : (match[2] as string);
  if (!/^\d{15,21}$/.test(id)) {
    throw new SessionsError("invalid_params", `Not a Discord channel or user id: ${JSON.stringify(to)}`, {
      field: "to",
    });
  }
  return { kind, id };
}
